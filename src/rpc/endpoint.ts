// What RPC endpoints look like: the handler signature, the `meta` every handler gets, the
// types that derive a typed client from an endpoint class, and the expected-errors marker.
import type { Context } from '../contract/types.js';
import type { RpcMeta } from '../contract/handlers.js';

export type { RpcMeta };

/**
 * An endpoint method. `ctx` is the request context as received (after the server's
 * `serializer.deserializeContext`); oslo-compatible drivers add `client_timeout` to it.
 * The return value (or what the promise resolves to) MUST be JSON-serialisable after the
 * server's `serializer.serializeEntity`; `undefined` is sent as `null`.
 */
export type EndpointMethod<Args = any, Result = unknown, Ctx = any> = (ctx: Ctx, args: Args, meta: RpcMeta) => Result | Promise<Result>;

/** The API of a client that was given no endpoint type: any method, a record of args, an unknown result. */
export type UntypedApi = Record<string, (ctx: any, args?: Record<string, unknown>, meta?: RpcMeta) => unknown>;

type AnyFunction = (...args: any[]) => any;

/**
 * The names a client may call on `Api`: string keys whose values are functions, minus the
 * names no access policy lets through (`_private`, `constructor`) and the reserved `target`.
 */
export type RpcMethodName<Api> = {
  [K in keyof Api & string]: K extends `_${string}` | 'constructor' | 'target' ? never : Api[K] extends AnyFunction ? K : never;
}[keyof Api & string];

/** The `args` parameter type of `Api[M]`; `undefined` when the method takes none. */
export type RpcArgs<Api, M extends keyof Api> = Api[M] extends AnyFunction
  ? Parameters<Api[M]> extends readonly [unknown?]
    ? undefined
    : Parameters<Api[M]> extends readonly [unknown, infer A, ...unknown[]]
    ? A
    : Parameters<Api[M]> extends readonly [unknown, (infer A)?, ...unknown[]]
      ? A | undefined
      : undefined
  : never;

/** What a call of `Api[M]` resolves to. */
export type RpcResult<Api, M extends keyof Api> = Api[M] extends AnyFunction ? Awaited<ReturnType<Api[M]>> : never;

/** An error class (anything `instanceof` can test). */
export type ErrorClass = abstract new (...args: any[]) => unknown;

const EXPECTED = Symbol.for('tidings.rpc.expectedErrors');

/**
 * oslo's `@expected_exceptions`: failures of the listed classes are part of the method's
 * contract (a quota exceeded, a not-found), so the server replies with them and logs them at
 * debug level only. Use as a wrapper, `reserve = expectedExceptions(QuotaExceeded)(fn)`, or
 * as a method decorator, `@expectedExceptions(QuotaExceeded) reserve(ctx, args) {...}`.
 * The function is marked and returned as is (same identity, same `this`).
 * Endpoint classes can instead declare `static expectedErrors = [QuotaExceeded]`.
 */
export function expectedExceptions(...classes: ErrorClass[]): <F extends AnyFunction>(fn: F, _decoratorContext?: unknown) => F {
  return (fn) => {
    const previous = (fn as { [EXPECTED]?: ErrorClass[] })[EXPECTED] ?? [];
    Object.defineProperty(fn, EXPECTED, { value: [...previous, ...classes], configurable: true, enumerable: false });
    return fn;
  };
}

/** True when `error` is expected for `fn` on `endpoint` (its marker or its class's `static expectedErrors`). */
export function isExpectedError(error: unknown, fn: AnyFunction, endpoint: object): boolean {
  const marked = (fn as { [EXPECTED]?: ErrorClass[] })[EXPECTED] ?? [];
  const declared = (endpoint.constructor as { expectedErrors?: unknown } | undefined)?.expectedErrors;
  const classes = Array.isArray(declared) ? [...marked, ...declared] : marked;
  return classes.some((cls) => typeof cls === 'function' && error instanceof cls);
}

export type { Context };
