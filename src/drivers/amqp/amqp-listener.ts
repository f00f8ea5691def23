// A listener on its own AMQP connection: declares and consumes its queues (again after every
// reconnect) and feeds deliveries to the shared inbound pipeline, which buffers for polling.
// A delivery's generation is the id of the channel it came from. Notifications count their
// deliveries and end in the dead letters of their address (dead-letters.ts).
import { hostname } from 'node:os';
import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { requeueReason } from '../../contract/dead-letters.js';
import { newHexId } from '../../contract/envelope.js';
import { InboundPushSource, type ListenerKind, type Subscriptions } from '../../contract/inbound.js';
import type { ReceivedMessage } from '../../contract/incoming-message.js';
import type { NotificationMessage, ReplySender } from '../../contract/messages.js';
import type { DeadLetterReason, DeliveryStats } from '../../contract/delivery-stats.js';
import type { Logger } from '../../core/logger.js';
import { settledWithin } from '../../core/lifecycle.js';
import { withRetry } from '../../core/retry.js';
import { AckBatcher } from './ack-batcher.js';
import { keepingEncoding, readBody } from './compression.js';
import type { AmqpConnection } from './connection.js';
import { parseDeliveryHeaders, type ParsedDeliveryHeaders } from './delivery-headers.js';
import { declareMismatch, isPreconditionFailed, toMessagingError } from './errors.js';
import type { ResolvedAmqpOptions } from './options.js';
import type { Publisher } from './publisher.js';
import { consumerArguments, deadLetterQueue, deadLetterQueueName, HEADERS, type ConsumerSpec } from './topology.js';

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
  /** What each consumer tag consumes, for the deliveries of that consumer. */
  private readonly specByTag = new Map<string, ConsumerSpec>();
  /** The routing keys (addresses) each queue is bound to. */
  private readonly addresses: Map<ConsumerSpec, readonly string[]>;
  /** A pooled notification listener: its queue may carry other topics of the pool (oslo names it after the pool alone). */
  private readonly sharedPoolQueue: boolean;
  /** Copies being re-published (requeues, dead letters): cleanup waits for them before closing the channel. */
  private readonly republishing = new Set<Promise<void>>();
  /**
   * The offset after the last delivery of each stream (`rabbit_stream_fanout`): a new channel
   * reads on from there, so a reconnect neither loses nor repeats a fanout cast (oslo 14.7+).
   */
  private readonly streamOffsets = new Map<ConsumerSpec, number>();
  /** One of its queues is a stream. */
  private readonly readsStream: boolean;

  constructor(
    readonly kind: ListenerKind,
    private readonly conn: AmqpConnection,
    readonly specs: readonly ConsumerSpec[],
    private readonly options: ResolvedAmqpOptions,
    private readonly logger: Logger,
    replies: ReplySender,
    private readonly stats: DeliveryStats,
    /** The driver's confirmed publisher: requeued copies and dead letters go through it. */
    private readonly publisher: Publisher,
    private readonly pool?: string,
    /** The `basic.qos` prefetch of its channels; 0 = unlimited. */
    private readonly prefetch = options.prefetchCount ?? 0,
    /** What a pooled notification listener subscribed to (its pool's queue may carry other topics). */
    subscriptions?: Subscriptions,
  ) {
    super(kind, { logger, dedupWindow: options.dedupWindow, replies, stats, pool, maxMessageBytes: options.maxMessageBytes, subscriptions });
    this.sharedPoolQueue = subscriptions !== undefined;
    this.readsStream = specs.some((s) => s.stream);
    this.addresses = new Map(specs.map((s) => [s, [...new Set(s.bindings.map((b) => b.routingKey))]]));
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
    if (this.republishing.size > 0) await settledWithin(this.republishing, this.options.shutdownTimeout);
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

  /**
   * With `maxDeliveries`: re-publishes the body to the queue it came from with its count, and
   * acknowledges the original once the broker confirmed the copy (a failure in between leaves
   * both, never neither); the last allowed delivery goes to the dead letters instead. Without:
   * `basic.nack` with requeue (the broker counts on quorum queues only).
   */
  requeue(raw: ConsumeMessage, channelId: number, reason?: unknown): void {
    const max = this.options.maxDeliveries;
    if (max > 0 && this.batchers.has(channelId)) {
      const n = this.deliveries(raw);
      const { address } = this.headersOf(raw);
      if (n >= max) return this.setAside(raw, channelId, address, requeueReason(reason, `requeued ${n} times (maxDeliveries ${max})`), n, 'max_deliveries');
      const headers = { [HEADERS.deliveries]: n, [HEADERS.address]: address };
      return this.republish(raw, channelId, this.specOf(raw).queue.name, headers, () => this.nackRequeue(raw, channelId), 'Could not re-publish a requeued notification; requeued without counting');
    }
    this.nackRequeue(raw, channelId);
  }

  /**
   * Another topic's notification from a shared pool queue: back to the queue, not counted as a
   * delivery. Where deliveries are counted (`maxDeliveries`, a quorum `x-delivery-limit`) a
   * `basic.nack` would count it (a quorum queue's `x-delivery-count`, a classic queue's
   * redelivered flag), so a copy goes back instead, naming its address and the deliveries before
   * this one, and the original is acked once the copy is confirmed.
   */
  giveBack(raw: ConsumeMessage, channelId: number): void {
    if ((this.options.maxDeliveries > 0 || this.options.quorumDeliveryLimit > 0) && this.batchers.has(channelId)) {
      const address = this.publishedTo(raw);
      const h = parseDeliveryHeaders(raw, [address]);
      const earlier = (h.ok ? h.previousDeliveries : 0) + this.copyDeliveries(raw) - 1;
      const headers: Record<string, unknown> = { [HEADERS.address]: address };
      if (earlier > 0) headers[HEADERS.deliveries] = earlier;
      return this.republish(raw, channelId, this.specOf(raw).queue.name, headers, () => this.nackRequeue(raw, channelId), 'Could not give back a notification of another topic as a copy; requeued (counted as a delivery)');
    }
    this.nackRequeue(raw, channelId);
  }

  /** Malformed: a notification goes to the dead letters of its address; an RPC request is rejected (dropped). */
  reject(raw: ConsumeMessage, channelId: number): void {
    if (this.kind === 'notification') return this.setAside(raw, channelId, this.headersOf(raw).address, 'malformed message', this.deliveries(raw));
    this.drop(raw, channelId);
  }

  describe(raw: ConsumeMessage): Record<string, unknown> {
    return { exchange: raw.fields.exchange, routingKey: raw.fields.routingKey, deliveryTag: raw.fields.deliveryTag };
  }

  /** This copy's deliveries (quorum queues count them; classic queues only flag a redelivery) plus the earlier copies' count in `x-tidings-deliveries`. */
  deliveries(raw: ConsumeMessage): number {
    const copy = this.copyDeliveries(raw);
    if (this.kind !== 'notification') return copy;
    const h = this.headersOf(raw);
    return (h.ok ? h.previousDeliveries : 0) + copy;
  }

  /** Deliveries of this copy, this one included. */
  private copyDeliveries(raw: ConsumeMessage): number {
    if (!raw.fields.redelivered) return 1;
    // Quorum queues count the earlier deliveries; classic queues only flag a redelivery, and there
    // the header is whatever the publisher put: a value a broker could not have counted is ignored.
    const earlier: unknown = raw.properties.headers?.['x-delivery-count'];
    return typeof earlier === 'number' && Number.isInteger(earlier) && earlier > 0 && earlier < MAX_DELIVERY_COUNT ? earlier + 1 : 2;
  }

  /** The address it was published to: a re-published copy names it in `x-tidings-address`. */
  address(raw: ConsumeMessage): string {
    if (this.kind !== 'notification') return raw.fields.routingKey;
    // In a pool queue shared with other topics, another topic's address is not one of ours: it is
    // what the inbound pipeline needs to see to give the notification back.
    if (this.sharedPoolQueue && !this.binds(raw)) return this.publishedTo(raw);
    return this.headersOf(raw).address;
  }

  /** True when this listener's queue binding names the address `raw` says it was published to. */
  private binds(raw: ConsumeMessage): boolean {
    return this.addresses.get(this.specOf(raw))!.includes(this.publishedTo(raw));
  }

  private specOf(raw: ConsumeMessage): ConsumerSpec {
    return this.specByTag.get(raw.fields.consumerTag) ?? this.specs[0];
  }

  private headersOf(raw: ConsumeMessage): ParsedDeliveryHeaders {
    return parseDeliveryHeaders(raw, this.addresses.get(this.specOf(raw))!);
  }

  private nackRequeue(raw: ConsumeMessage, channelId: number): void {
    const acks = this.batchers.get(channelId);
    if (!acks || !safely(() => acks.requeue(raw))) {
      this.logger.debug('Could not requeue a message: its channel is gone (the broker redelivers it)', { deliveryTag: raw.fields.deliveryTag });
    }
  }

  private drop(raw: ConsumeMessage, channelId: number): void {
    this.batchers.get(channelId)?.untrack(raw);
    const ch = this.channels.get(channelId);
    // A stream delivery is never removed: acknowledging it is how it is skipped (a reject closes the connection).
    if (ch) safely(() => (this.specOf(raw).stream ? ch.ack(raw) : ch.reject(raw, false)));
  }

  /**
   * Moves `raw` to the dead-letter queue of `address` with why, its count, the pool that gave up
   * on it, this consumer and the time; acknowledges it once confirmed. `counted` is the
   * reason to count it under (a malformed body was counted by the inbound pipeline already).
   */
  private setAside(raw: ConsumeMessage, channelId: number, address: string, error: string, deliveries: number, counted?: DeadLetterReason): void {
    const queue = this.specOf(raw).queue.name;
    const dead = deadLetterQueueName(address);
    const headers: Record<string, unknown> = {
      [HEADERS.id]: newHexId(),
      [HEADERS.deliveries]: deliveries,
      [HEADERS.address]: address,
      [HEADERS.error]: error,
      [HEADERS.deadAt]: new Date().toISOString(),
      [HEADERS.consumer]: `${hostname()}/${process.pid}/${raw.fields.consumerTag}`,
    };
    if (this.pool !== undefined) headers[HEADERS.pool] = this.pool;
    if (counted === 'max_deliveries') this.logger.warn('Notification dead-lettered after maxDeliveries', { address, queue, deadLetterQueue: dead, deliveries });
    // A malformed one falls back to the rejection it had before; a failing one to a plain requeue.
    const fallback = counted === 'max_deliveries' ? () => this.nackRequeue(raw, channelId) : () => this.drop(raw, channelId);
    this.republish(raw, channelId, dead, headers, fallback, 'Could not dead-letter a notification', () => {
      if (counted !== undefined) this.stats.deadLettered(address, counted, this.pool);
    });
  }

  /** Publishes `raw`'s body to `queue` (default exchange) with `headers`; acks `raw` once confirmed, else logs and runs `fallback`. */
  private republish(raw: ConsumeMessage, channelId: number, queue: string, headers: Record<string, unknown>, fallback: () => void, failure: string, done?: () => void): void {
    // Tracked since its arrival until its ack, so no coalesced ack covers it before the copy is confirmed.
    const p = this.publisher.publish('', queue, raw.content, { headers: keepingEncoding(raw.properties, headers), mandatory: true }).then(
      () => {
        done?.();
        this.ack(raw, channelId);
      },
      (err: unknown) => {
        this.logger.error(failure, { queue, deliveryTag: raw.fields.deliveryTag, err });
        fallback();
      },
    );
    this.republishing.add(p);
    void p.finally(() => this.republishing.delete(p));
  }

  unwrapBody(_body: Uint8Array | string, raw: ConsumeMessage): Uint8Array | string {
    return readBody(raw.content, raw.properties, this.options.maxMessageBytes);
  }

  exchange(raw: ConsumeMessage): string {
    if (raw.fields.exchange !== '' || this.kind !== 'notification') return raw.fields.exchange;
    // A copy re-published to this queue through the default exchange (a counted requeue, a
    // replay): the exchange of the binding its address was first routed by.
    const address = this.publishedTo(raw);
    return this.specOf(raw).bindings.find((b) => b.routingKey === address)?.exchange.name ?? '';
  }

  /** The address a notification says it was published to: a copy's `x-tidings-address`, else its routing key (unchecked). */
  private publishedTo(raw: ConsumeMessage): string {
    const named: unknown = raw.properties.headers?.[HEADERS.address];
    return raw.fields.exchange === '' && typeof named === 'string' ? named : raw.fields.routingKey;
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
      const deadLetterQueues = new Set<string>();
      for (const spec of this.specs) {
        for (const b of spec.bindings) {
          if (exchanges.has(b.exchange.name)) continue;
          await this.declare('exchange', b.exchange.name, () => ch.assertExchange(b.exchange.name, b.exchange.type, b.exchange.options));
          exchanges.add(b.exchange.name);
        }
        await this.declare('queue', spec.queue.name, () => ch.assertQueue(spec.queue.name, spec.queue.options));
        for (const b of spec.bindings) await ch.bindQueue(spec.queue.name, b.exchange.name, b.routingKey);
        if (this.kind !== 'notification') continue;
        for (const address of this.addresses.get(spec)!) {
          const dlq = deadLetterQueue(address, this.options);
          if (deadLetterQueues.has(dlq.name)) continue;
          await this.declare('queue', dlq.name, () => ch.assertQueue(dlq.name, dlq.options));
          deadLetterQueues.add(dlq.name);
        }
      }
      for (const spec of this.specs) {
        const args = consumerArguments(this.options, spec.stream ? { offset: this.streamOffsets.get(spec) } : undefined);
        const { consumerTag } = await ch.consume(spec.queue.name, (m) => this.onDelivery(ch, id, m, spec), { noAck: false, ...args });
        this.specByTag.set(consumerTag, spec);
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
    for (const tag of this.consumerTags) this.specByTag.delete(tag);
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

  /**
   * False when a notification is set aside on receipt, never handled: its tidings headers are
   * forged (logged, counted as malformed), or it was delivered more than `maxDeliveries` times
   * without being settled (a quorum queue counts a consumer that crashed or lost its connection).
   */
  private admit(raw: ConsumeMessage, channelId: number): boolean {
    // Another topic's notification in a shared pool queue: given back by the inbound pipeline, never judged here.
    if (this.sharedPoolQueue && !this.binds(raw)) return true;
    const h = this.headersOf(raw);
    if (!h.ok) {
      this.logger.warn('Dead-lettering a notification with malformed tidings headers (not handled)', { ...this.describe(raw), reason: h.reason });
      this.setAside(raw, channelId, h.address, `malformed headers: ${h.reason}`, 1, 'malformed');
      return false;
    }
    const max = this.options.maxDeliveries;
    if (max === 0) return true;
    const n = this.deliveries(raw);
    if (n <= max) return true;
    this.setAside(raw, channelId, h.address, `delivered ${n} times without being settled (maxDeliveries ${max})`, n, 'max_deliveries');
    return false;
  }

  /** Remembers the offset after a stream delivery (RabbitMQ sets `x-stream-offset`, whatever the publisher wrote). */
  private noteStreamOffset(raw: ConsumeMessage): void {
    const spec = this.specOf(raw);
    if (!spec.stream) return;
    const offset: unknown = raw.properties.headers?.['x-stream-offset'];
    if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) return;
    this.streamOffsets.set(spec, Math.max(offset + 1, this.streamOffsets.get(spec) ?? 0));
  }

  /** Buffered notifications of a dead channel will be redelivered by the broker: drop our copies. */
  private purgeBuffered(channelId: number): void {
    const dead = this.sink!.withdraw((m) => (m as unknown as NotificationMessage<ConsumeMessage>).generation === channelId);
    for (const m of dead) this.notifications?.abandon(m as unknown as NotificationMessage<ConsumeMessage>);
  }

  private onDelivery(ch: Channel, id: number, raw: ConsumeMessage | null, spec: ConsumerSpec): void {
    if (raw === null) {
      // A deleted stream cancels its consumers: the next one starts afresh (oslo resets the offset too).
      this.streamOffsets.delete(spec);
      this.logger.warn('Consumer cancelled by the broker; subscribing again', { queues: this.queueNames() });
      ch.close().catch(() => undefined);
      return;
    }
    // Notification acks are batched: the batcher must know every delivery not settled yet before
    // anything is acked (a foreign one held for a while, or one being re-published, included), or
    // a multiple-ack covers it.
    this.batchers.get(id)?.track(raw);
    if (this.readsStream) this.noteStreamOffset(raw);
    if (this.kind === 'notification' && !this.admit(raw, id)) return;
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
