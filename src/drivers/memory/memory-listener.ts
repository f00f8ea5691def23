// The memory:// listener: broker consumers on oslo's queues (declared by topology.ts) pushing
// through the shared inbound pipeline into the listener.
import { InboundPushSource, type ListenerKind, type Subscriptions } from '../../contract/inbound.js';
import type { ReceivedMessage } from '../../contract/incoming-message.js';
import type { DeliveryStats } from '../../contract/delivery-stats.js';
import type { ReplySender } from '../../contract/messages.js';
import type { Logger } from '../../core/logger.js';
import type { MemoryBroker, MemoryConsumer, MemoryDelivery } from './memory-broker.js';
import type { ListenerQueues } from './topology.js';

/** What a listener is built with. */
export interface MemoryListenerOptions {
  readonly broker: MemoryBroker;
  readonly logger: Logger;
  /** Per-consumer unacked limit; 0 = unlimited. */
  readonly prefetchCount: number;
  readonly dedupWindow: number;
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

  requeue(delivery: MemoryDelivery, consumer: number): void {
    this.settled(this.consumers[consumer].reject(delivery.deliveryTag, true), 'requeue', delivery);
  }

  reject(delivery: MemoryDelivery, consumer: number): void {
    this.consumers[consumer].reject(delivery.deliveryTag, false);
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

  private settled(ok: boolean, what: string, delivery: MemoryDelivery): boolean {
    if (!ok) this.options.logger.debug(`${what} of a message whose consumer is closed ignored (it was requeued)`, { queue: delivery.queue });
    return ok;
  }
}
