// The memory:// driver: the embedded default transport and the reference implementation of
// the driver contract. Same topology, envelope and acknowledgement rules as oslo's rabbit driver.
import { fanoutAddress, newReplyAddress, notificationAddress, requestAddress } from '../../driver/addressing.js';
import { BaseDriver, type DriverInit, type ListenOptions, type NotificationListenOptions, type NotificationSendOptions, type SendOptions, type TargetAndPriority } from '../../driver/base-driver.js';
import type { DriverCapabilities } from '../../driver/capabilities.js';
import { decodeBody, newHexId } from '../../driver/envelope.js';
import type { IncomingMessage, ReceivedMessage, RpcIncomingMessage } from '../../driver/incoming-message.js';
import type { Listener } from '../../driver/listener.js';
import type { ReplySender } from '../../driver/messages.js';
import { PendingReplies } from '../../driver/pending-replies.js';
import type { Context, DriverMessage } from '../../driver/types.js';
import { encodeNotification, encodeRpcRequest } from '../../driver/wire.js';
import { MessageDeliveryFailure } from '../../errors.js';
import type { Target } from '../../target.js';
import { getMemoryBroker, type MemoryBroker, type MemoryConsumer, type MemoryDelivery } from './memory-broker.js';
import { MemoryNotificationListener, MemoryRpcListener, type MemoryListener, type MemoryListenerDeps } from './memory-listener.js';
import { resolveMemoryOptions, type MemoryDriverOptions } from './options.js';
import { declareNotificationTarget, declareRequestExchange } from './topology.js';

const CAPABILITIES: DriverCapabilities = Object.freeze({
  rpc: true,
  fanout: true,
  requeue: true,
  pools: true,
  callMonitor: true,
  durableNotifications: true,
});

/** In-process driver over the broker of the URL's virtual host (`memory:///iso` = isolated). */
export class MemoryDriver extends BaseDriver implements ReplySender {
  readonly name = 'memory';
  readonly capabilities = CAPABILITIES;
  readonly options: MemoryDriverOptions;
  /** The broker this driver publishes to and consumes from. */
  readonly broker: MemoryBroker;

  private replyQueue?: string;
  private replyConsumer?: MemoryConsumer;
  private readonly pending: PendingReplies;

  constructor(init: DriverInit) {
    super(init);
    this.options = resolveMemoryOptions(init.url, init.options);
    this.broker = getMemoryBroker(init.url.virtualHost ?? '');
    this.pending = new PendingReplies(this.allowedRemoteExmods, this.remoteErrors, this.logger);
  }

  protected async doSend(target: Target, ctx: Context, message: DriverMessage, options: SendOptions): Promise<unknown> {
    const topic = target.topic as string;
    const msgId = options.waitForReply === true ? newHexId() : undefined;
    const body = encodeRpcRequest(message, ctx, msgId === undefined ? undefined : { msgId, replyQueue: this.ensureReplyQueue(), callMonitorTimeout: options.callMonitorTimeout });
    const fanout = target.fanout === true;
    const exchange = fanout ? fanoutAddress(topic) : this.exchangeFor(target);
    const routingKey = fanout ? '' : requestAddress(topic, target.server);
    declareRequestExchange(this.broker, exchange, fanout);
    if (msgId === undefined) {
      this.broker.publish(exchange, routingKey, body);
      return undefined;
    }
    const call = this.pending.register(msgId, { topic, timeout: options.timeout, callMonitorTimeout: options.callMonitorTimeout, signal: options.signal });
    // Like oslo's `expiration`: a request nobody took within the call timeout is never run.
    this.broker.publish(exchange, routingKey, body, { expirationMs: options.timeout });
    return call.promise;
  }

  protected async doSendNotification(target: Target, ctx: Context, message: DriverMessage, options: NotificationSendOptions): Promise<void> {
    const topic = target.topic as string;
    const body = encodeNotification(message, ctx, options.version);
    const exchange = this.exchangeFor(target);
    declareNotificationTarget(this.broker, exchange, topic);
    this.broker.publish(exchange, topic, body);
  }

  protected async doListen(target: Target, options: ListenOptions): Promise<Listener<RpcIncomingMessage>> {
    const topic = target.topic as string;
    const logger = this.logger.child({ listener: 'rpc', topic });
    const source = new MemoryRpcListener(this.listenerDeps(logger), this.exchangeFor(target), topic, target.server);
    return this.startListener(source, options);
  }

  protected async doListenForNotifications(targetsAndPriorities: readonly TargetAndPriority[], options: NotificationListenOptions): Promise<Listener<IncomingMessage>> {
    const pool = options.pool;
    const bindings = targetsAndPriorities.map(([target, priority]): [string, string] => [this.exchangeFor(target), notificationAddress(target.topic as string, priority)]);
    const logger = this.logger.child({ listener: 'notification', pool });
    const source = new MemoryNotificationListener(this.listenerDeps(logger), bindings, pool);
    return this.startListener(source, options);
  }

  protected async close(): Promise<void> {
    this.pending.failAll(new MessageDeliveryFailure('The transport was cleaned up while the call was waiting for its reply'));
    this.replyConsumer?.close();
    if (this.replyQueue) this.broker.deleteQueue(this.replyQueue);
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

  private startListener<M extends ReceivedMessage>(source: MemoryListener<M>, options: ListenOptions): Promise<Listener<M>> {
    const prefetchSize = this.options.prefetchCount > 0 ? this.options.prefetchCount : -1;
    return this.openListener(source, () => source.subscribe(), { ...options, prefetchSize });
  }

  private listenerDeps(logger: MemoryListenerDeps['logger']): MemoryListenerDeps {
    return {
      broker: this.broker,
      logger,
      prefetchCount: this.options.prefetchCount,
      dedupWindow: this.options.dedupWindow,
      replies: this,
    };
  }

  /** One reply queue per driver, created at the first call and reused (as oslo). */
  private ensureReplyQueue(): string {
    if (this.replyQueue) return this.replyQueue;
    const name = newReplyAddress();
    this.broker.declareQueue(name);
    this.replyConsumer = this.broker.consume(name, (d) => this.onReply(d), { noAck: true });
    this.replyQueue = name;
    return name;
  }

  private onReply(delivery: MemoryDelivery): void {
    let reply: DriverMessage;
    try {
      reply = decodeBody(delivery.body);
    } catch (err) {
      this.logger.warn('Dropping a malformed reply', { queue: delivery.queue, bytes: delivery.body.length, reason: (err as Error).message });
      return;
    }
    this.pending.accept(reply);
  }
}
