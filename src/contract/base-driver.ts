// THE CONTRACT every backend implements. The façades in rpc/ and notify/ talk only to this.
import type { Logger, LogFields } from '../core/logger.js';
import { validateNotificationTarget, validateSendTarget, validateServerTarget, type Target } from '../core/target.js';
import { redactUrlsIn, type TransportURL } from '../core/transport-url.js';
import { AbortError, InvalidArgument, InvalidState, MessageDeliveryFailure, NotSupportedError } from '../core/errors.js';
import { checkOptionalMs, checkRetry } from '../core/checks.js';
import { isReplyAddress as isReplyAddressShape } from './addressing.js';
import { requireCapability, type DriverCapabilities } from './capabilities.js';
import type { DeadLetterStore } from './dead-letters.js';
import { DeliveryStats, type ConsumerLag, type LagSource } from './delivery-stats.js';
import type { IncomingMessage, ReceivedMessage, RpcIncomingMessage } from './incoming-message.js';
import { resolvePoolQuery, type ResolvedPoolQuery } from './addressing.js';
import { NO_INSPECTION, type Inspection, type PoolQuery, type PoolView } from './inspection.js';
import type { Listener } from './listener.js';
import { PendingReplies, type CallRegistry, type PendingCall } from './pending-replies.js';
import type { PollStyleListener } from './poll-style-listener.js';
import { listenTo, type PushSource } from './push-listener.js';
import type { RemoteErrorRegistry } from './remote-error.js';
import { isPriority, PRIORITIES, type Context, type DriverMessage, type Priority } from './types.js';

/** What `transport.ts` hands to a driver's constructor. */
export interface DriverInit {
  /** The parsed URL. Its `toString()` is redacted; use `format()` only to connect. */
  readonly url: TransportURL;
  /** Exchange for targets without one (oslo `control_exchange`). @default 'openstack' */
  readonly defaultExchange: string;
  /** Modules whose registered error classes are rebuilt on the caller. */
  readonly allowedRemoteExmods: readonly string[];
  /** Where remote error classes are looked up. */
  readonly remoteErrors: RemoteErrorRegistry;
  /** Already a child logger bound to `{driver, url (redacted)}`. */
  readonly logger: Logger;
  /** Driver options from the caller, merged over URL query options by the driver itself. */
  readonly options: Readonly<Record<string, unknown>>;
}

/** Options of `BaseDriver.send()`, set by the RPC client. */
export interface SendOptions {
  /** True for `call`: resolve with the reply's result. */
  waitForReply?: boolean;
  /** Reply deadline in ms (calls). Undefined = no deadline. */
  timeout?: number;
  /** Call-monitor window in ms: the call fails if no heartbeat/reply arrives within it. */
  callMonitorTimeout?: number;
  /** Connection retries: undefined or -1 = forever, 0 = none, N = N retries. */
  retry?: number;
  /** Aborts the wait for a reply (and a send still waiting for a connection). */
  signal?: AbortSignal;
  /**
   * With `waitForReply` and a `timeout` (the window): collect every final reply until the window
   * passes and resolve with `CollectedReply[]` instead of the first result; allowed with a fanout
   * target (one reply per server: `RpcClient.discover()`). `callMonitorTimeout` does not apply.
   */
  collectReplies?: boolean;
}

/**
 * A driver's connection state (`transport.health()`): what a readiness probe reports.
 * Drivers connect lazily, so `connected` is false before the transport's first use.
 */
export interface TransportHealth {
  /** A connection to the broker is open now (always true for memory://, false once cleaned up). */
  readonly connected: boolean;
  /** The broker refuses to take messages from this transport (RabbitMQ `connection.blocked`). */
  readonly blocked: boolean;
  /** The connection was lost and the driver is trying to restore it. */
  readonly reconnecting: boolean;
  /** The last connection error, if any: its message (URLs redacted) and when it happened. */
  readonly lastError?: HealthError;
}

/** A connection error as `TransportHealth` reports it: never a password or an unredacted URL. */
export interface HealthError {
  /** The error's message with every URL redacted. */
  readonly message: string;
  /** When it happened, ISO 8601. */
  readonly at: string;
}

/** What a driver reports about its connection; BaseDriver adds `lastError` and the cleaned-up state. */
export type ConnectionState = Pick<TransportHealth, 'connected' | 'blocked' | 'reconnecting'>;

const CLEANED_UP: ConnectionState = Object.freeze({ connected: false, blocked: false, reconnecting: false });
const ALWAYS_CONNECTED: ConnectionState = Object.freeze({ connected: true, blocked: false, reconnecting: false });

/** Options of `BaseDriver.sendNotification()`, set by the Notifier. */
export interface NotificationSendOptions {
  /** 1.0 sends the raw dict (oslo `messaging`), 2.0 the envelope (oslo `messagingv2`). @default 2.0 */
  version?: 1.0 | 2.0;
  /** As SendOptions.retry. */
  retry?: number;
}

/** Options of `BaseDriver.listen()`. */
export interface ListenOptions {
  /** Messages per callback. @default 1 */
  batchSize?: number;
  /** Deadline for collecting one batch, in ms. */
  batchTimeout?: number;
  /**
   * How many unsettled messages the caller can use at once (the façades pass 2 x executorSize x
   * batchSize): a driver MAY bound its in-process backlog (its prefetch) to it when its own
   * prefetch option was not given. Never below `batchSize`. A positive integer.
   */
  prefetchHint?: number;
}

/** Options of `BaseDriver.listenForNotifications()`. */
export interface NotificationListenOptions extends ListenOptions {
  /** Pool name: every pool gets its own copy; listeners in one pool share the messages. */
  pool?: string;
}

/** One notification subscription: a target and a priority, i.e. the queue `<topic>.<priority>`. */
export type TargetAndPriority = readonly [Target, Priority];

/** The module shape `transport.ts` imports lazily for each scheme. */
export interface DriverModule {
  /** Creates the driver; MUST NOT connect yet (drivers connect lazily on first use). */
  createDriver(init: DriverInit): BaseDriver;
}

/**
 * A messaging backend. All durations are milliseconds.
 *
 * Errors: every rejection MUST be a `MessagingError` subclass; a broker library's own error
 * MAY appear only as `cause`. Nothing here may log payloads, passwords or unredacted URLs.
 */
export abstract class BaseDriver {
  /** Short driver name for messages, e.g. `memory`, `amqp`. */
  abstract readonly name: string;
  /** What this driver supports; see `requireFeatures`. */
  abstract readonly capabilities: DriverCapabilities;

  /**
   * Redeliveries, dead letters and malformed messages counted by this driver's listeners since it
   * was created, per address (read by the OpenTelemetry metrics). A driver passes it to its
   * inbound pipelines and counts its own dead letters in it.
   */
  readonly deliveryStats = new DeliveryStats();
  private readonly lagSources = new Set<LagSource>();

  /** The transport URL; `toString()` is redacted. */
  readonly url: TransportURL;
  /** Exchange of targets that name none (the transport's `controlExchange`). */
  readonly defaultExchange: string;
  /** Modules whose registered error classes replies are rebuilt as (see `deserializeRemoteError`). */
  readonly allowedRemoteExmods: readonly string[];
  /** Classes for rebuilding remote errors. */
  readonly remoteErrors: RemoteErrorRegistry;
  /** The transport's logger, bound to this driver. */
  protected readonly logger: Logger;
  /** Listeners handed out and not cleaned up yet: `cleanup()` releases them. */
  private readonly openListeners = new Set<Listener<ReceivedMessage>>();
  /** Calls waiting for their reply: `cleanup()` fails those still waiting. */
  private readonly pendingReplies: PendingReplies;
  /** Set once `cleanup()` failed the waiting calls: a call registered later fails at once. */
  private callsFailed = false;
  private cleaning?: Promise<void>;
  private lastError?: HealthError;

  constructor(init: DriverInit) {
    this.url = init.url;
    this.defaultExchange = init.defaultExchange;
    this.allowedRemoteExmods = init.allowedRemoteExmods;
    this.remoteErrors = init.remoteErrors;
    this.logger = init.logger;
    this.pendingReplies = new PendingReplies(init.allowedRemoteExmods, init.remoteErrors, init.logger);
  }

  /**
   * Fails at once with NotSupportedError when a requested feature is missing: each `true`
   * requires the capability of the same name (`rpc`, `requeue`, `pools`, `fanout`, `callMonitor`).
   */
  requireFeatures(features: { rpc?: boolean; requeue?: boolean; pools?: boolean; fanout?: boolean; callMonitor?: boolean }): void {
    if (features.rpc) requireCapability(this.name, this.capabilities, 'rpc', 'RPC (call, cast, RPC servers)');
    if (features.requeue) requireCapability(this.name, this.capabilities, 'requeue', 'requeueing notifications');
    if (features.pools) requireCapability(this.name, this.capabilities, 'pools', 'notification listener pools');
    if (features.fanout) requireCapability(this.name, this.capabilities, 'fanout', 'fanout casts');
    if (features.callMonitor) requireCapability(this.name, this.capabilities, 'callMonitor', 'call-monitor heartbeats');
  }

  /**
   * Sends an RPC message (`{method, args, namespace?, version?}`) to `target` with `ctx`.
   * Written once here: it checks the driver is open and the arguments (a topic; no fanout with
   * `waitForReply` unless `collectReplies`; `collectReplies` only with `waitForReply` and a
   * `timeout`; non-negative durations; an integer `retry` of -1 or more; a signal not aborted
   * yet), rejecting with `InvalidState`, `InvalidTarget`, `InvalidArgument` or `AbortError`
   * before anything is sent, then calls the driver's `doSend`. A driver declaring `rpc: false`
   * never sees a send: it rejects with `NotSupportedError` first.
   */
  send(target: Target, ctx: Context, message: DriverMessage, options: SendOptions = {}): Promise<unknown> {
    try {
      this.assertOpen();
      if (!this.capabilities.rpc) this.requireFeatures({ rpc: true });
      const collect = options.collectReplies === true;
      if (collect && (options.waitForReply !== true || options.timeout === undefined)) {
        throw new InvalidArgument('collectReplies', 'true only with waitForReply: true and a timeout (the collection window)', options);
      }
      validateSendTarget(target, options.waitForReply === true && !collect);
      checkOptionalMs('timeout', options.timeout);
      checkOptionalMs('callMonitorTimeout', options.callMonitorTimeout);
      checkRetry(options.retry);
      if (options.signal?.aborted) throw new AbortError('The operation was aborted', { cause: options.signal.reason });
    } catch (err) {
      return Promise.reject(err);
    }
    return this.doSend(target, ctx, message, options);
  }

  /**
   * The driver's part of `send()`, with arguments already checked (see `send`).
   *
   * - Without `waitForReply` (a cast) it MUST resolve with `undefined` only once the broker
   *   has accepted the message (publisher confirm, write acknowledged).
   * - With `waitForReply` it MUST register the call with `registerCall` before it publishes the
   *   request (with `_msg_id` and `_reply_q`, see `encodeRpcRequest`), feed every message of its
   *   reply queue to `acceptReply` / `acceptReplyBody`, and return the call's `promise`: it
   *   resolves with the reply's `result`, or rejects with the remote error rebuilt by
   *   `deserializeRemoteError`, or with `MessagingTimeout` when `timeout` (or a call-monitor
   *   window) passes. Late replies after a timeout are dropped, never delivered to another call.
   *   BaseDriver does all of this once the driver feeds it the replies, and fails the calls still
   *   waiting at `cleanup()`.
   * - With `collectReplies` it MUST send as for a call (`registerCall` passes `collectReplies`
   *   on), to a fanout target too (every server gets `_msg_id`/`_reply_q`), so that the call
   *   resolves with every final reply that came within `timeout` (`RpcClient.discover()`).
   * - Connection failures are retried per `retry`; once exhausted it MUST reject with
   *   `MessageDeliveryFailure`. A retry MUST NOT make the message appear twice to a consumer
   *   (the `_unique_id` stays the same across retries and listeners dedupe on it).
   * - An aborted `signal` MUST reject with `AbortError` and stop waiting for the reply.
   */
  protected abstract doSend(target: Target, ctx: Context, message: DriverMessage, options: SendOptions): Promise<unknown>;

  /**
   * Publishes a notification dict (oslo 1.10 body) to `target.topic` = `<topic>.<priority>`.
   * Checks the driver is open, the topic, `version` and `retry` before anything is sent, then
   * calls the driver's `doSendNotification`.
   */
  sendNotification(target: Target, ctx: Context, message: DriverMessage, options: NotificationSendOptions = {}): Promise<void> {
    try {
      this.assertOpen();
      validateNotificationTarget(target);
      if (options.version !== undefined && options.version !== 1.0 && options.version !== 2.0) throw new InvalidArgument('version', '1.0 or 2.0', options.version);
      checkRetry(options.retry);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.doSendNotification(target, ctx, message, options);
  }

  /**
   * The driver's part of `sendNotification()`. It MUST resolve only after the broker accepted
   * the notification. Notifications are store-and-forward: when the driver has
   * `durableNotifications`, a notification sent before any listener exists MUST reach the
   * un-pooled listener that later listens on it.
   */
  protected abstract doSendNotification(target: Target, ctx: Context, message: DriverMessage, options: NotificationSendOptions): Promise<void>;

  /**
   * Subscribes an RPC server to `target` (a topic and the server's name). Checks the
   * driver is open, the target and the batch options, then calls the driver's `doListen`.
   * A driver declaring `rpc: false` never sees a listen: it rejects with `NotSupportedError` first.
   */
  async listen(target: Target, options: ListenOptions = {}): Promise<Listener<RpcIncomingMessage>> {
    this.assertOpen();
    if (!this.capabilities.rpc) this.requireFeatures({ rpc: true });
    validateServerTarget(target);
    checkBatchOptions(options);
    return this.doListen(target, options);
  }

  /**
   * The driver's part of `listen()`: the shared `<topic>` queue (round-robin between all
   * servers of the topic), the `<topic>.<server>` queue, and the topic's fanout. Resolves once
   * the subscriptions are in place, so that a message sent after it resolves is received.
   * Malformed messages MUST be rejected (not requeued) and logged; the listener keeps going.
   * Use `openListener` for the wrapping and cleanup tracking.
   */
  protected abstract doListen(target: Target, options: ListenOptions): Promise<Listener<RpcIncomingMessage>>;

  /**
   * Subscribes to `<topic>.<priority>` for every pair. Checks the driver is open, the pairs
   * (non-empty; each a target with a topic and a known priority), the pool (a non-empty string,
   * and the `pools` capability) and the batch options, then calls `doListenForNotifications`.
   */
  async listenForNotifications(targetsAndPriorities: readonly TargetAndPriority[], options: NotificationListenOptions = {}): Promise<Listener<IncomingMessage>> {
    this.assertOpen();
    if (!Array.isArray(targetsAndPriorities) || targetsAndPriorities.length === 0) {
      throw new InvalidArgument('targetsAndPriorities', 'a non-empty array of [target, priority] pairs', targetsAndPriorities);
    }
    for (const pair of targetsAndPriorities) {
      if (!Array.isArray(pair)) throw new InvalidArgument('targetsAndPriorities', 'a non-empty array of [target, priority] pairs', pair);
      validateNotificationTarget(pair[0]);
      if (!isPriority(pair[1])) throw new InvalidArgument('priority', `one of ${PRIORITIES.join(', ')}`, pair[1]);
    }
    const pool = options.pool;
    if (pool !== undefined) {
      if (typeof pool !== 'string' || pool === '') throw new InvalidArgument('pool', 'a non-empty string', pool);
      this.requireFeatures({ pools: true });
    }
    checkBatchOptions(options);
    return this.doListenForNotifications(targetsAndPriorities, options);
  }

  /**
   * The driver's part of `listenForNotifications()`: without a pool, listeners share one queue
   * per pair; with a pool, each pool gets every message once and members of the pool share
   * them. Resolves once subscribed. A driver without the `requeue` capability whose settler is
   * asked to requeue (`DeliverySettler.requeue`) MUST log a warning and acknowledge the message
   * instead, never throw or leave it unsettled.
   */
  protected abstract doListenForNotifications(targetsAndPriorities: readonly TargetAndPriority[], options: NotificationListenOptions): Promise<Listener<IncomingMessage>>;

  /**
   * Releases every listener, connection and timer. Calls still waiting for their reply reject
   * with MessageDeliveryFailure (BaseDriver fails them after the listeners, before `close()`),
   * never hang. Idempotent. After cleanup every method rejects with
   * `InvalidState`. Listeners are cleaned up first (they hand what they received to their
   * callbacks, unless a callback holds them back, and give unsettled messages back), then the
   * driver's `close()`.
   */
  cleanup(): Promise<void> {
    this.cleaning ??= (async () => {
      this.cleanupStarted();
      await Promise.all([...this.openListeners].map((l) => l.cleanup().catch((err: unknown) => this.logger.warn('Listener cleanup failed', { err }))));
      this.callsFailed = true;
      this.pendingReplies.failAll(cleanedUp());
      await this.close();
    })();
    return this.cleaning;
  }

  /**
   * The connection state for `transport.health()`. Never throws, never connects. After
   * `cleanup()` it reports not connected; `lastError` is the last one `noteConnectionError` got.
   */
  health(): TransportHealth {
    const state = this.closed ? CLEANED_UP : this.connectionState();
    const lastError = this.lastError;
    return lastError === undefined ? { ...state } : { ...state, lastError };
  }

  /**
   * The driver's part of `health()`: whether a connection is open, blocked or being restored.
   * MUST NOT connect or throw. The default suits an in-process driver: always connected.
   */
  protected connectionState(): ConnectionState {
    return ALWAYS_CONNECTED;
  }

  /** Records a connection error for `health()`: only its message, URLs redacted, and the time. */
  protected noteConnectionError(err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    this.lastError = { message: redactUrlsIn(message), at: new Date().toISOString() };
  }

  /** Called synchronously when `cleanup()` begins, before listeners are released (e.g. to abort retries). */
  protected cleanupStarted(): void {}

  /**
   * The driver's part of `cleanup()`, called once after its listeners are released and the calls
   * still waiting for a reply were failed (BaseDriver does that): close connections, stop reading
   * replies. MUST NOT throw for a broker that is already gone.
   */
  protected abstract close(): Promise<void>;

  /** True once `cleanup()` began. */
  protected get closed(): boolean {
    return this.cleaning !== undefined;
  }

  /** Throws InvalidState once the driver is cleaned up. */
  protected assertOpen(): void {
    if (this.closed) throw new InvalidState(`The ${this.name} transport ${this.url.toString()} was cleaned up; create a new one`);
  }

  /**
   * Registers a call waiting for its reply (`_msg_id` = `msgId`) with the deadlines of `options`:
   * `timeout`, `callMonitorTimeout` (restarted by every heartbeat), `signal` and `collectReplies`.
   * A driver MUST call it before it publishes the request (a fast reply is then never missed) and
   * return the call's `promise` from `doSend`. The call resolves with the reply's result (or the
   * collected replies), rejects with the rebuilt remote error, `MessagingTimeout` or `AbortError`,
   * and with `MessageDeliveryFailure` when the transport is cleaned up first (at once when it is
   * registered after `cleanup()` failed the waiting calls). A sender retrying
   * the request MUST stop once `call.isOver`, and MAY record why it is not delivered yet
   * (`call.setUndelivered`) or fail it (`call.fail`) when publishing gives up.
   */
  protected registerCall(msgId: string, topic: string, options: SendOptions): PendingCall {
    const call = this.pendingReplies.register(msgId, { topic, timeout: options.timeout, callMonitorTimeout: options.callMonitorTimeout, signal: options.signal, collectReplies: options.collectReplies });
    // A send that was still on its way to registering when cleanup() failed the others.
    if (this.callsFailed) call.fail(cleanedUp());
    return call;
  }

  /**
   * Feeds a decoded reply (or call-monitor heartbeat) to the call of its `_msg_id`. A reply
   * nobody waits for (late, after a timeout; or unknown) is dropped, never given to another
   * call. Never throws.
   */
  protected acceptReply(reply: DriverMessage): void {
    this.pendingReplies.accept(reply);
  }

  /**
   * True when `address` (a call's `_reply_q`, from the wire) is shaped like the reply addresses
   * this driver creates: the inbound pipeline drops a call with any other one before dispatch,
   * so a caller cannot make a server publish into another service's queue, topic or key.
   * @default oslo's `reply_<32 hex>` (`isReplyAddress` of addressing.ts). A driver that names
   * its reply addresses otherwise MUST override it with its own rule.
   */
  isReplyAddress(address: string): boolean {
    return isReplyAddressShape(address);
  }

  /**
   * Feeds a reply as it came off the broker: decodes it (`decodeBody`) and routes it as
   * `acceptReply`; a malformed one is logged with `fields` (where it came from, never the body)
   * and dropped. Never throws.
   */
  protected acceptReplyBody(body: Uint8Array | string, fields: LogFields): void {
    this.pendingReplies.acceptBody(body, fields);
  }

  /**
   * The same registry for a helper object of the driver (a reply consumer, an RPC client in a
   * file of its own) that registers calls and feeds replies itself. Failing them all stays with
   * `cleanup()`.
   */
  protected get replies(): CallRegistry {
    return this.pendingReplies;
  }

  /**
   * Wraps a push source, or a pull source (a PollStyleListener), into the Listener the façades
   * get and tracks it for `cleanup()`.
   * `subscribe` runs after the source is attached (messages may arrive before `start()`: they
   * wait); when it fails, or the driver is cleaned up meanwhile, the source is cleaned up and
   * the call rejects.
   */
  protected async openListener<M extends ReceivedMessage>(
    source: PushSource<M> | PollStyleListener<M>,
    subscribe: () => Promise<void> | void,
    options: ListenOptions & { prefetchSize?: number; logger?: Logger },
  ): Promise<Listener<M>> {
    this.assertOpen();
    const listener = listenTo(source, { ...options, logger: options.logger ?? this.logger });
    const tracked: Listener<M> = {
      start: (callback) => listener.start(callback),
      stop: () => listener.stop(),
      cleanup: async () => {
        try {
          await listener.cleanup();
        } finally {
          this.openListeners.delete(tracked as Listener<ReceivedMessage>);
        }
      },
    };
    this.openListeners.add(tracked as Listener<ReceivedMessage>);
    try {
      await subscribe();
    } catch (err) {
      await tracked.cleanup().catch(() => undefined);
      throw this.closed ? new InvalidState('The transport was cleaned up while the listener was starting', { cause: err }) : err;
    }
    if (this.closed) {
      await tracked.cleanup();
      throw new InvalidState('The transport was cleaned up while the listener was starting');
    }
    return tracked;
  }

  /**
   * The dead letters this driver keeps (messages set aside after `maxDeliveries` or as
   * malformed), for `tidings dead-letters`. Drivers that keep none inherit this, which throws
   * NotSupportedError naming the driver.
   */
  deadLetters(): DeadLetterStore {
    throw new NotSupportedError(`The ${this.name} driver keeps no dead letters: it rejects a malformed message and redelivers a requeued one without a delivery limit`);
  }

  /**
   * How far this driver's open notification listeners are behind, per address and pool, where the
   * broker tells it (Kafka: high watermark minus the group's committed offset; Redis: the group's
   * `lag`). Empty on drivers whose broker does not tell (RabbitMQ: see the queue depth instead).
   */
  async consumerLag(): Promise<ConsumerLag[]> {
    const open: LagSource[] = [];
    for (const source of this.lagSources) {
      if (source.closed) this.lagSources.delete(source);
      else open.push(source);
    }
    return (await Promise.all(open.map((s) => s.lag()))).flat();
  }

  /** Registers a listener for {@link consumerLag} until it is closed. */
  protected reportLag(source: LagSource): void {
    this.lagSources.add(source);
  }

  /**
   * What `inspectPools` and `listRpcTopics` can tell on this driver. MUST be true to what they do:
   * a field is true only when the answers fill it in (a single row MAY leave `backlog` out where
   * the broker cannot tell at that moment, e.g. Redis' lag after deletions), and false when they
   * never do. Never connects, never throws.
   * @default every field false (the driver cannot inspect)
   */
  inspection(): Inspection {
    return NO_INSPECTION;
  }

  /**
   * The notification pools of `query.topic` on its exchange, one `PoolView` per address and pool:
   * the default pool and every named pool where the broker lists them, else the default pool and
   * `query.pools`. An address or pool that does not exist MUST be left out. It MUST NOT create,
   * change or consume anything on the broker (no declare, no group join, no topic auto-creation),
   * and MUST NOT log payloads. Rejects with InvalidArgument for a bad query, InvalidState after
   * `cleanup()`, a MessagingError when the broker fails.
   * @default rejects with NotSupportedError naming the driver
   */
  async inspectPools(query: PoolQuery): Promise<PoolView[]> {
    this.assertOpen();
    return this.doInspectPools(resolvePoolQuery(query, this.defaultExchange));
  }

  /**
   * The driver's part of `inspectPools`: the query is checked, its defaults applied and the driver
   * open. Drivers that can inspect override this (with `inspection()`).
   */
  protected doInspectPools(_query: ResolvedPoolQuery): Promise<PoolView[]> {
    return Promise.reject(new NotSupportedError(`The ${this.name} driver cannot inspect notification pools`));
  }

  /**
   * The RPC topics served (or once served) on `exchange` (default: the control exchange), sorted,
   * without duplicates, where the broker can list them; undefined where it cannot. It MUST NOT
   * create anything and SHOULD bound its work (a SCAN with COUNT, not KEYS).
   * @default resolves with undefined
   */
  async listRpcTopics(exchange?: string): Promise<string[] | undefined> {
    if (!this.doListRpcTopics) return undefined;
    this.assertOpen();
    return this.doListRpcTopics(exchange ?? this.defaultExchange);
  }

  /** The driver's part of `listRpcTopics` (the exchange resolved, the driver open), on drivers that can list topics. */
  protected doListRpcTopics?(exchange: string): Promise<string[]>;

  /** The exchange a target resolves to. */
  exchangeFor(target: Target): string {
    return target.exchange ?? this.defaultExchange;
  }

  /** Class name and redacted URL, for logs and errors. */
  toString(): string {
    return `${this.constructor.name}<${this.url.toString()}>`;
  }
}

function cleanedUp(): MessageDeliveryFailure {
  return new MessageDeliveryFailure('The transport was cleaned up while the call was waiting for its reply');
}



function checkBatchOptions(options: ListenOptions): void {
  const { batchSize, batchTimeout } = options;
  if (batchSize !== undefined && (!Number.isInteger(batchSize) || batchSize < 1)) throw new InvalidArgument('batchSize', 'a positive integer', batchSize);
  checkOptionalMs('batchTimeout', batchTimeout);
  const { prefetchHint } = options;
  if (prefetchHint !== undefined && (!Number.isInteger(prefetchHint) || prefetchHint < 1)) throw new InvalidArgument('prefetchHint', 'a positive integer', prefetchHint);
}
