// The memory:// listener: broker consumers on oslo's queues (declared by topology.ts) pushing
// through the shared inbound pipeline into the listener.
import { requeueReason } from '../../contract/dead-letters.js';
import { InboundPushSource, type ListenerKind, type Subscriptions } from '../../contract/inbound.js';
import type { ReceivedMessage } from '../../contract/incoming-message.js';
import type { DeliveryStats } from '../../contract/delivery-stats.js';
import type { ReplySender } from '../../contract/messages.js';
import type { Logger } from '../../core/logger.js';
import { keepDeadLetter } from './dead-letters.js';
import type { MemoryBroker, MemoryConsumer, MemoryDelivery } from './memory-broker.js';
import type { ListenerQueues } from './topology.js';

/** What a listener is built with. */
export interface MemoryListenerOptions {
  readonly broker: MemoryBroker;
  readonly logger: Logger;
  /** Per-consumer unacked limit; 0 = unlimited. */
  readonly prefetchCount: number;
  readonly dedupWindow: number;
  /** Deliveries of a notification before a requeue dead-letters it; 0 = never. */
  readonly maxDeliveries: number;
  /** Larger bodies are rejected as malformed; 0 = no limit. */
  readonly maxMessageBytes?: number;
  readonly replies: ReplySender;
  /** The driver's delivery counters. */
  readonly stats: DeliveryStats;
  /** The pool of a notification listener. */
  readonly pool?: string;
  /** What a pooled notification listener subscribed to (its pool's queue may carry other topics). */
  readonly subscriptions?: Subscriptions;
  /** Declares and binds the listener's queues; called when it subscribes. */
  readonly declare: () => ListenerQueues;
}

/**
 * An RPC or notification listener. A delivery's generation is the index of the consumer it came
 * from, so settling acts on that consumer, as AMQP acks on the channel of the delivery.
 */
export class MemoryListener<M extends ReceivedMessage> extends InboundPushSource<M, MemoryDelivery> {
  private readonly consumers: MemoryConsumer[] = [];
  private privateQueues: readonly string[] = [];

  constructor(
    kind: ListenerKind,
    private readonly options: MemoryListenerOptions,
  ) {
    super(kind, options);
  }

  /** Declares, binds and consumes; after it returns every matching publish reaches this listener. */
  subscribe(): void {
    const { queues, privateQueues } = this.options.declare();
    this.privateQueues = privateQueues;
    for (const queue of queues) {
      const generation = this.consumers.length;
      const onDelivery = (delivery: MemoryDelivery): void => {
        const message = this.receive(delivery.body, delivery, generation);
        if (message !== undefined) this.sink!.deliver(message);
      };
      this.consumers.push(this.options.broker.consume(queue, onDelivery, { prefetch: this.options.prefetchCount }));
    }
  }

  /** Stops taking messages (consumers cancelled); unacked ones stay with this listener. Idempotent. */
  async stop(): Promise<void> {
    for (const consumer of this.consumers) consumer.cancel();
  }

  /** Gives unacked messages back (channel close) and deletes private queues. Idempotent. */
  async cleanup(): Promise<void> {
    for (const consumer of this.consumers) consumer.close();
    for (const queue of this.privateQueues) this.options.broker.deleteQueue(queue);
  }

  ack(delivery: MemoryDelivery, consumer: number): boolean {
    return this.settled(this.consumers[consumer].ack(delivery.deliveryTag), 'ack', delivery);
  }

  /** Requeues; a notification delivered `maxDeliveries` times goes to the dead letters instead. */
  requeue(delivery: MemoryDelivery, consumer: number, reason?: unknown): void {
    const max = this.options.maxDeliveries;
    if (max === 0 || delivery.deliveries < max) {
      this.settled(this.consumers[consumer].reject(delivery.deliveryTag, true), 'requeue', delivery);
      return;
    }
    if (!this.settled(this.consumers[consumer].reject(delivery.deliveryTag, false), 'dead-letter', delivery)) return;
    const error = requeueReason(reason, `requeued ${delivery.deliveries} times (maxDeliveries ${max})`);
    this.setAside(delivery, error);
    this.options.stats.deadLettered(this.address(delivery), 'max_deliveries', this.options.pool);
    this.options.logger.warn('Notification dead-lettered after maxDeliveries', { ...this.describe(delivery), deliveries: delivery.deliveries, maxDeliveries: max });
  }

  /** Another topic's notification from a shared pool queue: back to the queue, not counted as a delivery (whatever maxDeliveries says). */
  giveBack(delivery: MemoryDelivery, consumer: number): void {
    this.settled(this.consumers[consumer].giveBack(delivery.deliveryTag), 'give-back', delivery);
  }

  /** A malformed message (logged and counted by the pipeline): kept among the dead letters. */
  reject(delivery: MemoryDelivery, consumer: number): void {
    if (this.consumers[consumer].reject(delivery.deliveryTag, false)) this.setAside(delivery, 'malformed message');
  }

  describe(delivery: MemoryDelivery): Record<string, unknown> {
    return { queue: delivery.queue, exchange: delivery.exchange, routingKey: delivery.routingKey };
  }

  deliveries(delivery: MemoryDelivery): number {
    return delivery.deliveries;
  }

  address(delivery: MemoryDelivery): string {
    return delivery.routingKey;
  }

  exchange(delivery: MemoryDelivery): string {
    return delivery.exchange;
  }

  private setAside(delivery: MemoryDelivery, error: string): void {
    const { body, exchange, routingKey, deliveries } = delivery;
    const dropped = keepDeadLetter(this.options.broker, { address: this.address(delivery), pool: this.options.pool, body, error, deliveries, exchange, routingKey });
    if (dropped) this.options.logger.warn('The oldest memory:// dead letter was dropped to keep the bound', { queue: delivery.queue });
  }

  private settled(ok: boolean, what: string, delivery: MemoryDelivery): boolean {
    if (!ok) this.options.logger.debug(`${what} of a message whose consumer is closed ignored (it was requeued)`, { queue: delivery.queue });
    return ok;
  }
}
