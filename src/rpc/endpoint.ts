// What RPC endpoints look like: the handler signature, the `meta` every handler gets, the
// types that derive a typed client from an endpoint class, and the expected-errors marker.
import type { Context } from '../contract/types.js';
import type { RpcMeta } from '../contract/handlers.js';
import type { Jsonify, JsonifyResult } from '../core/jsonify.js';

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

/**
 * The mark of an Api type whose client checks arguments and parses results with schemas
 * (`RpcContractApi`): its types are what the client sends and gets, JSON or not. Type only.
 */
export declare const SCHEMA_TYPED: unique symbol;

/** An Api type whose client checks its arguments and parses its results with schemas (`RpcContractApi` is one). */
export interface SchemaTypedApi {
  /** Type-only mark: no value has it. */
  readonly [SCHEMA_TYPED]: true;
}

/**
 * What a client passes as `args` to `Api[M]`: the handler's `args` parameter type as JSON carries it
 * ({@link Jsonify}: a `Date` member is the string the handler receives); `undefined` when the method
 * takes none. For a contract's Api, the args schema's input as it is.
 */
export type RpcArgs<Api, M extends keyof Api> = Api extends SchemaTypedApi ? DeclaredArgs<Api, M> : Jsonify<DeclaredArgs<Api, M>>;

/** The `args` parameter type of `Api[M]` as declared; `undefined` when the method takes none. */
type DeclaredArgs<Api, M extends keyof Api> = Api[M] extends AnyFunction
  ? Parameters<Api[M]> extends readonly [unknown?]
    ? undefined
    : Parameters<Api[M]> extends readonly [unknown, infer A, ...unknown[]]
    ? A
    : Parameters<Api[M]> extends readonly [unknown, (infer A)?, ...unknown[]]
      ? A | undefined
      : undefined
  : never;

/**
 * What a call of `Api[M]` resolves to: the handler's awaited return type as JSON carries it
 * ({@link JsonifyResult}: a `Date` arrives as a string, `undefined` as `null`, a `Map` is refused).
 * For a contract's Api, the result schema's output, which the client parses.
 */
export type RpcResult<Api, M extends keyof Api> = Api[M] extends AnyFunction ? (Api extends SchemaTypedApi ? Awaited<ReturnType<Api[M]>> : JsonifyResult<Awaited<ReturnType<Api[M]>>>) : never;

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
