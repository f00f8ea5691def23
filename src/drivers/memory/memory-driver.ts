// The memory:// driver: the embedded default transport and the reference implementation of
// the driver contract. Same topology, envelope and acknowledgement rules as oslo's rabbit driver.
import { fanoutAddress, newReplyAddress, notificationAddress, requestAddress } from '../../contract/addressing.js';
import { BaseDriver, type DriverInit, type ListenOptions, type NotificationListenOptions, type NotificationSendOptions, type SendOptions, type TargetAndPriority } from '../../contract/base-driver.js';
import type { DriverCapabilities } from '../../contract/capabilities.js';
import type { DeadLetterStore } from '../../contract/dead-letters.js';
import { newHexId } from '../../contract/envelope.js';
import type { ListenerKind, Subscriptions } from '../../contract/inbound.js';
import type { IncomingMessage, ReceivedMessage, RpcIncomingMessage } from '../../contract/incoming-message.js';
import type { ResolvedPoolQuery } from '../../contract/addressing.js';
import type { Inspection, PoolView } from '../../contract/inspection.js';
import type { Listener } from '../../contract/listener.js';
import type { ReplySender } from '../../contract/messages.js';
import type { Context, DriverMessage } from '../../contract/types.js';
import { encodeNotification, encodeRpcRequest } from '../../contract/wire.js';
import type { LogFields } from '../../core/logger.js';
import type { Target } from '../../core/target.js';
import { MemoryDeadLetters } from './dead-letters.js';
import { inspectMemoryPools, listMemoryRpcTopics, MEMORY_INSPECTION } from './inspection.js';
import { getMemoryBroker, type MemoryBroker } from './memory-broker.js';
import { MemoryListener } from './memory-listener.js';
import { resolveMemoryOptions, type MemoryDriverOptions } from './options.js';
import { declareNotificationQueues, declareNotificationTarget, declareRequestExchange, declareRpcServer, type ListenerQueues } from './topology.js';

const CAPABILITIES: DriverCapabilities = Object.freeze({ rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true, deadLetters: true });

/** In-process driver over the broker of the URL's virtual host (`memory:///iso` = isolated). */
export class MemoryDriver extends BaseDriver implements ReplySender {
  readonly name = 'memory';
  readonly capabilities = CAPABILITIES;
  readonly options: MemoryDriverOptions;
  /** The broker this driver publishes to and consumes from. */
  readonly broker: MemoryBroker;

  private replyQueue?: string;

  constructor(init: DriverInit) {
    super(init);
    this.options = resolveMemoryOptions(init.url, init.options);
    this.broker = getMemoryBroker(init.url.virtualHost ?? '');
  }

  protected async doSend(target: Target, ctx: Context, message: DriverMessage, options: SendOptions): Promise<unknown> {
    const topic = target.topic as string;
    const msgId = options.waitForReply === true ? newHexId() : undefined;
    const body = encodeRpcRequest(message, ctx, msgId === undefined ? undefined : { msgId, replyQueue: this.ensureReplyQueue(), callMonitorTimeout: options.callMonitorTimeout }, this.options.maxMessageBytes);
    const fanout = target.fanout === true;
    const exchange = fanout ? fanoutAddress(topic) : this.exchangeFor(target);
    const routingKey = fanout ? '' : requestAddress(topic, target.server);
    declareRequestExchange(this.broker, exchange, fanout);
    if (msgId === undefined) {
      this.broker.publish(exchange, routingKey, body);
      return undefined;
    }
    const call = this.registerCall(msgId, topic, options);
    // Like oslo's `expiration`: a request nobody took within the call timeout is never run.
    this.broker.publish(exchange, routingKey, body, { expirationMs: options.timeout });
    return call.promise;
  }

  protected async doSendNotification(target: Target, ctx: Context, message: DriverMessage, options: NotificationSendOptions): Promise<void> {
    const topic = target.topic as string;
    const body = encodeNotification(message, ctx, options.version, undefined, this.options.maxMessageBytes);
    const exchange = this.exchangeFor(target);
    declareNotificationTarget(this.broker, exchange, topic);
    this.broker.publish(exchange, topic, body);
  }

  protected async doListen(target: Target, options: ListenOptions): Promise<Listener<RpcIncomingMessage>> {
    const topic = target.topic as string;
    const exchange = this.exchangeFor(target);
    return this.startListener('rpc', { topic }, () => declareRpcServer(this.broker, exchange, topic, target.server), options);
  }

  protected async doListenForNotifications(targetsAndPriorities: readonly TargetAndPriority[], options: NotificationListenOptions): Promise<Listener<IncomingMessage>> {
    const bindings = targetsAndPriorities.map(([target, priority]): [string, string] => [this.exchangeFor(target), notificationAddress(target.topic as string, priority)]);
    // A pool's queue is named after the pool alone (oslo): other topics may be bound to it too.
    const subscriptions = options.pool === undefined ? undefined : bindings;
    return this.startListener('notification', { pool: options.pool }, () => declareNotificationQueues(this.broker, bindings, options.pool), options, subscriptions);
  }

  /** The dead letters of this virtual host: notifications requeued `maxDeliveries` times and malformed messages (dead-letters.ts). */
  override deadLetters(): DeadLetterStore {
    return new MemoryDeadLetters(this.broker);
  }

  /** memory:// sees every queue and message of its broker: it tells everything (inspection.ts). */
  override inspection(): Inspection {
    return MEMORY_INSPECTION;
  }

  /** Every pool bound to each address, with exact per-address counts; creates nothing. */
  protected override async doInspectPools(query: ResolvedPoolQuery): Promise<PoolView[]> {
    return inspectMemoryPools(this.broker, query);
  }

  /** The RPC topics of `exchange` on this broker (those whose servers ever listened). */
  protected override async doListRpcTopics(exchange: string): Promise<string[]> {
    return listMemoryRpcTopics(this.broker, exchange);
  }

  protected async close(): Promise<void> {
    // Deleting the reply queue cancels its consumer.
    if (this.replyQueue) this.broker.deleteQueue(this.replyQueue);
  }

  /** ReplySender: replies larger than this become failure replies (wire.ts encodeReply). */
  get maxMessageBytes(): number {
    return this.options.maxMessageBytes;
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

  private startListener<M extends ReceivedMessage>(kind: ListenerKind, fields: LogFields, declare: () => ListenerQueues, options: ListenOptions, subscriptions?: Subscriptions): Promise<Listener<M>> {
    const { prefetchCount, dedupWindow, maxMessageBytes, maxDeliveries } = this.options;
    const logger = this.logger.child({ listener: kind, ...fields });
    const pool = fields.pool as string | undefined;
    const source = new MemoryListener<M>(kind, { broker: this.broker, logger, prefetchCount, dedupWindow, maxDeliveries, maxMessageBytes, replies: this, declare, stats: this.deliveryStats, pool, subscriptions });
    return this.openListener(source, () => source.subscribe(), { ...options, prefetchSize: prefetchCount });
  }

  /** One reply queue per driver, created at the first call and reused (as oslo). */
  private ensureReplyQueue(): string {
    if (this.replyQueue) return this.replyQueue;
    const queue = newReplyAddress();
    this.broker.declareQueue(queue);
    this.broker.consume(queue, (d) => this.acceptReplyBody(d.body, { queue }), { noAck: true });
    return (this.replyQueue = queue);
  }
}
