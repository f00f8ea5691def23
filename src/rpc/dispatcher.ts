// oslo's RPCDispatcher: picks the endpoint for a request by namespace and version, checks the
// access policy, invokes the method, and runs the call-monitor heartbeat while it works.
import { InvalidArgument, NoSuchMethod, UnsupportedVersion } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { toLogger, type LoggerLike } from '../core/logger-adapters.js';
import { NoOpSerializer, type Serializer } from '../core/serializer.js';
import { Target, versionIsCompatible } from '../core/target.js';
import { isThenable } from '../core/types.js';
import type { RpcIncomingMessage } from '../contract/incoming-message.js';
import type { RpcRequest } from '../contract/types.js';
import { DefaultRpcAccessPolicy, expose, lookupEndpointMethod, type RpcAccessPolicy } from './access-policy.js';
import { isExpectedError, type RpcMeta } from './endpoint.js';
import { NEVER_ABORTS } from '../contract/handlers.js';
import { assertJsonSafe, isPlainObject } from '../core/json-check.js';
import { checkMiddleware, composeMiddleware, type Chain, type RpcServerInvocation, type RpcServerMiddleware } from '../middleware/middleware.js';

/** The target of endpoints that declare none: the default namespace, version 1.0. */
export const DEFAULT_ENDPOINT_TARGET = new Target({ version: '1.0' });

/** The method name oslo's `rpc_ping_enabled` adds. */
export const PING_METHOD = 'oslo_rpc_server_ping';

/** The ping argument asking for `pingDetail()` instead of `"pong"` (`RpcClient.discover()` sends it). */
export const PING_DETAIL_ARG = 'detail';

/** Below this call-monitor window (2 s, so a 1 s interval) oslo sends no heartbeats. */
const MIN_HEARTBEAT_INTERVAL_MS = 1000;

/** Options of `new RpcDispatcher()`; RpcServer passes its own. */
export interface RpcDispatcherOptions {
  /** An instance, or (as in oslo) a class with a no-argument constructor. @default new DefaultRpcAccessPolicy() */
  accessPolicy?: RpcAccessPolicy | (new () => RpcAccessPolicy);
  /** @default new NoOpSerializer() */
  serializer?: Serializer<any>;
  /** pino, bunyan, winston and console are adapted. @default silentLogger */
  logger?: LoggerLike;
  /** Adds oslo's ping endpoint (`oslo_rpc_server_ping` → `"pong"`). @default false */
  rpcPingEnabled?: boolean;
  /** Interceptors around each request (RpcServer passes the transport's and its own). @default [] */
  middleware?: readonly RpcServerMiddleware<any>[];
  /** The server's target, as middlewares see it in `inv.target`. @default a target without topic */
  serverTarget?: Target;
  /**
   * What the ping endpoint answers to `{detail: true}` (discovery) instead of `"pong"`; RpcServer
   * passes its name, topic, host, pid and requests in flight. @default undefined (always `"pong"`)
   */
  pingDetail?: () => Record<string, unknown>;
}

/**
 * How one request ended: the serialised result, or the failure to send back. `expected`
 * failures are part of the method's contract and are logged at debug level only.
 */
export type DispatchOutcome =
  | {
      /** The method returned. */
      ok: true;
      /** Its return value after `serializeEntity` (null for undefined). */
      result: unknown;
    }
  | {
      /** The method threw, or no method matched. */
      ok: false;
      /** What was thrown (NoSuchMethod, UnsupportedVersion, or the method's error). */
      failure: unknown;
      /** Declared with `expectedExceptions` / `static expectedErrors`. */
      expected: boolean;
    };

interface BoundEndpoint {
  readonly endpoint: object;
  readonly target: Target;
  /** target.acceptedNamespaces, built once (the getter builds a new array on every read). */
  readonly namespaces: ReadonlyArray<string | undefined>;
  /** versionIsCompatible(target.version, requested), memoised per requested version string. */
  readonly compatible: Map<string, boolean>;
}

/** What one request found to run: the endpoint and its method, or the failure to reply with. */
type Found = { endpoint: object; fn: (...args: any[]) => unknown } | { failure: unknown; expected: boolean };

/** A request's invocation on its way through the middlewares, with what the endpoint step learned. */
interface ServerInvocation extends RpcServerInvocation<any> {
  readonly request: RpcRequest;
  /** Set once the chain reached the endpoint step. */
  reachedEndpoint?: boolean;
  /** Set when the endpoint step failed: its error, and whether that error is expected. */
  endpointFailure?: { error: unknown; expected: boolean };
}

/** Requested version strings remembered per endpoint; they come off the wire, so the memo is bounded. */
const VERSION_MEMO_SIZE = 64;

/** Routes RPC requests to endpoint methods. */
export class RpcDispatcher {
  /** The endpoints in dispatch order (the ping endpoint last when enabled). */
  readonly endpoints: readonly object[];
  private readonly bound: readonly BoundEndpoint[];
  private readonly accessPolicy: RpcAccessPolicy;
  private readonly serializer: Serializer<any>;
  private readonly logger: Logger;
  private readonly serverTarget: Target;
  private readonly chain?: Chain<ServerInvocation, unknown>;

  /** Throws InvalidArgument for a non-object endpoint or a `target` that is not a Target/TargetInit. */
  constructor(endpoints: readonly object[], options: RpcDispatcherOptions = {}) {
    if (!Array.isArray(endpoints)) throw new InvalidArgument('endpoints', 'an array of endpoint objects', endpoints);
    const all = options.rpcPingEnabled ? [...endpoints, createPingEndpoint(options.pingDetail)] : [...endpoints];
    this.bound = all.map((endpoint, i) => {
      const target = endpointTarget(endpoint, i);
      return { endpoint, target, namespaces: target.acceptedNamespaces, compatible: new Map<string, boolean>() };
    });
    this.endpoints = Object.freeze(all);
    const given = options.accessPolicy ?? new DefaultRpcAccessPolicy();
    const policy = typeof given === 'function' ? new given() : given;
    if (typeof (policy as Partial<RpcAccessPolicy>)?.isAllowed !== 'function') {
      throw new InvalidArgument('accessPolicy', 'an object with an isAllowed(endpoint, method, fn) method', policy);
    }
    this.accessPolicy = policy;
    this.serializer = options.serializer ?? new NoOpSerializer();
    this.logger = toLogger(options.logger);
    this.serverTarget = options.serverTarget ?? new Target();
    this.chain = composeMiddleware(checkMiddleware<RpcServerMiddleware<any>>('middleware', options.middleware), (inv: ServerInvocation) => this.invokeFromChain(inv));
  }

  /**
   * Handles one request. Never rejects: every failure becomes a `failure` outcome. `signal` is
   * the endpoint's `meta.signal` (the server's handlerTimeout); heartbeats stop when it aborts.
   */
  dispatch(incoming: RpcIncomingMessage, signal: AbortSignal = NEVER_ABORTS): Promise<DispatchOutcome> {
    const stopWatchdog = this.startWatchdog(incoming, signal);
    if (this.chain !== undefined || stopWatchdog !== NO_WATCHDOG) return this.dispatchWatched(incoming, signal, stopWatchdog);
    // The usual request (no middleware, no heartbeat to stop): no async frame of its own, and an
    // endpoint that returns a plain value gets its outcome without awaiting it.
    try {
      const outcome = this.route(incoming, signal);
      return outcome instanceof Promise ? outcome.catch(failedOutcome) : Promise.resolve(outcome);
    } catch (failure) {
      return Promise.resolve(failedOutcome(failure));
    }
  }

  /** `dispatch` through the middlewares, or with a call-monitor heartbeat to stop at the end. */
  private async dispatchWatched(incoming: RpcIncomingMessage, signal: AbortSignal, stopWatchdog: () => void): Promise<DispatchOutcome> {
    try {
      return await (this.chain ? this.dispatchThroughChain(incoming, this.chain, signal) : this.route(incoming, signal));
    } catch (failure) {
      return failedOutcome(failure);
    } finally {
      stopWatchdog();
    }
  }

  /** The outcome, or its promise when the endpoint returned one. Throws what finding the method or checking the result throws. */
  private route(incoming: RpcIncomingMessage, signal: AbortSignal): DispatchOutcome | Promise<DispatchOutcome> {
    const request = incoming.request;
    const found = this.find(request);
    if (!('fn' in found)) return { ok: false, failure: found.failure, expected: found.expected };
    const ctx = this.serializer.deserializeContext(incoming.ctx);
    return this.invoke(found.endpoint, found.fn, ctx, this.deserializeArgs(ctx, request), metaOf(incoming, signal));
  }

  /** The endpoint method for `request` by namespace, version and access policy. Throws UnsupportedVersion. */
  private find(request: RpcRequest): Found {
    const { method, namespace, version } = request;
    let foundCompatible = false;
    for (const bound of this.bound) {
      const { endpoint } = bound;
      if (!bound.namespaces.includes(namespace) || !isCompatible(bound, version)) continue;
      foundCompatible = true;
      const fn = method === 'target' ? undefined : lookupEndpointMethod(endpoint, method);
      if (!fn || !this.accessPolicy.isAllowed(endpoint, method, fn)) continue;
      return { endpoint, fn };
    }
    if (foundCompatible) return { failure: new NoSuchMethod(method), expected: method.endsWith('_ignore_errors') };
    throw new UnsupportedVersion(version, method);
  }

  private deserializeArgs(ctx: unknown, request: RpcRequest): Record<string, unknown> {
    const args: Record<string, unknown> = {};
    for (const name of Object.keys(request.args)) args[name] = this.serializer.deserializeEntity(ctx, request.args[name]);
    return args;
  }

  /** The endpoint method's outcome: at once for a plain value or a throw, else its promise's. */
  private invoke(endpoint: object, fn: (...args: any[]) => unknown, ctx: unknown, args: Record<string, unknown>, meta: RpcMeta): DispatchOutcome | Promise<DispatchOutcome> {
    let raw: unknown;
    try {
      raw = fn.call(endpoint, ctx, args, meta);
    } catch (failure) {
      return { ok: false, failure, expected: isExpectedError(failure, fn, endpoint) };
    }
    if (!isThenable(raw)) return this.succeeded(ctx, raw);
    // A thenable that is not a promise is adopted as `await` would adopt it.
    return Promise.resolve(raw).then(
      (value) => this.succeeded(ctx, value),
      (failure: unknown): DispatchOutcome => ({ ok: false, failure, expected: isExpectedError(failure, fn, endpoint) }),
    );
  }

  private succeeded(ctx: unknown, raw: unknown): DispatchOutcome {
    const result = this.serializer.serializeEntity(ctx, raw) ?? null;
    assertJsonSafe(result, 'result');
    return { ok: true, result };
  }

  /**
   * The request through the middlewares. A failure the endpoint step produced keeps its
   * `expected` flag; one a middleware threw before the endpoint ran (a refusal) counts as
   * expected; one a middleware made of the endpoint's failure or result afterwards does not.
   */
  private async dispatchThroughChain(incoming: RpcIncomingMessage, chain: Chain<ServerInvocation, unknown>, signal: AbortSignal): Promise<DispatchOutcome> {
    const request = incoming.request;
    const ctx = this.serializer.deserializeContext(incoming.ctx);
    const inv: ServerInvocation = {
      target: this.serverTarget,
      method: request.method,
      namespace: request.namespace,
      version: request.version,
      messageId: incoming.msgId,
      expectsReply: incoming.expectsReply,
      callId: incoming.callId,
      wireContext: incoming.ctx,
      meta: metaOf(incoming, signal),
      ctx,
      args: this.deserializeArgs(ctx, request),
      request,
    };
    let raw: unknown;
    try {
      raw = await chain(inv);
    } catch (failure) {
      const endpoint = inv.endpointFailure;
      const expected = !inv.reachedEndpoint || (endpoint !== undefined && failure === endpoint.error && endpoint.expected);
      return { ok: false, failure, expected };
    }
    return this.succeeded(inv.ctx, raw);
  }

  /** The innermost step of the chain: the endpoint method with the context and arguments the middlewares left. */
  private async invokeFromChain(inv: ServerInvocation): Promise<unknown> {
    inv.reachedEndpoint = true;
    let found: Found;
    try {
      found = this.find(inv.request);
    } catch (error) {
      inv.endpointFailure = { error, expected: false };
      throw error;
    }
    if (!('fn' in found)) {
      inv.endpointFailure = { error: found.failure, expected: found.expected };
      throw found.failure;
    }
    try {
      return await found.fn.call(found.endpoint, inv.ctx, inv.args, inv.meta);
    } catch (error) {
      inv.endpointFailure = { error, expected: isExpectedError(error, found.fn, found.endpoint) };
      throw error;
    }
  }

  /** oslo `_watchdog`: a heartbeat every floor(seconds)/2 s while the endpoint runs. */
  private startWatchdog(incoming: RpcIncomingMessage, signal: AbortSignal): () => void {
    const windowMs = incoming.callMonitorTimeout;
    if (!incoming.expectsReply || windowMs === undefined || windowMs === null) return NO_WATCHDOG;
    const intervalMs = Math.floor(windowMs / 1000) * 500;
    if (!(intervalMs >= MIN_HEARTBEAT_INTERVAL_MS)) {
      this.logger.warn('client call-monitor timeout too small for heartbeats; sending none', { callMonitorTimeout: windowMs, messageId: incoming.msgId });
      return NO_WATCHDOG;
    }
    const timer = setInterval(() => {
      this.logger.debug('sending call-monitor heartbeat', { messageId: incoming.msgId, intervalMs });
      void incoming.heartbeat().catch(() => {});
    }, intervalMs);
    timer.unref?.();
    const stop = (): void => clearInterval(timer);
    // The caller was answered at the deadline: a handler left running must not heartbeat forever.
    if (signal !== NEVER_ABORTS) signal.addEventListener('abort', stop, { once: true });
    return stop;
  }
}

/** versionIsCompatible of the endpoint's version and `requested`, without re-parsing both per request. */
function isCompatible(bound: BoundEndpoint, requested: string): boolean {
  let ok = bound.compatible.get(requested);
  if (ok === undefined) {
    ok = versionIsCompatible(bound.target.version, requested);
    if (bound.compatible.size >= VERSION_MEMO_SIZE) bound.compatible.clear();
    bound.compatible.set(requested, ok);
  }
  return ok;
}

const NO_WATCHDOG = (): void => {};

/** What a throw outside the endpoint method (finding it, checking its result) dispatches as. */
function failedOutcome(failure: unknown): DispatchOutcome {
  return { ok: false, failure, expected: false };
}


function metaOf(incoming: RpcIncomingMessage, signal: AbortSignal): RpcMeta {
  const request = incoming.request;
  return {
    messageId: incoming.msgId,
    method: request.method,
    namespace: request.namespace,
    version: request.version,
    signal,
    // A bound method, not an arrow: under tsx (the bench, the tests) every arrow created in an
    // object literal is named with Object.defineProperty, once per request.
    unwrap: incoming.unwrap.bind(incoming),
  };
}

function endpointTarget(endpoint: unknown, index: number): Target {
  if (endpoint === null || typeof endpoint !== 'object') throw new InvalidArgument(`endpoints[${index}]`, 'an object', endpoint);
  const target = (endpoint as { target?: unknown }).target;
  if (target === undefined || target === null) return DEFAULT_ENDPOINT_TARGET;
  if (target instanceof Target) return target;
  if (isPlainObject(target)) return Target.from(target);
  throw new InvalidArgument(
    `endpoints[${index}].target`,
    'a Target or TargetInit ("target" is reserved for namespace and version; do not name a method target)',
    target,
  );
}

/** oslo's ping (`"pong"`, whatever the arguments, as oslo's `**kwargs`), with the detail discovery asks for. */
function createPingEndpoint(detail?: () => Record<string, unknown>): object {
  return { [PING_METHOD]: expose((_ctx: unknown, args?: Record<string, unknown>) => (detail !== undefined && args?.[PING_DETAIL_ARG] === true ? detail() : 'pong')) };
}
