// Listeners of memory://: broker consumers pushing through the shared inbound pipeline into the
// listener. They declare and bind the same queues as oslo's rabbit driver.
import { NotificationInbound, RpcInbound, type DeliverySettler } from '../../driver/inbound.js';
import type { ReceivedMessage } from '../../driver/incoming-message.js';
import type { NotificationMessage, ReplySender, RpcMessage } from '../../driver/messages.js';
import type { ListenerSink, PushSource } from '../../driver/push-listener.js';
import type { Logger } from '../../logger.js';
import type { MemoryBroker, MemoryConsumer, MemoryDelivery } from './memory-broker.js';
import { declareNotificationQueues, declareRpcServer } from './topology.js';

/** What a listener needs from its driver. */
export interface MemoryListenerDeps {
  readonly broker: MemoryBroker;
  readonly logger: Logger;
  /** Per-consumer unacked limit; 0 = unlimited. */
  readonly prefetchCount: number;
  readonly dedupWindow: number;
  readonly replies: ReplySender;
}

/**
 * Consumers shared by RPC and notification listeners. A delivery's generation is the index of
 * the consumer it came from, so the settler acks on the right one.
 */
export abstract class MemoryListener<M extends ReceivedMessage = ReceivedMessage> implements PushSource<M>, DeliverySettler<MemoryDelivery> {
  protected readonly consumers: MemoryConsumer[] = [];
  /** Queues private to this listener, deleted on cleanup. */
  protected readonly privateQueues: string[] = [];
  private sink?: ListenerSink<M>;
  private stopped = false;
  private cleaned = false;

  constructor(protected readonly deps: MemoryListenerDeps) {}

  attach(sink: ListenerSink<M>): void {
    this.sink = sink;
  }

  /** Declares, binds and consumes; after it returns every matching publish reaches this listener. */
  abstract subscribe(): void;

  /** The message the pipeline makes of a delivery, or undefined when it settled it. */
  protected abstract receive(delivery: MemoryDelivery, consumer: number): M | undefined;

  /** Stops taking messages (consumers cancelled); unacked ones stay with this listener. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const consumer of this.consumers) consumer.cancel();
  }

  /** Gives unacked messages back (channel close) and deletes private queues. Idempotent. */
  async cleanup(): Promise<void> {
    await this.stop();
    if (this.cleaned) return;
    this.cleaned = true;
    for (const consumer of this.consumers) consumer.close();
    for (const queue of this.privateQueues) this.deps.broker.deleteQueue(queue);
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

  protected consume(queue: string): void {
    const index = this.consumers.length;
    const consumer = this.deps.broker.consume(
      queue,
      (delivery) => {
        const message = this.receive(delivery, index);
        if (message !== undefined) this.sink!.deliver(message);
      },
      { prefetch: this.deps.prefetchCount },
    );
    this.consumers.push(consumer);
  }

  private settled(ok: boolean, what: string, delivery: MemoryDelivery): boolean {
    if (!ok) this.deps.logger.debug(`${what} of a message whose consumer is closed ignored (it was requeued)`, { queue: delivery.queue });
    return ok;
  }
}

/**
 * An RPC server's subscription: `<topic>` on the target's exchange (shared round-robin),
 * `<topic>.<server>`, and a private queue on the `<topic>_fanout` exchange.
 */
export class MemoryRpcListener extends MemoryListener<RpcMessage<MemoryDelivery>> {
  private readonly inbound: RpcInbound<MemoryDelivery>;

  constructor(
    deps: MemoryListenerDeps,
    private readonly exchange: string,
    private readonly topic: string,
    private readonly server: string | undefined,
  ) {
    super(deps);
    this.inbound = new RpcInbound({ settler: this, logger: deps.logger, dedupWindow: deps.dedupWindow, replies: deps.replies });
  }

  subscribe(): void {
    const { shared, fanout } = declareRpcServer(this.deps.broker, this.exchange, this.topic, this.server);
    this.privateQueues.push(fanout);
    for (const queue of shared) this.consume(queue);
    this.consume(fanout);
  }

  protected receive(delivery: MemoryDelivery, consumer: number): RpcMessage<MemoryDelivery> | undefined {
    return this.inbound.receive(delivery.body, delivery, consumer);
  }
}

/**
 * A notification subscription on `<topic>.<priority>` addresses. Without a pool it consumes the
 * shared queue named like the address (also declared by notifiers: store-and-forward); with pool
 * P it consumes the queue `P`, bound to every address, so each pool gets one copy.
 */
export class MemoryNotificationListener extends MemoryListener<NotificationMessage<MemoryDelivery>> {
  private readonly inbound: NotificationInbound<MemoryDelivery>;

  constructor(
    deps: MemoryListenerDeps,
    /** [exchange, address] pairs. */
    private readonly bindings: ReadonlyArray<readonly [string, string]>,
    private readonly pool: string | undefined,
  ) {
    super(deps);
    this.inbound = new NotificationInbound({ settler: this, logger: deps.logger, dedupWindow: deps.dedupWindow });
  }

  subscribe(): void {
    for (const queue of declareNotificationQueues(this.deps.broker, this.bindings, this.pool)) this.consume(queue);
  }

  protected receive(delivery: MemoryDelivery, consumer: number): NotificationMessage<MemoryDelivery> | undefined {
    return this.inbound.receive(delivery.body, delivery, consumer);
  }
}
