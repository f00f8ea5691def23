// Listeners of memory://: broker consumers feeding a BufferedPollStyleListener. They declare
// and bind the same queues as oslo's rabbit driver, reject malformed bodies and dedupe on
// `_unique_id`.
import { DuplicateMessageChecker } from '../../driver/dedup.js';
import { decodeBody, newHexId } from '../../driver/envelope.js';
import type { IncomingMessage } from '../../driver/incoming-message.js';
import { BufferedPollStyleListener } from '../../driver/poll-style-listener.js';
import type { DriverMessage } from '../../driver/types.js';
import { parseNotification, parseRpcRequest, type ParsedNotification, type ParsedRpcRequest } from '../../driver/wire.js';
import type { Logger } from '../../logger.js';
import type { MemoryBroker, MemoryConsumer, MemoryDelivery } from './memory-broker.js';
import { MemoryNotificationMessage, MemoryRpcIncomingMessage, type ReplySender } from './memory-message.js';

/** What a listener needs from its driver. */
export interface MemoryListenerDeps {
  readonly broker: MemoryBroker;
  readonly logger: Logger;
  /** Per-consumer unacked limit; 0 = unlimited. */
  readonly prefetchCount: number;
  readonly dedupWindow: number;
  readonly replier: ReplySender;
  /** Called once when the listener is cleaned up, so the driver stops tracking it. */
  readonly onCleanup: (listener: DetachableListener) => void;
}

/** What the driver keeps of a listener: a way to cut it off when the driver is cleaned up. */
export interface DetachableListener {
  detach(): void;
}

/** Consumers + buffer + malformed-message handling shared by RPC and notification listeners. */
export abstract class MemoryListener<M extends IncomingMessage = IncomingMessage> extends BufferedPollStyleListener<M> implements DetachableListener {
  protected readonly consumers: MemoryConsumer[] = [];
  protected readonly dedup: DuplicateMessageChecker;
  /** Queues private to this listener, deleted on cleanup. */
  protected readonly privateQueues: string[] = [];
  private stopped = false;
  private cleaned = false;

  constructor(protected readonly deps: MemoryListenerDeps) {
    super(deps.prefetchCount > 0 ? deps.prefetchCount : -1);
    this.dedup = new DuplicateMessageChecker(deps.dedupWindow);
  }

  /** Declares, binds and consumes; after it returns every matching publish reaches this listener. */
  abstract subscribe(): void;

  /** Stops taking messages; what is already buffered is still handed out by poll(). */
  override async stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      for (const consumer of this.consumers) consumer.cancel();
    }
    await super.stop();
  }

  /** Gives unacked messages back (channel close), drops the buffer and deletes private queues. Idempotent. */
  override async cleanup(): Promise<void> {
    await this.stop();
    this.release();
  }

  /**
   * The driver's connection is gone (driver cleanup): no more messages, unacked ones go back
   * to their queues. The buffer is not closed, so a running poll loop waits instead of spinning.
   */
  detach(): void {
    this.stopped = true;
    this.release();
  }

  protected consume(queue: string): void {
    const consumer: MemoryConsumer = this.deps.broker.consume(queue, (delivery) => this.onDelivery(consumer, delivery), {
      prefetch: this.deps.prefetchCount,
    });
    this.consumers.push(consumer);
  }

  protected abstract onDelivery(consumer: MemoryConsumer, delivery: MemoryDelivery): void;

  /** Decodes a body; a malformed one is rejected without requeue and logged (never its content). */
  protected decode(consumer: MemoryConsumer, delivery: MemoryDelivery): DriverMessage | undefined {
    try {
      return decodeBody(delivery.body);
    } catch (err) {
      this.rejectMalformed(consumer, delivery, (err as Error).message);
      return undefined;
    }
  }

  protected rejectMalformed(consumer: MemoryConsumer, delivery: MemoryDelivery, reason: string): void {
    consumer.reject(delivery.deliveryTag, false);
    this.deps.logger.warn('rejected a malformed message', {
      queue: delivery.queue,
      exchange: delivery.exchange,
      routingKey: delivery.routingKey,
      bytes: delivery.body.length,
      reason,
    });
  }

  /** Returns true (after acking it) when the message was already seen within the window. */
  protected dropDuplicate(consumer: MemoryConsumer, delivery: MemoryDelivery, uniqueId: string, record: boolean): boolean {
    const seen = record ? this.dedup.checkAndAdd(uniqueId) : this.dedup.has(uniqueId);
    if (!seen) return false;
    consumer.ack(delivery.deliveryTag);
    this.deps.logger.info('dropped a duplicate message', { queue: delivery.queue, uniqueId });
    return true;
  }

  private release(): void {
    if (this.cleaned) return;
    this.cleaned = true;
    for (const consumer of this.consumers) consumer.close();
    this.buffer.drain();
    for (const queue of this.privateQueues) this.deps.broker.deleteQueue(queue);
    this.deps.onCleanup(this);
  }
}

/**
 * An RPC server's subscription: `<topic>` on the target's exchange (shared round-robin),
 * `<topic>.<server>`, and a private queue on the `<topic>_fanout` exchange.
 */
export class MemoryRpcListener extends MemoryListener<MemoryRpcIncomingMessage> {
  constructor(
    deps: MemoryListenerDeps,
    private readonly exchange: string,
    private readonly topic: string,
    private readonly server: string | undefined,
  ) {
    super(deps);
  }

  subscribe(): void {
    const { broker } = this.deps;
    broker.declareExchange(this.exchange, 'topic');
    const keys = this.server === undefined ? [this.topic] : [this.topic, `${this.topic}.${this.server}`];
    for (const key of keys) {
      broker.declareQueue(key);
      broker.bindQueue(key, this.exchange, key);
    }
    const fanoutExchange = `${this.topic}_fanout`;
    const fanoutQueue = `${this.topic}_fanout_${newHexId()}`;
    broker.declareExchange(fanoutExchange, 'fanout');
    broker.declareQueue(fanoutQueue);
    broker.bindQueue(fanoutQueue, fanoutExchange, this.topic);
    this.privateQueues.push(fanoutQueue);
    for (const key of keys) this.consume(key);
    this.consume(fanoutQueue);
  }

  protected onDelivery(consumer: MemoryConsumer, delivery: MemoryDelivery): void {
    const raw = this.decode(consumer, delivery);
    if (!raw) return;
    let req: ParsedRpcRequest;
    try {
      req = parseRpcRequest(raw);
    } catch (err) {
      this.rejectMalformed(consumer, delivery, (err as Error).message);
      return;
    }
    if (req.uniqueId !== undefined && this.dropDuplicate(consumer, delivery, req.uniqueId, true)) return;
    // At-most-once, as oslo: the request is acknowledged before anyone handles it.
    consumer.ack(delivery.deliveryTag);
    const incoming = new MemoryRpcIncomingMessage(req.ctx, req.message, req.uniqueId, delivery, req, this.deps.replier, this.deps.logger);
    this.deliver(incoming);
  }
}

/**
 * A notification subscription on `<topic>.<priority>` keys. Without a pool it consumes the
 * shared queue named like the key (also declared by notifiers: store-and-forward); with pool P
 * it consumes the queue `P`, bound to every key, so each pool gets one copy.
 */
export class MemoryNotificationListener extends MemoryListener<MemoryNotificationMessage> {
  constructor(
    deps: MemoryListenerDeps,
    /** [exchange, routing key] pairs. */
    private readonly bindings: ReadonlyArray<readonly [string, string]>,
    private readonly pool: string | undefined,
  ) {
    super(deps);
  }

  subscribe(): void {
    const { broker } = this.deps;
    const queues = new Set<string>();
    for (const [exchange, key] of this.bindings) {
      const queue = this.pool ?? key;
      broker.declareExchange(exchange, 'topic');
      broker.declareQueue(queue);
      broker.bindQueue(queue, exchange, key);
      queues.add(queue);
    }
    for (const queue of queues) this.consume(queue);
  }

  protected onDelivery(consumer: MemoryConsumer, delivery: MemoryDelivery): void {
    const raw = this.decode(consumer, delivery);
    if (!raw) return;
    let parsed: ParsedNotification;
    try {
      parsed = parseNotification(raw);
    } catch (err) {
      this.rejectMalformed(consumer, delivery, (err as Error).message);
      return;
    }
    const { message, ctx, uniqueId, messageId: msgId } = parsed;
    if (uniqueId !== undefined && this.dropDuplicate(consumer, delivery, uniqueId, false)) return;
    this.deliver(new MemoryNotificationMessage(ctx, message, msgId, delivery, consumer, uniqueId, this.dedup, this.deps.logger));
  }
}
