// Interceptors around RPC calls, RPC dispatch, notification sends and notification handlers:
// one hook shape and one onion runner for all four, composed once so an empty list costs nothing.
import { InvalidArgument } from '../core/errors.js';
import type { RpcRetryPolicy } from '../core/retry.js';
import type { Target } from '../core/target.js';
import type { Context, Priority } from '../contract/types.js';
import type { RpcMeta } from '../contract/handlers.js';
import type { NotificationBatchItem, NotificationHandlerResult } from '../contract/handlers.js';

/**
 * Hooks around one operation. Middlewares run as an onion: for `[a, b]`, `a.before`, `b.before`,
 * the operation, `b.after`, `a.after`; a failure travels outwards through `b.onError`, `a.onError`.
 *
 * - `before(inv)` may change the invocation's mutable fields (context, arguments, payload, timeout)
 *   or refuse the operation by throwing (a typed error such as `InvalidArgument` or your own class).
 * - `after(inv, result)` sees the result; returning anything but `undefined` replaces it.
 * - `onError(inv, error)` sees a failure of what runs inside it (inner middlewares and the operation,
 *   not its own `before`); throwing replaces the error, returning anything but `undefined` recovers
 *   with that value as the result, returning `undefined` lets the error through.
 * - `wrap(inv, next)` runs around this middleware's own `before`/operation/`after` (for spans and
 *   async context): it MUST call `next()` once and return (or transform) its promise.
 */
export interface Middleware<Inv, Result> {
  /** Shown in errors about this middleware. */
  readonly name?: string;
  /** Runs first; may change `inv` or throw to refuse. */
  before?(inv: Inv): void | Promise<void>;
  /** Runs after success; a non-`undefined` return value replaces the result. */
  after?(inv: Inv, result: Result): Result | void | Promise<Result | void>;
  /** Runs on failure inside this middleware; throw to map, return a value to recover. */
  onError?(inv: Inv, error: unknown): Result | void | Promise<Result | void>;
  /** Runs around everything else of this middleware. */
  wrap?(inv: Inv, next: () => Promise<Result>): Promise<Result>;
}

/** What an RPC client middleware sees of one `call` or `cast`. */
export interface RpcClientInvocation<Ctx = Context> {
  /** `call` waits for a reply; `cast` does not. */
  readonly kind: 'call' | 'cast';
  /** Where the request goes. */
  readonly target: Target;
  /** The remote method. */
  readonly method: string;
  /** The request context as the caller passed it (before the serializer); may be replaced. */
  ctx: Ctx;
  /** Keyword arguments; may be replaced. */
  args: Record<string, unknown> | undefined;
  /** The reply deadline of a `call`, ms (undefined for a cast); may be changed, e.g. per method. */
  timeout: number | undefined;
  /** The caller's abort signal, if any. */
  readonly signal: AbortSignal | undefined;
  /**
   * The call's `idempotent` option (undefined for a cast, or when the caller did not say); a
   * middleware may set it, e.g. per method, to declare the call idempotent for the retry policy.
   */
  idempotent: boolean | undefined;
  /** The call's own `retryPolicy` option, if any (false = no retries). */
  readonly retryPolicy: RpcRetryPolicy | false | undefined;
}

/** What an RPC server middleware sees of one request. */
export interface RpcServerInvocation<Ctx = Context> {
  /** The server's target (its topic and server name). */
  readonly target: Target;
  /** The method asked for. */
  readonly method: string;
  /** The namespace asked for; undefined = the default namespace. */
  readonly namespace: string | undefined;
  /** The version asked for (`'1.0'` when none was sent). */
  readonly version: string;
  /** The request's unique id, when the driver knows it. */
  readonly messageId: string | undefined;
  /** For a call: its `_msg_id`, the id its reply carries (oslo's conversation id); undefined for a cast. */
  readonly callId?: string;
  /** True for a call, false for a cast. */
  readonly expectsReply: boolean;
  /** The context exactly as it arrived on the wire (before the serializer). */
  readonly wireContext: Readonly<Context>;
  /** The `meta` the endpoint method will get. */
  readonly meta: RpcMeta;
  /** The context after the serializer's `deserializeContext`; may be replaced. */
  ctx: Ctx;
  /** The arguments after `deserializeEntity`; may be replaced. */
  args: Record<string, unknown>;
}

/** What a Notifier middleware sees of one notification. */
export interface NotifierInvocation<Ctx = Context> {
  /** e.g. `compute.instance.create.end`. */
  readonly eventType: string;
  /** Lower-case priority. */
  readonly priority: Priority;
  /** The notifier's publisher id. */
  readonly publisherId: string | null;
  /** The notifier's topics (the notification goes to `<topic>.<priority>` for each). */
  readonly topics?: readonly string[];
  /** The context as the caller passed it (before the serializer); may be replaced. */
  ctx: Ctx;
  /** The payload (before the serializer); may be replaced. */
  payload: unknown;
}

/** What a notification listener middleware sees of one handler run. */
export interface ListenerInvocation<Ctx = Context> {
  /** The endpoint's name (its class name, or `endpoints[i]`). */
  readonly endpoint: string;
  /** The priority handled. */
  readonly priority: Priority;
  /** True for a batch listener: `items` is the batch the method gets. */
  readonly batch: boolean;
  /** The notification (one item) or the batch; items' `ctx` and `payload` may be changed. */
  readonly items: NotificationBatchItem<Ctx>[];
}

/** Intercepts `RpcClient.call()` / `cast()`; the result is the call's (deserialised) result, undefined for a cast. */
export type RpcClientMiddleware<Ctx = Context> = Middleware<RpcClientInvocation<Ctx>, unknown>;
/** Intercepts requests on an RpcServer; the result is the endpoint method's return value. Errors go back to the caller. */
export type RpcServerMiddleware<Ctx = Context> = Middleware<RpcServerInvocation<Ctx>, unknown>;
/** Intercepts `Notifier` sends; there is no result (void). */
export type NotifierMiddleware<Ctx = Context> = Middleware<NotifierInvocation<Ctx>, void>;
/** Intercepts notification handlers; the result is the handler's (HANDLED, REQUEUE or undefined). */
export type ListenerMiddleware<Ctx = Context> = Middleware<ListenerInvocation<Ctx>, NotificationHandlerResult>;

/** Middlewares for everything created on a transport; they run outside each façade's own. */
export interface TransportMiddleware {
  /** Around every `call`/`cast` of clients on the transport. */
  rpcClient?: readonly RpcClientMiddleware<any>[];
  /** Around every request of servers on the transport. */
  rpcServer?: readonly RpcServerMiddleware<any>[];
  /** Around every notification of Notifiers on the transport. */
  notifier?: readonly NotifierMiddleware<any>[];
  /** Around every handler of listeners on the transport. */
  listener?: readonly ListenerMiddleware<any>[];
}

/** One operation behind its middlewares. */
export type Chain<Inv, Result> = (inv: Inv) => Promise<Result>;

const HOOKS = ['before', 'after', 'onError', 'wrap'] as const;

/**
 * Checks a middleware list (from options: `field` names it in errors) and returns a frozen copy.
 * @throws InvalidArgument when it is not an array of objects with at least one hook, or a hook is not a function.
 */
export function checkMiddleware<M extends Middleware<any, any>>(field: string, list: unknown): readonly M[] {
  if (list === undefined) return EMPTY;
  if (!Array.isArray(list)) throw new InvalidArgument(field, 'an array of middlewares ({before?, after?, onError?, wrap?})', list);
  list.forEach((m: unknown, i) => {
    const at = `${field}[${i}]`;
    if (m === null || typeof m !== 'object') throw new InvalidArgument(at, 'an object with before, after, onError or wrap', m);
    const hooks = HOOKS.filter((h) => (m as Record<string, unknown>)[h] !== undefined);
    if (hooks.length === 0) throw new InvalidArgument(at, 'an object with before, after, onError or wrap', m);
    for (const h of hooks) if (typeof (m as Record<string, unknown>)[h] !== 'function') throw new InvalidArgument(`${at}.${h}`, 'a function', (m as Record<string, unknown>)[h]);
  });
  return Object.freeze([...list] as M[]);
}

const EMPTY: readonly never[] = Object.freeze([]);

/**
 * Composes `middlewares` around `operation` once. Returns undefined for an empty list, so a
 * façade keeps its direct path (and allocates nothing) when no middleware is configured.
 */
export function composeMiddleware<Inv, Result>(middlewares: readonly Middleware<Inv, Result>[], operation: Chain<Inv, Result>): Chain<Inv, Result> | undefined {
  if (middlewares.length === 0) return undefined;
  let chain = operation;
  for (let i = middlewares.length - 1; i >= 0; i--) chain = layer(middlewares[i], chain);
  return chain;
}

function layer<Inv, Result>(m: Middleware<Inv, Result>, inner: Chain<Inv, Result>): Chain<Inv, Result> {
  const run = async (inv: Inv): Promise<Result> => {
    if (m.before) await m.before(inv);
    let result: Result;
    try {
      result = await inner(inv);
    } catch (error) {
      if (!m.onError) throw error;
      const recovered = await m.onError(inv, error);
      if (recovered === undefined) throw error;
      result = recovered;
    }
    if (m.after) {
      const replaced = await m.after(inv, result);
      if (replaced !== undefined) result = replaced;
    }
    return result;
  };
  if (!m.wrap) return run;
  return (inv) => m.wrap!(inv, () => run(inv));
}

/** The transport's middlewares of one kind followed by a façade's own (checked). */
export function middlewareFor<K extends keyof TransportMiddleware>(
  transport: { readonly middleware?: TransportMiddleware },
  kind: K,
  own: unknown,
): NonNullable<TransportMiddleware[K]> {
  const fromTransport = (transport.middleware?.[kind] ?? EMPTY) as NonNullable<TransportMiddleware[K]>;
  const mine = checkMiddleware('middleware', own) as NonNullable<TransportMiddleware[K]>;
  if (mine.length === 0) return fromTransport;
  if (fromTransport.length === 0) return mine;
  return Object.freeze([...fromTransport, ...mine]) as unknown as NonNullable<TransportMiddleware[K]>;
}

/** Checks `TransportOptions.middleware` and returns it frozen with every kind present. */
export function checkTransportMiddleware(value: unknown): Required<TransportMiddleware> {
  if (value !== undefined && (value === null || typeof value !== 'object' || Array.isArray(value))) {
    throw new InvalidArgument('middleware', 'an object {rpcClient?, rpcServer?, notifier?, listener?}', value);
  }
  const given = (value ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (!['rpcClient', 'rpcServer', 'notifier', 'listener'].includes(key)) throw new InvalidArgument(`middleware.${key}`, 'one of rpcClient, rpcServer, notifier, listener', key);
  }
  return Object.freeze({
    rpcClient: checkMiddleware(`middleware.rpcClient`, given.rpcClient),
    rpcServer: checkMiddleware(`middleware.rpcServer`, given.rpcServer),
    notifier: checkMiddleware(`middleware.notifier`, given.notifier),
    listener: checkMiddleware(`middleware.listener`, given.listener),
  });
}
