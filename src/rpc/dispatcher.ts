// oslo's RPCDispatcher: picks the endpoint for a request by namespace and version, checks the
// access policy, invokes the method, and runs the call-monitor heartbeat while it works.
import { InvalidArgument, NoSuchMethod, UnsupportedVersion } from '../errors.js';
import type { Logger } from '../logger.js';
import { toLogger, type LoggerLike } from '../logger-adapters.js';
import { NoOpSerializer, type Serializer } from '../serializer.js';
import { Target, versionIsCompatible } from '../target.js';
import type { RpcIncomingMessage } from '../driver/incoming-message.js';
import type { RpcRequest } from '../driver/types.js';
import { DefaultRpcAccessPolicy, expose, lookupEndpointMethod, type RpcAccessPolicy } from './access-policy.js';
import { isExpectedError, type RpcMeta } from './endpoint.js';
import { assertJsonSafe, isPlainObject } from '../json-check.js';

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
  }

  /** Handles one request. Never rejects: every failure becomes a `failure` outcome. */
  async dispatch(incoming: RpcIncomingMessage): Promise<DispatchOutcome> {
    const stopWatchdog = this.startWatchdog(incoming);
    try {
      return await this.route(incoming);
    } catch (failure) {
      return { ok: false, failure, expected: false };
    } finally {
      stopWatchdog();
    }
  }

  /** Not async itself: the endpoint's promise passes straight through (a throw here is caught by dispatch). */
  private route(incoming: RpcIncomingMessage): Promise<DispatchOutcome> {
    const request = incoming.request;
    const { method, namespace, version } = request;
    let foundCompatible = false;
    for (const bound of this.bound) {
      const { endpoint } = bound;
      if (!bound.namespaces.includes(namespace) || !isCompatible(bound, version)) continue;
      foundCompatible = true;
      const fn = method === 'target' ? undefined : lookupEndpointMethod(endpoint, method);
      if (!fn || !this.accessPolicy.isAllowed(endpoint, method, fn)) continue;
      return this.invoke(incoming, endpoint, fn, request);
    }
    if (foundCompatible) return Promise.resolve({ ok: false, failure: new NoSuchMethod(method), expected: method.endsWith('_ignore_errors') });
    throw new UnsupportedVersion(version, method);
  }

  private async invoke(
    incoming: RpcIncomingMessage,
    endpoint: object,
    fn: (...args: any[]) => unknown,
    request: RpcRequest,
  ): Promise<DispatchOutcome> {
    const ctx = this.serializer.deserializeContext(incoming.ctx);
    const args: Record<string, unknown> = {};
    for (const name of Object.keys(request.args)) args[name] = this.serializer.deserializeEntity(ctx, request.args[name]);
    const meta: RpcMeta = {
      messageId: incoming.msgId,
      method: request.method,
      namespace: request.namespace,
      version: request.version,
      unwrap: () => incoming.unwrap(),
    };
    let raw: unknown;
    try {
      raw = await fn.call(endpoint, ctx, args, meta);
    } catch (failure) {
      return { ok: false, failure, expected: isExpectedError(failure, fn, endpoint) };
    }
    const result = this.serializer.serializeEntity(ctx, raw) ?? null;
    assertJsonSafe(result, 'result');
    return { ok: true, result };
  }

  /** oslo `_watchdog`: a heartbeat every floor(seconds)/2 s while the endpoint runs. */
  private startWatchdog(incoming: RpcIncomingMessage): () => void {
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
    return () => clearInterval(timer);
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
