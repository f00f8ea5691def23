// A listener on its own AMQP connection: declares and consumes its queues (again after every
// reconnect) and feeds deliveries to the shared inbound pipeline, which buffers for polling.
// A delivery's generation is the id of the channel it came from.
import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { InboundPushSource, type ListenerKind, type Subscriptions } from '../../contract/inbound.js';
import type { ReceivedMessage } from '../../contract/incoming-message.js';
import type { NotificationMessage, ReplySender } from '../../contract/messages.js';
import type { DeliveryStats } from '../../contract/delivery-stats.js';
import type { Logger } from '../../core/logger.js';
import { withRetry } from '../../core/retry.js';
import { AckBatcher } from './ack-batcher.js';
import { readBody } from './compression.js';
import type { AmqpConnection } from './connection.js';
import { declareMismatch, isPreconditionFailed, toMessagingError } from './errors.js';
import type { ResolvedAmqpOptions } from './options.js';
import { consumerArguments, type ConsumerSpec } from './topology.js';

/** Above this, an `x-delivery-count` header is not a count RabbitMQ kept (a forged one on a classic queue). */
const MAX_DELIVERY_COUNT = 1_000_000;

export class AmqpListener<M extends ReceivedMessage = ReceivedMessage> extends InboundPushSource<M, ConsumeMessage> {
  private channel?: Channel;
  private channelId = 0;
  private consumerTags: string[] = [];
  private stopped = false;
  private cleaning?: Promise<void>;
  private removeHook?: () => void;
  private resubscribing = false;
  private retryTimer?: ReturnType<typeof setTimeout>;
  /** Open channels by id, until they close. */
  private readonly channels = new Map<number, Channel>();
  /** Notification acks coalesced per channel, by channel id; a closed channel's entry is gone. */
  private readonly batchers = new Map<number, AckBatcher>();

  constructor(
    readonly kind: ListenerKind,
    private readonly conn: AmqpConnection,
    readonly specs: readonly ConsumerSpec[],
    private readonly options: ResolvedAmqpOptions,
    private readonly logger: Logger,
    replies: ReplySender,
    stats: DeliveryStats,
    pool?: string,
    /** The `basic.qos` prefetch of its channels; 0 = unlimited. */
    private readonly prefetch = options.prefetchCount ?? 0,
    /** What a pooled notification listener subscribed to (its pool's queue may carry other topics). */
    subscriptions?: Subscriptions,
  ) {
    super(kind, { logger, dedupWindow: options.dedupWindow, replies, stats, pool, maxMessageBytes: options.maxMessageBytes, subscriptions });
  }

  /** Declares and consumes; resolves once subscribed. Retries connection failures (oslo: forever). */
  async start(): Promise<void> {
    await withRetry(
      async () => {
        const model = await this.conn.ensureOpen();
        await this.subscribe(model, this.conn.current?.generation ?? 0);
      },
      {
        intervalMs: this.options.retryInterval,
        backoffMs: this.options.retryBackoff,
        maxIntervalMs: this.options.intervalMax,
        onRetry: ({ attempt, delayMs, error }) => this.logger.warn('Listener could not subscribe; retrying', { attempt, delayMs, err: error }),
      },
    );
    this.removeHook = this.conn.addOpenHook((model, generation) =>
      this.subscribe(model, generation).catch((err) => this.retrySubscribe(1, err)),
    );
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.removeHook?.();
    clearTimeout(this.retryTimer);
    const ch = this.channel;
    for (const tag of this.consumerTags.splice(0)) {
      if (ch) await this.conn.teardown(() => ch.cancel(tag));
    }
  }

  cleanup(): Promise<void> {
    this.cleaning ??= this.doCleanup();
    return this.cleaning;
  }

  private async doCleanup(): Promise<void> {
    await this.stop();
    // Handlers still running may acknowledge on this channel: give them shutdownTimeout.
    if (this.channel) await this.notifications?.whenSettled(this.options.shutdownTimeout);
    const ch = this.channel;
    if (ch) {
      for (const spec of this.specs) {
        if (spec.deleteOnCleanup) await this.conn.teardown(() => ch.deleteQueue(spec.queue.name));
      }
      this.batchers.get(this.channelId)?.flush();
      this.channel = undefined;
      await this.conn.teardown(() => ch.close());
    }
    await this.conn.close();
  }

  ack(raw: ConsumeMessage, channelId: number): boolean {
    const acks = this.batchers.get(channelId);
    if (acks) {
      acks.ack(raw);
      return true;
    }
    const ch = this.channels.get(channelId);
    if (ch && safely(() => ch.ack(raw))) return true;
    this.logger.debug('Could not acknowledge a message: its channel is gone (the broker redelivers it)', { deliveryTag: raw.fields.deliveryTag });
    return false;
  }

  requeue(raw: ConsumeMessage, channelId: number): void {
    const acks = this.batchers.get(channelId);
    if (!acks || !safely(() => acks.requeue(raw))) {
      this.logger.debug('Could not requeue a message: its channel is gone (the broker redelivers it)', { deliveryTag: raw.fields.deliveryTag });
    }
  }

  reject(raw: ConsumeMessage, channelId: number): void {
    this.batchers.get(channelId)?.untrack(raw);
    const ch = this.channels.get(channelId);
    if (ch) safely(() => ch.reject(raw, false));
  }

  describe(raw: ConsumeMessage): Record<string, unknown> {
    return { exchange: raw.fields.exchange, routingKey: raw.fields.routingKey, deliveryTag: raw.fields.deliveryTag };
  }

  deliveries(raw: ConsumeMessage): number {
    if (!raw.fields.redelivered) return 1;
    // Quorum queues count the earlier deliveries; classic queues only flag a redelivery, and there
    // the header is whatever the publisher put: a value a broker could not have counted is ignored.
    const earlier: unknown = raw.properties.headers?.['x-delivery-count'];
    return typeof earlier === 'number' && Number.isInteger(earlier) && earlier > 0 && earlier < MAX_DELIVERY_COUNT ? earlier + 1 : 2;
  }

  address(raw: ConsumeMessage): string {
    return raw.fields.routingKey;
  }

  unwrapBody(_body: Uint8Array | string, raw: ConsumeMessage): Uint8Array | string {
    return readBody(raw.content, raw.properties, this.options.maxMessageBytes);
  }

  exchange(raw: ConsumeMessage): string {
    return raw.fields.exchange;
  }

  private queueNames(): string[] {
    return this.specs.map((s) => s.queue.name);
  }

  private async subscribe(model: ChannelModel, generation: number): Promise<void> {
    if (this.stopped) return;
    let ch: Channel;
    try {
      ch = await model.createChannel();
    } catch (err) {
      throw toMessagingError(err, 'Could not open a listener channel');
    }
    const id = ++this.channelId;
    this.channels.set(id, ch);
    if (this.kind === 'notification') this.batchers.set(id, new AckBatcher(ch, this.logger));
    ch.on('error', (err: Error) => this.logger.warn('AMQP listener channel error', { queues: this.queueNames(), err }));
    ch.on('close', () => this.onChannelClosed(ch, id));
    const tags: string[] = [];
    try {
      if (this.prefetch > 0) await ch.prefetch(this.prefetch);
      const exchanges = new Set<string>();
      for (const spec of this.specs) {
        for (const b of spec.bindings) {
          if (exchanges.has(b.exchange.name)) continue;
          await this.declare('exchange', b.exchange.name, () => ch.assertExchange(b.exchange.name, b.exchange.type, b.exchange.options));
          exchanges.add(b.exchange.name);
        }
        await this.declare('queue', spec.queue.name, () => ch.assertQueue(spec.queue.name, spec.queue.options));
        for (const b of spec.bindings) await ch.bindQueue(spec.queue.name, b.exchange.name, b.routingKey);
      }
      const args = consumerArguments(this.options);
      for (const spec of this.specs) {
        const { consumerTag } = await ch.consume(spec.queue.name, (m) => this.onDelivery(ch, id, m), { noAck: false, ...args });
        tags.push(consumerTag);
      }
    } catch (err) {
      this.batchers.delete(id);
      this.channels.delete(id);
      ch.close().catch(() => undefined);
      throw toMessagingError(err, `Could not subscribe to ${this.queueNames().join(', ')}`);
    }
    this.channel = ch;
    this.consumerTags = tags;
    if (this.stopped) {
      for (const tag of tags) await ch.cancel(tag).catch(() => undefined);
      this.consumerTags = [];
    }
    this.logger.debug('Listener subscribed', { queues: this.queueNames(), generation, prefetch: this.prefetch });
  }

  private async declare(kind: 'queue' | 'exchange', name: string, fn: () => Promise<unknown>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      throw isPreconditionFailed(err) ? declareMismatch(kind, name, err) : err;
    }
  }

  private onChannelClosed(ch: Channel, id: number): void {
    this.batchers.delete(id);
    this.channels.delete(id);
    if (this.channel !== ch) return;
    this.channel = undefined;
    this.consumerTags = [];
    if (this.kind === 'notification') this.purgeBuffered(id);
    if (this.stopped || this.conn.isClosed || !this.conn.isOpen || this.resubscribing) return;
    // The channel died but the connection lives (consumer cancelled, channel error): subscribe again.
    this.resubscribing = true;
    setTimeout(() => {
      this.resubscribing = false;
      this.subscribeAgain(1);
    }, this.options.reconnectDelay + Math.random() * this.options.reconnectSplay).unref?.();
  }

  /**
   * Subscribing on an open connection failed (after a reconnect, or on a new channel): try again
   * with oslo's backoff for as long as the listener runs. On a cluster a durable classic queue
   * cannot be declared while its node is down, yet the connection to another node is fine: the
   * listener must come back once the node does, not stay silent until the next reconnect.
   */
  private retrySubscribe(attempt: number, err: unknown): void {
    if (this.stopped || this.conn.isClosed) return;
    const delayMs = this.conn.retryDelay(attempt);
    this.logger.error('Could not subscribe a listener; retrying', { queues: this.queueNames(), attempt, delayMs, err });
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.subscribeAgain(attempt + 1), delayMs);
    this.retryTimer.unref?.();
  }

  /** Subscribes on the current connection unless subscribed, stopped or disconnected (the next reconnect subscribes then). */
  private subscribeAgain(attempt: number): void {
    const cur = this.conn.current;
    if (!cur || this.stopped || this.channel) return;
    this.subscribe(cur.model, cur.generation).catch((err) => this.retrySubscribe(attempt, err));
  }

  /** Buffered notifications of a dead channel will be redelivered by the broker: drop our copies. */
  private purgeBuffered(channelId: number): void {
    const dead = this.sink!.withdraw((m) => (m as unknown as NotificationMessage<ConsumeMessage>).generation === channelId);
    for (const m of dead) this.notifications?.abandon(m as unknown as NotificationMessage<ConsumeMessage>);
  }

  private onDelivery(ch: Channel, id: number, raw: ConsumeMessage | null): void {
    if (raw === null) {
      this.logger.warn('Consumer cancelled by the broker; subscribing again', { queues: this.queueNames() });
      ch.close().catch(() => undefined);
      return;
    }
    // Notification acks are batched: the batcher must know every delivery not settled yet before
    // anything is acked (a foreign one held for a while included), or a multiple-ack covers it.
    this.batchers.get(id)?.track(raw);
    const message = this.receive(raw.content, raw, id);
    if (message === undefined) return;
    this.sink!.deliver(message);
  }
}

/** amqplib throws synchronously on a closed channel; an ack that cannot be sent is not fatal. */
function safely(fn: () => void): boolean {
  try {
    fn();
    return true;
  } catch {
    return false;
  }
}
