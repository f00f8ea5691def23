// The RPC client (oslo RPCClient / _CallContext): validates everything locally, builds the
// `{method, args, namespace?, version?}` message and hands it to the driver. Its options: client-options.ts.
import { InvalidArgument, RPCVersionCapError } from '../core/errors.js';
import { resolveRpcRetryPolicy, throwIfAborted, type ResolvedRpcRetryPolicy, type RpcRetryPolicy } from '../core/retry.js';
import { checkPositiveMs } from '../core/checks.js';
import { Target, validateSendTarget, versionIsCompatible, type TargetInit } from '../core/target.js';
import type { Transport } from '../transport.js';
import type { SendOptions } from '../contract/base-driver.js';
import type { Context, DriverMessage } from '../contract/types.js';
import type { RpcArgs, RpcMethodName, RpcResult, UntypedApi } from './endpoint.js';
import { traceRpc, type RpcTraceContext } from './instrumentation.js';
import { assertJsonSafe, isPlainObject } from '../core/json-check.js';
import { composeMiddleware, middlewareFor, type Chain, type RpcClientInvocation } from '../middleware/middleware.js';
import { validateWith } from '../core/schema.js';
import { contractMethod, type RpcContract, type RpcContractApi } from './contract.js';
import { discoverServers, pingServer, RPC_DISCOVER_DEFAULTS, type DiscoveredServer, type RpcDiscoverOptions, type RpcPingOptions } from './discovery.js';
import type { EventEmitter } from 'eventemitter3';
import type { RpcBulkheadState } from './bulkhead.js';
import { EMPTY_OPTIONS, resolveOptions, type ResolvedOptions, type RpcCallOptions, type RpcCastOptions, type RpcClientOptions, type RpcPrepareOptions } from './client-options.js';
import { ClientResilience, destinationOf, retryPolicyOfCall, type RpcClientEvents } from './resilience.js';
import { waitForServersOf, watchServersOf, type RpcWaitForServersOptions, type RpcWatchServersOptions, type ServerWatch } from './server-watch.js';

export { RPC_CLIENT_DEFAULTS, type RpcCallOptions, type RpcCastOptions, type RpcClientOptions, type RpcPrepareOptions } from './client-options.js';

interface PreparedSend {
  ctx: Context;
  message: DriverMessage & { method: string };
}

type CallRest<Api, M extends keyof Api, O> = undefined extends RpcArgs<Api, M> ? [args?: RpcArgs<Api, M>, options?: O] : [args: RpcArgs<Api, M>, options?: O];

/** What a call carries about its retries, through the middlewares. */
interface RetryChoice {
  idempotent: boolean | undefined;
  retryPolicy: RpcRetryPolicy | false | undefined;
}

const TARGET_KEYS = ['exchange', 'topic', 'server', 'fanout', 'namespace', 'version'] as const;

/**
 * Sends RPC requests to a Target. Cheap and immutable: `prepare()` returns a new client.
 * `Api` types method names, args and results; the untyped default accepts anything.
 */
export class RpcClient<Api = UntypedApi, Ctx = Context> {
  /** Where requests go. */
  readonly target: Target;
  private readonly options: ResolvedOptions;
  /** The operation behind the transport's and this client's middlewares; undefined when there are none. */
  private readonly chain?: Chain<RpcClientInvocation<any>, unknown>;
  /** The client's retry policy, checked; undefined = none. */
  private readonly retryPolicy?: ResolvedRpcRetryPolicy;
  /** Breakers, bulkhead and events; undefined until one of them is configured or asked for. */
  private resilience?: ClientResilience;

  /** Prefer `getRpcClient()`. Throws InvalidArgument/NotSupportedError for bad options. */
  constructor(
    /** The transport requests are sent through. */
    readonly transport: Transport,
    target: Target | TargetInit,
    options: RpcClientOptions = {},
    /** @internal A `prepare()`d client's share of its parent's breakers, bulkhead and events. */
    shared?: ClientResilience,
  ) {
    if (!transport || typeof transport !== 'object' || !transport.driver) throw new InvalidArgument('transport', 'a Transport from getRpcTransport()', transport);
    this.target = Target.from(target);
    this.options = resolveOptions(options);
    if (this.options.retryPolicy !== undefined) this.retryPolicy = resolveRpcRetryPolicy('retryPolicy', this.options.retryPolicy);
    this.resilience = shared ?? this.newResilience();
    if (this.target.fanout) transport.driver.requireFeatures({ fanout: true });
    if (this.options.callMonitorTimeout !== undefined) transport.driver.requireFeatures({ callMonitor: true });
    this.chain = composeMiddleware(middlewareFor(transport, 'rpcClient', this.options.middleware), (inv) => this.invoke(inv));
  }

  /** Reply deadline of `call`, ms. */
  get timeout(): number {
    return this.options.timeout;
  }
  /** Connection retries per send; undefined = forever. */
  get retry(): number | undefined {
    return this.options.retry;
  }
  /** Highest version this client may send; undefined = no cap. */
  get versionCap(): string | undefined {
    return this.options.versionCap;
  }
  /** Call-monitor window, ms; undefined = none. */
  get callMonitorTimeout(): number | undefined {
    return this.options.callMonitorTimeout;
  }

  /**
   * Typed events of the client's resilience features: `retry`, `circuitOpened`,
   * `circuitHalfOpened`, `circuitClosed`, `bulkheadFull`. Shared with the clients `prepare()`d
   * from this one (and from them) after it was first read or a feature was configured.
   */
  get events(): EventEmitter<RpcClientEvents> {
    return (this.resilience ??= this.newResilience(true)!).events;
  }

  /** The client's bulkhead: calls in flight and waiting; undefined without one. */
  get bulkhead(): RpcBulkheadState | undefined {
    return this.resilience?.bulkhead;
  }

  /** The state of the target's circuit breaker; undefined without one. */
  get circuitState(): 'closed' | 'open' | 'half-open' | undefined {
    return this.resilience?.breaker(destinationOf(this.target))?.state;
  }

  private newResilience(always = false): ClientResilience | undefined {
    return ClientResilience.create(this.transport, this.options, always);
  }

  /** A client with some target fields or options replaced; the rest is inherited. */
  prepare(overrides: RpcPrepareOptions): RpcClient<Api, Ctx> {
    if (!isPlainObject(overrides)) throw new InvalidArgument('overrides', 'an object', overrides);
    const target: Record<string, unknown> = { ...this.target.toJSON() };
    const options: Record<string, unknown> = { ...this.options };
    for (const [key, value] of Object.entries(overrides)) {
      if (value === undefined) continue;
      const into = (TARGET_KEYS as readonly string[]).includes(key) ? target : key in EMPTY_OPTIONS ? options : undefined;
      if (!into) throw new InvalidArgument(`prepare.${key}`, `one of ${[...TARGET_KEYS, ...Object.keys(EMPTY_OPTIONS)].join(', ')}`, key);
      if (value === null) delete into[key];
      else into[key] = value;
    }
    const own = overrides.circuitBreaker !== undefined || overrides.bulkhead !== undefined;
    if (!own) this.resilience ??= this.newResilience();
    return new RpcClient<Api, Ctx>(this.transport, target as TargetInit, options as RpcClientOptions, own ? undefined : this.resilience);
  }

  /** oslo `can_send_version`: is `version` (default: the target's) within the version cap? */
  canSendVersion(version: string | undefined = this.target.version): boolean {
    return versionIsCompatible(this.options.versionCap, version);
  }

  /**
   * Invokes `method` and resolves with its (deserialised) result. Rejects before sending with
   * InvalidTarget, InvalidArgument or RPCVersionCapError; afterwards with the remote error
   * (rebuilt or RemoteError), MessagingTimeout, MessageDeliveryFailure or AbortError.
   */
  async call<M extends RpcMethodName<Api>>(ctx: Ctx, method: M, ...rest: CallRest<Api, M, RpcCallOptions>): Promise<RpcResult<Api, M>> {
    const [args, callOptions = {}] = rest as [unknown, RpcCallOptions?];
    const timeout = callOptions.timeout === undefined ? this.options.timeout : checkPositiveMs('timeout', callOptions.timeout);
    const { idempotent, retryPolicy } = callOptions;
    if (idempotent !== undefined && typeof idempotent !== 'boolean') throw new InvalidArgument('idempotent', 'a boolean', idempotent);
    if (this.chain) {
      checkMethodAndArgs(method, args);
      return (await this.chain({ kind: 'call', target: this.target, method, ctx, args, timeout, signal: callOptions.signal, idempotent, retryPolicy })) as RpcResult<Api, M>;
    }
    return (await this.sendCall(ctx, method, args, timeout, callOptions.signal, idempotent === undefined && retryPolicy === undefined ? undefined : { idempotent, retryPolicy })) as RpcResult<Api, M>;
  }

  /** Sends `method` without waiting for a result; resolves once the broker accepted it. */
  async cast<M extends RpcMethodName<Api>>(ctx: Ctx, method: M, ...rest: CallRest<Api, M, RpcCastOptions>): Promise<void> {
    const [args, castOptions = {}] = rest as [unknown, RpcCastOptions?];
    if (this.chain) {
      checkMethodAndArgs(method, args);
      await this.chain({ kind: 'cast', target: this.target, method, ctx, args, timeout: undefined, signal: castOptions.signal, idempotent: undefined, retryPolicy: undefined });
      return;
    }
    await this.sendCast(ctx, method, args, castOptions.signal);
  }

  private async sendCall(ctx: Ctx, method: unknown, args: unknown, timeout: number, signal: AbortSignal | undefined, choice: RetryChoice | undefined): Promise<unknown> {
    const schemas = this.options.contract && typeof method === 'string' ? contractMethod(this.options.contract, method) : undefined;
    if (schemas?.args) await validateWith(schemas.args, args, 'args');
    const policy = choice === undefined && this.retryPolicy === undefined ? undefined : this.policyFor(method as string, choice);
    const prepared = this.prepareSend(ctx, method, args, true);
    throwIfAborted(signal);
    const sendOptions = { waitForReply: true, timeout, callMonitorTimeout: this.options.callMonitorTimeout, retry: this.options.retry, signal };
    const result = policy === undefined && this.resilience === undefined ? await traceRpc('call', this, this.sendPrepared, prepared, sendOptions, this.traceContext) : await this.sendResilient(prepared, sendOptions, policy);
    const value = this.options.serializer.deserializeEntity(ctx, result);
    return schemas?.result ? validateWith(schemas.result, value, 'result') : value;
  }

  private async sendCast(ctx: Ctx, method: unknown, args: unknown, signal: AbortSignal | undefined): Promise<void> {
    const schemas = this.options.contract && typeof method === 'string' ? contractMethod(this.options.contract, method) : undefined;
    if (schemas?.args) await validateWith(schemas.args, args, 'args');
    const prepared = this.prepareSend(ctx, method, args, false);
    throwIfAborted(signal);
    const sendOptions = { waitForReply: false, retry: this.options.retry, signal };
    await traceRpc('cast', this, this.sendPrepared, prepared, sendOptions, this.traceContext);
  }

  /**
   * A call through the retry policy, the breaker and the bulkhead. Each attempt is a new request:
   * the driver encodes a new `_unique_id` and registers a new `_msg_id` (README "Client
   * resilience"). Apart from sendCall, whose usual path then builds no closure.
   */
  private sendResilient(prepared: PreparedSend, sendOptions: SendOptions, policy: ResolvedRpcRetryPolicy | undefined): Promise<unknown> {
    const attempt = () => traceRpc('call', this, this.sendPrepared, prepared, sendOptions, this.traceContext);
    return (this.resilience ??= this.newResilience(true)!).run(this.target, prepared.message.method, policy, sendOptions.signal, attempt);
  }

  /** The innermost step of the middleware chain: the invocation as the middlewares left it. */
  private invoke(inv: RpcClientInvocation<any>): Promise<unknown> {
    if (inv.kind === 'cast') return this.sendCast(inv.ctx, inv.method, inv.args, inv.signal);
    const choice = inv.idempotent === undefined && inv.retryPolicy === undefined ? undefined : { idempotent: inv.idempotent, retryPolicy: inv.retryPolicy };
    return this.sendCall(inv.ctx, inv.method, inv.args, checkPositiveMs('timeout', inv.timeout), inv.signal, choice);
  }

  /** The retry policy of one call: the call's or the client's, when the call is idempotent. */
  private policyFor(method: string, choice: RetryChoice | undefined): ResolvedRpcRetryPolicy | undefined {
    return retryPolicyOfCall(this.retryPolicy, method, choice?.idempotent, choice?.retryPolicy);
  }

  /**
   * Resolves, with the servers found, once at least `options.count` servers of the target's
   * topic (only the target's server, when it names one) answer the ping; polls `discover()`
   * until then. Rejects with MessagingTimeout after `options.timeoutMs` saying how many answered,
   * AbortError when `options.signal` aborts. For start-up ordering.
   */
  waitForServers(options: RpcWaitForServersOptions = {}): Promise<DiscoveredServer[]> {
    return waitForServersOf(this, options);
  }

  /**
   * Watches the servers of the target's topic (polling `discover()`): `joined` and `left` events
   * and the current list, for dashboards. Stop it with `stop()` (or `using`).
   */
  watchServers(options: RpcWatchServersOptions = {}): ServerWatch {
    return watchServersOf(this, options);
  }

  /**
   * Calls oslo's ping endpoint (`oslo_rpc_server_ping`) on `options.server`, the target's server,
   * or any server of the topic, and resolves with the round trip in ms. A server without the
   * endpoint rejects with NotSupportedError (start it with `rpcPingEnabled: true`); no server
   * with MessagingTimeout.
   */
  async ping(options: RpcPingOptions = {}): Promise<number> {
    if (!isPlainObject(options as unknown)) throw new InvalidArgument('options', 'an object', options);
    return pingServer(this, options.timeout === undefined ? this.options.timeout : checkPositiveMs('timeout', options.timeout), options);
  }

  /**
   * Lists the servers of the target's topic that answer a fanout ping within `windowMs`, sorted
   * by name (see DiscoveredServer). Resolves after the window; an empty list when none answered.
   * Rejects with NotSupportedError at once when the driver has no fanout.
   */
  async discover(options: RpcDiscoverOptions = {}): Promise<DiscoveredServer[]> {
    if (!isPlainObject(options as unknown)) throw new InvalidArgument('options', 'an object', options);
    return discoverServers(this, options.windowMs === undefined ? RPC_DISCOVER_DEFAULTS.windowMs : checkPositiveMs('windowMs', options.windowMs), options);
  }

  /** Every check oslo does before sending, then the message itself. Throws; sends nothing. */
  private prepareSend(ctx: Ctx, method: unknown, args: unknown, forCall: boolean): PreparedSend {
    validateSendTarget(this.target, forCall);
    checkMethodAndArgs(method, args);
    if (typeof method !== 'string') throw new InvalidArgument('method', 'a non-empty string', method);
    const serializer = this.options.serializer;
    const serialisedArgs: Record<string, unknown> = {};
    if (args !== undefined) for (const name of Object.keys(args)) serialisedArgs[name] = serializer.serializeEntity(ctx, args[name]);
    assertJsonSafe(serialisedArgs, 'args');
    const message: PreparedSend['message'] = { method, args: serialisedArgs };
    if (this.target.namespace !== undefined) message.namespace = this.target.namespace;
    if (this.target.version !== undefined) message.version = this.target.version;
    this.checkVersionCap();
    const wireCtx = serializer.serializeContext(ctx);
    if (!isPlainObject(wireCtx)) throw new InvalidArgument('context', 'a plain object after serializeContext', wireCtx);
    assertJsonSafe(wireCtx, 'context');
    return { ctx: wireCtx, message };
  }

  private checkVersionCap(): void {
    const cap = this.options.versionCap;
    if (cap === undefined) return;
    const version = this.target.version;
    if (version === undefined) {
      const err = new RPCVersionCapError('None', cap);
      err.message = `A version cap (${cap}) is set but the target has no version; set target.version to check it against the cap.`;
      throw err;
    }
    if (!versionIsCompatible(cap, version)) throw new RPCVersionCapError(version, cap);
  }

  private sendPrepared(prepared: PreparedSend, options: SendOptions): Promise<unknown> {
    return this.transport.driver.send(this.target, prepared.ctx, prepared.message, options);
  }

  /** Asked for only while a tracer listens (see traceRpc). */
  private traceContext(prepared: PreparedSend, options: SendOptions): RpcTraceContext {
    const t = this.target;
    const context: RpcTraceContext = { kind: options.waitForReply ? 'call' : 'cast', method: prepared.message.method, exchange: t.exchange, topic: t.topic, server: t.server, fanout: t.fanout, namespace: t.namespace, version: t.version, context: prepared.ctx };
    if (options.waitForReply) context.timeout = options.timeout;
    return context;
  }
}

function checkMethodAndArgs(method: unknown, args: unknown): asserts args is Record<string, unknown> | undefined {
  if (typeof method !== 'string' || method.length === 0) throw new InvalidArgument('method', 'a non-empty string', method);
  if (args !== undefined && !isPlainObject(args)) throw new InvalidArgument('args', 'a plain object of keyword arguments', args);
}

/**
 * Creates an RPC client for `target`. `Api` (an endpoint class or interface) types the
 * method names, args and results: `getRpcClient<Calculator>(transport, {topic: 'calc'})`.
 * With a `contract` option the types come from its schemas instead.
 */
export function getRpcClient<C extends RpcContract<any>, Ctx = Context>(
  transport: Transport,
  target: Target | TargetInit,
  options: RpcClientOptions & { contract: C },
): RpcClient<RpcContractApi<C>, Ctx>;
export function getRpcClient<Api = UntypedApi, Ctx = Context>(transport: Transport, target: Target | TargetInit, options?: RpcClientOptions): RpcClient<Api, Ctx>;
export function getRpcClient<Api = UntypedApi, Ctx = Context>(transport: Transport, target: Target | TargetInit, options: RpcClientOptions = {}): RpcClient<Api, Ctx> {
  return new RpcClient<Api, Ctx>(transport, target, options);
}

/**
 * `waitForServers(transport, target, {count, timeoutMs})`: resolves once `count` servers of the
 * target's topic answer the ping (see `RpcClient.waitForServers()`), e.g. before a process
 * starts calling them.
 */
export function waitForServers(transport: Transport, target: Target | TargetInit, options: RpcWaitForServersOptions = {}): Promise<DiscoveredServer[]> {
  return new RpcClient(transport, target).waitForServers(options);
}
