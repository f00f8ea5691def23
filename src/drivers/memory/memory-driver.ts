// The memory:// driver: the embedded default transport and the reference implementation of
// the driver contract. Same topology, envelope and acknowledgement rules as oslo's rabbit driver.
import { BaseDriver, type DriverInit, type ListenOptions, type NotificationListenOptions, type NotificationSendOptions, type SendOptions, type TargetAndPriority } from '../../driver/base-driver.js';
import type { DriverCapabilities } from '../../driver/capabilities.js';
import { decodeBody, newHexId, packContext, serializeEnvelope } from '../../driver/envelope.js';
import type { IncomingMessage, RpcIncomingMessage } from '../../driver/incoming-message.js';
import { PollStyleListenerAdapter, type Listener } from '../../driver/listener.js';
import { deserializeRemoteError } from '../../driver/remote-error.js';
import { isPriority, type Context, type DriverMessage } from '../../driver/types.js';
import { AbortError, InvalidArgument, InvalidState, InvalidTarget, MessageDeliveryFailure, MessagingTimeout } from '../../errors.js';
import type { Target } from '../../target.js';
import { getMemoryBroker, type MemoryBroker, type MemoryConsumer, type MemoryDelivery } from './memory-broker.js';
import { MemoryNotificationListener, MemoryRpcListener, type DetachableListener, type MemoryListener, type MemoryListenerDeps } from './memory-listener.js';
import type { ReplySender } from './memory-message.js';
import { resolveMemoryOptions, type MemoryDriverOptions } from './options.js';

const CAPABILITIES: DriverCapabilities = Object.freeze({
  rpc: true,
  fanout: true,
  requeue: true,
  pools: true,
  callMonitor: true,
  durableNotifications: true,
});

interface PendingCall {
  readonly topic: string;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: Error) => void;
  timer?: ReturnType<typeof setTimeout>;
  monitor?: ReturnType<typeof setTimeout>;
  signal?: AbortSignal;
  onAbort?: () => void;
  /** A result or failure that came in a non-final reply (oslo keeps it as the final value). */
  early?: { result: unknown; failure: unknown };
}

/** In-process driver over the broker of the URL's virtual host (`memory:///iso` = isolated). */
export class MemoryDriver extends BaseDriver implements ReplySender {
  readonly name = 'memory';
  readonly capabilities = CAPABILITIES;
  override readonly prefetchSize: number;
  readonly options: MemoryDriverOptions;
  /** The broker this driver publishes to and consumes from. */
  readonly broker: MemoryBroker;

  private closed = false;
  private replyQueue?: string;
  private replyConsumer?: MemoryConsumer;
  private readonly pending = new Map<string, PendingCall>();
  private readonly listeners = new Set<DetachableListener>();

  constructor(init: DriverInit) {
    super(init);
    this.options = resolveMemoryOptions(init.url, init.options);
    this.prefetchSize = this.options.prefetchCount > 0 ? this.options.prefetchCount : -1;
    this.broker = getMemoryBroker(init.url.virtualHost ?? '');
  }

  async send(target: Target, ctx: Context, message: DriverMessage, options: SendOptions = {}): Promise<unknown> {
    this.assertOpen();
    const waitForReply = options.waitForReply === true;
    if (!target.topic) throw new InvalidTarget('A topic is required to send', target);
    if (waitForReply && target.fanout) throw new InvalidTarget('A call cannot be used with fanout', target);
    checkDuration('timeout', options.timeout);
    checkDuration('callMonitorTimeout', options.callMonitorTimeout);
    if (options.signal?.aborted) throw new AbortError('The operation was aborted', { cause: options.signal.reason });

    const inner: DriverMessage = { ...message };
    let msgId: string | undefined;
    if (waitForReply) {
      msgId = newHexId();
      inner._msg_id = msgId;
      inner._reply_q = this.ensureReplyQueue();
      // oslo's wire carries the call-monitor window in seconds (null when there is none).
      inner._timeout = options.callMonitorTimeout !== undefined ? options.callMonitorTimeout / 1000 : null;
    }
    inner._unique_id = newHexId();
    packContext(inner, ctx);
    const body = encode(serializeEnvelope, inner, message, ctx);

    let exchange: string;
    let routingKey: string;
    if (target.fanout) {
      exchange = `${target.topic}_fanout`;
      routingKey = '';
      this.broker.declareExchange(exchange, 'fanout');
    } else {
      exchange = this.exchangeFor(target);
      routingKey = target.server ? `${target.topic}.${target.server}` : target.topic;
      this.broker.declareExchange(exchange, 'topic');
    }
    if (!waitForReply) {
      this.broker.publish(exchange, routingKey, body);
      return undefined;
    }
    const reply = this.waitForReply(msgId!, target.topic, options);
    // Like oslo's `expiration`: a request nobody took within the call timeout is never run.
    this.broker.publish(exchange, routingKey, body, { expirationMs: options.timeout });
    return reply;
  }

  async sendNotification(target: Target, ctx: Context, message: DriverMessage, options: NotificationSendOptions = {}): Promise<void> {
    this.assertOpen();
    if (!target.topic) throw new InvalidTarget('A notification target needs a topic', target);
    const version = options.version ?? 2.0;
    if (version !== 1.0 && version !== 2.0) throw new InvalidArgument('version', '1.0 or 2.0', version);
    const inner: DriverMessage = { ...message, _unique_id: newHexId() };
    packContext(inner, ctx);
    const body = encode(version === 1.0 ? (m) => m : serializeEnvelope, inner, message, ctx);
    const exchange = this.exchangeFor(target);
    // The notifier declares and binds the shared queue, so notifications wait for a listener.
    this.broker.declareExchange(exchange, 'topic');
    this.broker.declareQueue(target.topic);
    this.broker.bindQueue(target.topic, exchange, target.topic);
    this.broker.publish(exchange, target.topic, body);
  }

  async listen(target: Target, options: ListenOptions = {}): Promise<Listener<RpcIncomingMessage>> {
    this.assertOpen();
    if (!target.topic) throw new InvalidTarget('A server target needs a topic', target);
    const logger = this.logger.child({ listener: 'rpc', topic: target.topic });
    const source = new MemoryRpcListener(this.listenerDeps(logger), this.exchangeFor(target), target.topic, target.server);
    return this.startListener(source, options);
  }

  async listenForNotifications(targetsAndPriorities: readonly TargetAndPriority[], options: NotificationListenOptions = {}): Promise<Listener<IncomingMessage>> {
    this.assertOpen();
    if (!Array.isArray(targetsAndPriorities) || targetsAndPriorities.length === 0) {
      throw new InvalidArgument('targetsAndPriorities', 'a non-empty array of [target, priority] pairs', targetsAndPriorities);
    }
    const pool = options.pool;
    if (pool !== undefined && (typeof pool !== 'string' || pool === '')) throw new InvalidArgument('pool', 'a non-empty string', pool);
    const bindings = targetsAndPriorities.map(([target, priority]): [string, string] => {
      if (!target?.topic) throw new InvalidTarget('A notification target needs a topic', target);
      if (!isPriority(priority)) throw new InvalidArgument('priority', 'one of audit, debug, info, warn, error, critical, sample', priority);
      return [this.exchangeFor(target), `${target.topic}.${priority}`];
    });
    const logger = this.logger.child({ listener: 'notification', pool });
    const source = new MemoryNotificationListener(this.listenerDeps(logger), bindings, pool);
    return this.startListener(source, options);
  }

  async cleanup(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const [msgId, call] of [...this.pending]) {
      this.settle(msgId, call);
      call.reject(new MessageDeliveryFailure(`The transport was cleaned up while a call on topic ${call.topic} waited for its reply`));
    }
    this.replyConsumer?.close();
    if (this.replyQueue) this.broker.deleteQueue(this.replyQueue);
    for (const listener of [...this.listeners]) listener.detach();
  }

  /** @internal Publishes a reply or heartbeat to a caller's reply queue; never throws. */
  sendReply(replyQueue: string, msgId: string, body: string): void {
    if (this.closed) {
      this.logger.debug('reply dropped: the server transport is cleaned up', { msgId });
      return;
    }
    if (this.broker.publish('', replyQueue, body) === 0) {
      this.logger.warn('reply queue does not exist; reply dropped (the caller is gone)', { replyQueue, msgId });
    }
  }

  private startListener<M extends IncomingMessage>(source: MemoryListener<M>, options: ListenOptions): Listener<M> {
    source.subscribe();
    this.listeners.add(source);
    return new PollStyleListenerAdapter(source, { batchSize: options.batchSize, batchTimeout: options.batchTimeout, logger: this.logger });
  }

  private listenerDeps(logger: MemoryListenerDeps['logger']): MemoryListenerDeps {
    return {
      broker: this.broker,
      logger,
      prefetchCount: this.options.prefetchCount,
      dedupWindow: this.options.dedupWindow,
      replier: this,
      onCleanup: (listener) => this.listeners.delete(listener),
    };
  }

  /** One reply queue per driver, created at the first call and reused (as oslo). */
  private ensureReplyQueue(): string {
    if (this.replyQueue) return this.replyQueue;
    const name = `reply_${newHexId()}`;
    this.broker.declareQueue(name);
    this.replyConsumer = this.broker.consume(name, (d) => this.onReply(d), { noAck: true });
    this.replyQueue = name;
    return name;
  }

  private waitForReply(msgId: string, topic: string, options: SendOptions): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      const call: PendingCall = { topic, resolve, reject };
      const { timeout, callMonitorTimeout, signal } = options;
      if (timeout !== undefined) {
        call.timer = setTimeout(() => this.fail(msgId, new MessagingTimeout(`No reply on topic ${topic} within ${timeout} ms`)), timeout);
      }
      if (callMonitorTimeout !== undefined) {
        call.monitor = setTimeout(
          () => this.fail(msgId, new MessagingTimeout(`No reply or call-monitor heartbeat on topic ${topic} within ${callMonitorTimeout} ms`)),
          callMonitorTimeout,
        );
      }
      if (signal) {
        call.signal = signal;
        call.onAbort = () => this.fail(msgId, new AbortError('The call was aborted', { cause: signal.reason }));
        signal.addEventListener('abort', call.onAbort, { once: true });
      }
      this.pending.set(msgId, call);
    });
  }

  private onReply(delivery: MemoryDelivery): void {
    let reply: DriverMessage;
    try {
      reply = decodeBody(delivery.body);
    } catch (err) {
      this.logger.warn('dropped a malformed reply', { queue: delivery.queue, bytes: delivery.body.length, reason: (err as Error).message });
      return;
    }
    const msgId = reply._msg_id;
    const call = typeof msgId === 'string' ? this.pending.get(msgId) : undefined;
    if (!call) {
      this.logger.debug('No calling threads waiting for msg_id; reply dropped', { msgId: typeof msgId === 'string' ? msgId : undefined });
      return;
    }
    const failure = reply.failure ?? null;
    const result = reply.result ?? null;
    if (reply.ending !== true) {
      if (failure !== null || result !== null) call.early = { result, failure };
      call.monitor?.refresh();
      return;
    }
    this.settle(msgId as string, call);
    const final = failure === null && result === null && call.early ? call.early : { result, failure };
    if (final.failure !== null) call.reject(deserializeRemoteError(final.failure, this.allowedRemoteExmods, this.remoteErrors));
    else call.resolve(final.result);
  }

  private fail(msgId: string, err: Error): void {
    const call = this.pending.get(msgId);
    if (!call) return;
    this.settle(msgId, call);
    call.reject(err);
  }

  private settle(msgId: string, call: PendingCall): void {
    this.pending.delete(msgId);
    if (call.timer) clearTimeout(call.timer);
    if (call.monitor) clearTimeout(call.monitor);
    if (call.onAbort) call.signal?.removeEventListener('abort', call.onAbort);
  }

  private assertOpen(): void {
    if (this.closed) throw new InvalidState(`The memory driver for ${this.url.toString()} was cleaned up`);
  }
}

/** JSON-encodes a message as a broker would; a value JSON cannot carry fails before anything is queued. */
function encode(wrap: (m: DriverMessage) => unknown, inner: DriverMessage, message: DriverMessage, ctx: Context): string {
  try {
    return JSON.stringify(wrap(inner));
  } catch (err) {
    const badContext = !isJsonable(ctx);
    throw new InvalidArgument(badContext ? 'context' : 'message', 'a JSON-serialisable value (no BigInt, no cycles)', badContext ? ctx : message, { cause: err });
  }
}

function isJsonable(value: unknown): boolean {
  try {
    JSON.stringify(value);
    return true;
  } catch {
    return false;
  }
}

function checkDuration(field: string, value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new InvalidArgument(field, 'a non-negative number of milliseconds', value);
}
