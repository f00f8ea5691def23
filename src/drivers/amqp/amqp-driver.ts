// The RabbitMQ driver, wire-compatible with oslo.messaging 14 (oslo-wire.md §1): sends, calls,
// notifications and replies on one confirmed publisher connection; one connection per listener.
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import { basename } from 'node:path';
import { EventEmitter } from 'eventemitter3';
import { BaseDriver, type ConnectionState, type DriverInit, type ListenOptions, type NotificationListenOptions, type NotificationSendOptions, type SendOptions, type TargetAndPriority } from '../../contract/base-driver.js';
import type { DriverCapabilities } from '../../contract/capabilities.js';
import type { DeadLetterStore } from '../../contract/dead-letters.js';
import { fanoutAddress, notificationAddress, requestAddress } from '../../contract/addressing.js';
import { newHexId } from '../../contract/envelope.js';
import type { ReplySender } from '../../contract/messages.js';
import type { PendingCall } from '../../contract/pending-replies.js';
import { encodeNotification, encodeRpcRequest } from '../../contract/wire.js';
import type { Subscriptions } from '../../contract/inbound.js';
import type { IncomingMessage, ReceivedMessage, RpcIncomingMessage } from '../../contract/incoming-message.js';
import type { ResolvedPoolQuery } from '../../contract/addressing.js';
import type { Inspection, PoolView } from '../../contract/inspection.js';
import type { Listener } from '../../contract/listener.js';
import type { Context, DriverMessage } from '../../contract/types.js';
import { AbortError, InvalidState, MessageDeliveryFailure, MessageUndeliverable, MessagingError } from '../../core/errors.js';
import type { Target } from '../../core/target.js';
import { abortableSleep, retryAfterFirst } from '../../core/retry.js';
import { AmqpListener } from './amqp-listener.js';
import { AmqpDeadLetters } from './dead-letters.js';
import { AMQP_INSPECTION, inspectAmqpPools, withQueueProbe } from './inspection.js';
import { AmqpConnection, type DriverEventEmitter } from './connection.js';
import { resolveOptions, type ResolvedAmqpOptions } from './options.js';
import { isNack, Publisher, type PublishOptions } from './publisher.js';
import { ReplyWaiter } from './reply-waiter.js';
import { QueueManager } from './queue-manager.js';
import { notificationSpecs, PublishTopology, rpcServerSpecs, type Declaration } from './topology.js';

const CAPABILITIES: DriverCapabilities = Object.freeze({ rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true, deadLetters: true });

/** oslo's ObsoleteReplyQueuesCache: reply queues found missing are skipped for a while. */
class ObsoleteReplyQueues {
  private readonly entries = new Map<string, number>();
  constructor(
    private readonly max = 200,
    private readonly ttlMs = 60_000,
  ) {}
  has(queue: string): boolean {
    const until = this.entries.get(queue);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.entries.delete(queue);
    return false;
  }
  add(queue: string): void {
    this.entries.delete(queue);
    this.entries.set(queue, Date.now() + this.ttlMs);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
  }
}

interface PublishRequest {
  /** What must be declared before publishing (notifications: with their default queue). */
  decl: Declaration;
  routingKey: string;
  content: Buffer;
  expiration?: number;
  retry?: number;
  signal?: AbortSignal;
  before?: () => Promise<void>;
  /** When it returns true, `before` has nothing to do and is skipped (keeps the hot path free of awaits). */
  ready?: () => boolean;
  /**
   * For calls: retries stop once the call is over, and each failed attempt is recorded on it
   * (its timeout then says why the request never left).
   */
  call?: PendingCall;
}

/** A queue manager's reply queue (oslo amqpdriver.QManager): `reply_<hostname>:<processname>:<n>`, no spaces, bounded. */
const QUEUE_MANAGER_REPLY = /^reply_[^\s:]{1,200}:[^\s:]{1,200}:\d{1,15}$/;

/** The largest `basic.qos` prefetch-count (a 16-bit field). */
const MAX_PREFETCH = 65_535;
/** The prefetch of an RPC listener given no count nor hint under `rabbit_stream_fanout` (a stream consumer needs one): an RPC server's default hint, 2 x executorSize. */
const STREAM_PREFETCH = 128;

export class AmqpDriver extends BaseDriver implements ReplySender {
  readonly name = 'amqp';
  readonly capabilities = CAPABILITIES;
  /** The resolved options (hosts carry credentials: never log this object). */
  readonly options: ResolvedAmqpOptions;
  /** Connection events: 'connected' | 'reconnected' | 'disconnected' | 'blocked' | 'unblocked' | 'connect-failed'. */
  readonly events: DriverEventEmitter = new EventEmitter();
  private readonly conn: AmqpConnection;
  private readonly publisher: Publisher;
  private readonly topology: PublishTopology;
  private replyWaiter?: ReplyWaiter;
  /** The dead-letter store, made on first use (deadLetters()). */
  private deadLetterStore?: AmqpDeadLetters;
  private readonly obsoleteReplyQueues = new ObsoleteReplyQueues();
  private listenerCount = 0;
  /** Aborted by cleanup(): publish retries and reply resends stop waiting at once. */
  private readonly closing = new AbortController();
  /** Every reply is published with these (one object for all). */
  private readonly replyOptions: PublishOptions;
  /** Names reply and fanout queues with `use_queue_manager`. */
  private readonly queueManager?: QueueManager;

  constructor(init: DriverInit) {
    super(init);
    this.options = resolveOptions(init.url, init.options);
    // Every publish waiting out a retry backoff listens on it (removed after): many at once during an outage is no leak.
    setMaxListeners(0, this.closing.signal);
    this.replyOptions = Object.freeze({ mandatory: this.options.directMandatoryFlag });
    this.conn = new AmqpConnection('publisher', this.options, this.logger, this.events);
    this.publisher = new Publisher(this.conn, this.options, this.logger);
    this.topology = new PublishTopology(this.options);
    if (this.options.useQueueManager) this.queueManager = new QueueManager(this.options.hostname ?? hostname(), this.options.processname ?? basename(process.argv[1] ?? process.argv0));
    this.events.on('disconnected', (info) => {
      if (info.error) this.noteConnectionError(info.error);
    });
    this.events.on('connect-failed', (info) => this.noteConnectionError(info.error));
  }

  /** oslo's `reply_<32 hex>`, or a queue manager's `reply_<hostname>:<processname>:<n>` (Python or tidings callers with `use_queue_manager`). */
  override isReplyAddress(address: string): boolean {
    return super.isReplyAddress(address) || QUEUE_MANAGER_REPLY.test(address);
  }

  /** The publisher connection's state (listeners' connections recover on their own). */
  protected override connectionState(): ConnectionState {
    return { connected: this.conn.isOpen, blocked: this.conn.isBlocked, reconnecting: this.conn.isReconnecting };
  }

  /** The transport's reply queue name (`reply_<hex>`), once a call was made. */
  get replyQueue(): string | undefined {
    return this.replyWaiter?.queue;
  }

  /** True while the broker blocks the publisher connection. */
  get blocked(): boolean {
    return this.conn.isBlocked;
  }

  /** Not async itself: a call returns its PendingCall's promise as it is (no promise adopting another). */
  protected doSend(target: Target, ctx: Context, message: DriverMessage, options: SendOptions): Promise<unknown> {
    try {
      return this.sendRequest(target, ctx, message, options);
    } catch (err) {
      // An argument JSON cannot carry, a body over maxMessageBytes: rejected, nothing sent.
      return Promise.reject(err);
    }
  }

  private sendRequest(target: Target, ctx: Context, message: DriverMessage, options: SendOptions): Promise<unknown> {
    const topic = target.topic as string;
    const waiter = options.waitForReply ? this.getReplyWaiter() : undefined;
    const msgId = waiter ? newHexId() : undefined;
    const content = Buffer.from(encodeRpcRequest(message, ctx, waiter && { msgId: msgId!, replyQueue: waiter.queue, callMonitorTimeout: options.callMonitorTimeout }, this.options.maxMessageBytes));
    const decl = target.fanout ? this.topology.fanout(topic) : this.topology.topic(this.exchangeFor(target));
    const routingKey = target.fanout ? '' : requestAddress(topic, target.server);
    if (!waiter || !msgId) return this.publish({ decl, routingKey, content, retry: options.retry, signal: options.signal });
    const call = this.registerCall(msgId, topic, options);
    // The call resolves on its reply without waiting for the request's confirm (a reply proves
    // delivery); a failed confirm still retries the same body or fails the call. A first attempt
    // that is confirmed leaves nothing to record, so only a failure builds the retry.
    const req: PublishRequest = {
      decl,
      routingKey,
      content,
      expiration: options.timeout,
      retry: options.retry,
      signal: options.signal,
      call,
      before: waiter.ensureConsuming,
      ready: waiter.isConsuming,
    };
    this.publishOnce(req).catch((error: unknown) =>
      this.retryPublish(req, error).then(
        () => call.setUndelivered(undefined),
        (err) => call.fail(err instanceof MessagingError ? err : new MessageDeliveryFailure(String(err), { cause: err })),
      ),
    );
    return call.promise;
  }

  protected async doSendNotification(target: Target, ctx: Context, message: DriverMessage, options: NotificationSendOptions): Promise<void> {
    const topic = target.topic as string;
    const content = Buffer.from(encodeNotification(message, ctx, options.version, undefined, this.options.maxMessageBytes));
    await this.publish({ decl: this.topology.notification(this.exchangeFor(target), topic), routingKey: topic, content, retry: options.retry });
  }

  protected async doListen(target: Target, options: ListenOptions): Promise<Listener<RpcIncomingMessage>> {
    const topic = target.topic as string;
    // A stream is shared by the topic's servers: no private name to take from the queue manager (oslo).
    const fanoutQueue = this.options.streamFanout ? undefined : this.queueManager && `${fanoutAddress(topic)}_${this.queueManager.next()}`;
    const specs = rpcServerSpecs(this.exchangeFor(target), topic, target.server as string, this.options, fanoutQueue);
    return this.startListener<RpcIncomingMessage>('rpc', specs, options, { topic: target.topic, server: target.server });
  }

  protected async doListenForNotifications(targetsAndPriorities: readonly TargetAndPriority[], options: NotificationListenOptions): Promise<Listener<IncomingMessage>> {
    const pairs = targetsAndPriorities.map(([t, p]) => ({ exchange: this.exchangeFor(t), routingKey: notificationAddress(t.topic as string, p) }));
    const specs = notificationSpecs(pairs, options.pool, this.options);
    // A pool's queue may carry topics of other listeners of that pool (oslo's naming; with
    // pool_queue_per_topic only by a name clash): the listener takes only what it subscribed to.
    const subscriptions = options.pool === undefined ? undefined : pairs.map((p) => [p.exchange, p.routingKey] as const);
    return this.startListener<IncomingMessage>('notification', specs, options, { pool: options.pool }, subscriptions);
  }

  /**
   * The notifications listeners set aside in `<address>.dlq` queues (dead-letters.ts): one store
   * per driver. A store's operations on a queue take turns, and listing a queue takes its letters
   * for a moment: a store per call would let a console's poll hide a letter from the body or
   * replay request beside it, and that request hide it from the poll.
   */
  override deadLetters(): DeadLetterStore {
    this.deadLetterStore ??= new AmqpDeadLetters({ conn: this.conn, publisher: this.publisher, logger: this.logger.child({ deadLetters: true }) });
    return this.deadLetterStore;
  }

  /** Consumers and ready messages of known queues; no listing without the management API (inspection.ts). */
  override inspection(): Inspection {
    return AMQP_INSPECTION;
  }

  /** The default queue of each address and the queue of each pool of `query.pools`, by passive declares on channels of its own. */
  protected override async doInspectPools(query: ResolvedPoolQuery): Promise<PoolView[]> {
    const model = await this.conn.ensureOpen();
    return withQueueProbe(model, this.logger, (probe) => inspectAmqpPools(probe, query, this.options));
  }

  protected override cleanupStarted(): void {
    this.closing.abort();
  }

  protected async close(): Promise<void> {
    await this.replyWaiter?.close();
    await this.publisher.drain(this.options.shutdownTimeout);
    await this.conn.close();
    this.logger.debug('AMQP driver cleaned up');
  }

  /** `util.inspect` shows the redacted form only. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toString();
  }

  private getReplyWaiter(): ReplyWaiter {
    this.replyWaiter ??= new ReplyWaiter(this.conn, this.options, this.logger, this.replies, this.queueManager && `reply_${this.queueManager.next()}`);
    return this.replyWaiter;
  }

  private async startListener<M extends ReceivedMessage>(
    kind: 'rpc' | 'notification',
    specs: ReturnType<typeof rpcServerSpecs>,
    options: ListenOptions,
    fields: Record<string, unknown>,
    subscriptions?: Subscriptions,
  ): Promise<Listener<M>> {
    const n = ++this.listenerCount;
    const logger = this.logger.child({ listener: n, kind, ...fields });
    const conn = new AmqpConnection(`listener:${n}`, this.options, logger, this.events);
    // The option when given (0 = unlimited, as oslo), else the façade's bound on what it can use,
    // at most 65535: basic.qos carries prefetch-count in 16 bits.
    let prefetch = this.options.prefetchCount ?? Math.min(options.prefetchHint ?? 0, MAX_PREFETCH);
    if (prefetch === 0 && specs.some((s) => s.stream)) prefetch = STREAM_PREFETCH;
    const source = new AmqpListener<M>(kind, conn, specs, this.options, logger, this, this.deliveryStats, this.publisher, fields.pool as string | undefined, prefetch, subscriptions);
    return this.openListener(source, () => source.start(), { ...options, prefetchSize: prefetch, logger });
  }

  /** Declares what the message needs (cached per connection) and publishes it, retrying per `retry`. */
  private publish(req: PublishRequest): Promise<void> {
    return this.publishOnce(req).catch((error: unknown) => this.retryPublish(req, error));
  }

  /**
   * The retries of `req` after its first attempt failed with `error`. A nacked message is
   * republished like one whose connection was lost, but only while `publishTimeout` has not
   * passed since that first failure: a queue refusing for longer (full, with `reject-publish`)
   * fails the send instead of holding it for ever.
   */
  private retryPublish(req: PublishRequest, error: unknown): Promise<void> {
    const o = this.options;
    const nacksUntil = o.publishTimeout > 0 ? Date.now() + o.publishTimeout : Infinity;
    return retryAfterFirst(
      Promise.reject(error),
      () => this.publishOnce(req),
      () => ({
        retry: req.retry,
        signal: req.signal ? AbortSignal.any([req.signal, this.closing.signal]) : this.closing.signal,
        intervalMs: o.retryInterval,
        backoffMs: o.retryBackoff,
        maxIntervalMs: o.intervalMax,
        isRetriable: (e) => !this.closed && req.call?.isOver !== true && e instanceof MessagingError && e.retriable && (!isNack(e) || Date.now() < nacksUntil),
        onRetry: ({ attempt, delayMs, error }) => this.logger.warn('Publish failed; retrying with the same message', { attempt, delayMs, routingKey: req.routingKey, err: error }),
      }),
      req.call && ((err) => req.call!.setUndelivered(err)),
    );
  }

  private publishOnce(req: PublishRequest): Promise<void> {
    if (req.call?.isOver) return Promise.reject(new AbortError('The call is over; not publishing its request again'));
    // `req` carries the publish options (expiration, signal, call) itself: no object per attempt.
    if ((!req.before || req.ready?.()) && this.publisher.isDeclared(req.decl)) {
      return this.publisher.publish(req.decl.exchange.name, req.routingKey, req.content, req);
    }
    return this.publishSlow(req);
  }

  private async publishSlow(req: PublishRequest): Promise<void> {
    if (req.before) await req.before();
    await this.publisher.ensureDeclared(req.decl);
    await this.publisher.publish(req.decl.exchange.name, req.routingKey, req.content, req);
  }

  /** ReplySender: replies larger than this become failure replies (wire.ts encodeReply). */
  get maxMessageBytes(): number {
    return this.options.maxMessageBytes;
  }

  /**
   * @internal Sends a reply (mandatory, to the default exchange). Resolves once the first attempt
   * is settled: a missing reply queue is then retried in the background (it never holds an
   * executor slot) every 250 ms up to `missingConsumerRetryTimeout`, then remembered as obsolete;
   * cleanup abandons the retries. Never throws.
   */
  sendReply(replyQueue: string, msgId: string, body: string): Promise<void> {
    if (this.obsoleteReplyQueues.has(replyQueue)) {
      this.logger.debug('Dropping a reply to an obsolete reply queue', { replyQueue, msgId });
      return Promise.resolve();
    }
    const content = Buffer.from(body);
    const deadline = Date.now() + this.options.missingConsumerRetryTimeout;
    if (this.conn.isClosed) return this.resendReply(replyQueue, msgId, content, deadline, new InvalidState('The transport was cleaned up'));
    // The usual reply is confirmed at the first attempt: no async function or loop for it.
    return this.publisher.publish('', replyQueue, content, this.replyOptions).catch((err: unknown) => {
      void this.resendReply(replyQueue, msgId, content, deadline, err);
    });
  }

  /** sendReply after its first attempt failed with `failed`: retries while that makes sense. Never throws. */
  private async resendReply(replyQueue: string, msgId: string, content: Buffer, deadline: number, failed: unknown): Promise<void> {
    let err = failed;
    for (let attempt = 1; ; attempt++) {
      const missing = err instanceof MessageUndeliverable;
      const retriable = missing || (err instanceof MessagingError && err.retriable);
      if (!retriable || Date.now() >= deadline) {
        if (missing) this.obsoleteReplyQueues.add(replyQueue);
        this.logger.warn(missing ? 'The reply queue is gone; dropping the reply' : 'Could not send a reply', { replyQueue, msgId, err });
        return;
      }
      try {
        await abortableSleep(missing ? 250 : Math.min(this.conn.retryDelay(attempt), Math.max(0, deadline - Date.now())), this.closing.signal);
      } catch {
        this.logger.debug('Transport cleaned up; reply not sent', { replyQueue, msgId });
        return;
      }
      try {
        if (this.conn.isClosed) throw new InvalidState('The transport was cleaned up');
        await this.publisher.publish('', replyQueue, content, this.replyOptions);
        return;
      } catch (e) {
        err = e;
      }
    }
  }
}
