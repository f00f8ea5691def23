// A listener on its own AMQP connection: declares and consumes its queues (again after every
// reconnect), rejects malformed bodies, dedupes on `_unique_id`, and buffers for polling.
import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { DuplicateMessageChecker } from '../../driver/dedup.js';
import { decodeBody } from '../../driver/envelope.js';
import type { IncomingMessage } from '../../driver/incoming-message.js';
import { BufferedPollStyleListener } from '../../driver/poll-style-listener.js';
import { parseNotification, parseRpcRequest, type ParsedNotification, type ParsedRpcRequest } from '../../driver/wire.js';
import type { Logger } from '../../logger.js';
import { withRetry } from '../../retry.js';
import { AckBatcher } from './ack-batcher.js';
import { AmqpNotificationMessage, AmqpRpcIncomingMessage, type NotificationSettler, type ReplySender } from './amqp-message.js';
import type { AmqpConnection } from './connection.js';
import { declareMismatch, isPreconditionFailed, toMessagingError } from './errors.js';
import type { ResolvedAmqpOptions } from './options.js';
import type { ConsumerSpec } from './topology.js';

export type ListenerKind = 'rpc' | 'notification';

export class AmqpListener<M extends IncomingMessage = IncomingMessage> extends BufferedPollStyleListener<M> implements NotificationSettler {
  private channel?: Channel;
  private channelId = 0;
  private consumerTags: string[] = [];
  private stopped = false;
  private cleaning?: Promise<void>;
  private removeHook?: () => void;
  private resubscribing = false;
  private readonly dedup: DuplicateMessageChecker;
  /** `_unique_id`s handed out but not yet acked: a redelivered copy of one is a duplicate too. */
  private readonly inFlight = new Set<string>();
  /** Notifications delivered to the buffer and not yet acked or requeued. */
  private unsettled = 0;
  /** Notification acks coalesced per channel, by channel id; a closed channel's entry is gone. */
  private readonly batchers = new Map<number, AckBatcher>();

  constructor(
    readonly kind: ListenerKind,
    private readonly conn: AmqpConnection,
    readonly specs: readonly ConsumerSpec[],
    private readonly options: ResolvedAmqpOptions,
    private readonly logger: Logger,
    private readonly sendReply: ReplySender,
  ) {
    super(options.prefetchCount > 0 ? options.prefetchCount : -1);
    this.dedup = new DuplicateMessageChecker(options.dedupWindow);
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
      this.subscribe(model, generation).catch((err) => this.logger.error('Could not restore a listener after reconnect', { queues: this.queueNames(), err })),
    );
  }

  override async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.removeHook?.();
    const ch = this.channel;
    for (const tag of this.consumerTags.splice(0)) {
      await ch?.cancel(tag).catch(() => undefined);
    }
    await super.stop();
  }

  override cleanup(): Promise<void> {
    this.cleaning ??= this.doCleanup();
    return this.cleaning;
  }

  private async doCleanup(): Promise<void> {
    await this.stop();
    const deadline = Date.now() + this.options.shutdownTimeout;
    while (this.unsettled > 0 && this.channel && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const ch = this.channel;
    if (ch) {
      for (const spec of this.specs) {
        if (spec.deleteOnCleanup) await ch.deleteQueue(spec.queue.name).catch(() => undefined);
      }
      this.batchers.get(this.channelId)?.flush();
      this.channel = undefined;
      await ch.close().catch(() => undefined);
    }
    await this.conn.close();
  }

  ack(message: AmqpNotificationMessage): void {
    this.settle(message);
    if (message.uniqueId) this.dedup.add(message.uniqueId);
    const acks = this.batchers.get(message.channelId);
    if (acks) acks.ack(message.raw);
    else this.logger.debug('Acknowledged a notification whose channel is gone; its redelivery is dropped as a duplicate', { msgId: message.msgId });
  }

  requeue(message: AmqpNotificationMessage): void {
    this.settle(message);
    this.batchers.get(message.channelId)?.requeue(message.raw);
  }

  private settle(message: AmqpNotificationMessage): void {
    this.unsettled--;
    if (message.uniqueId) this.inFlight.delete(message.uniqueId);
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
    if (this.kind === 'notification') this.batchers.set(id, new AckBatcher(ch, this.logger));
    ch.on('error', (err: Error) => this.logger.warn('AMQP listener channel error', { queues: this.queueNames(), err }));
    ch.on('close', () => this.onChannelClosed(ch, id));
    const tags: string[] = [];
    try {
      if (this.options.prefetchCount > 0) await ch.prefetch(this.options.prefetchCount);
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
      const args = this.options.enableCancelOnFailover ? { arguments: { 'x-cancel-on-ha-failover': true } } : {};
      for (const spec of this.specs) {
        const { consumerTag } = await ch.consume(spec.queue.name, (m) => this.onDelivery(ch, id, m), { noAck: false, ...args });
        tags.push(consumerTag);
      }
    } catch (err) {
      this.batchers.delete(id);
      ch.close().catch(() => undefined);
      throw toMessagingError(err, `Could not subscribe to ${this.queueNames().join(', ')}`);
    }
    this.channel = ch;
    this.consumerTags = tags;
    if (this.stopped) {
      for (const tag of tags) await ch.cancel(tag).catch(() => undefined);
      this.consumerTags = [];
    }
    this.logger.debug('Listener subscribed', { queues: this.queueNames(), generation, prefetch: this.options.prefetchCount });
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
    if (this.channel !== ch) return;
    this.channel = undefined;
    this.consumerTags = [];
    if (this.kind === 'notification') this.purgeBuffered(id);
    if (this.stopped || this.conn.isClosed || !this.conn.isOpen || this.resubscribing) return;
    // The channel died but the connection lives (consumer cancelled, channel error): subscribe again.
    this.resubscribing = true;
    setTimeout(() => {
      this.resubscribing = false;
      const cur = this.conn.current;
      if (!cur || this.stopped || this.channel) return;
      this.subscribe(cur.model, cur.generation).catch((err) => this.logger.error('Could not re-subscribe a listener', { queues: this.queueNames(), err }));
    }, this.options.reconnectDelay).unref?.();
  }

  /** Buffered notifications of a dead channel will be redelivered by the broker: drop our copies. */
  private purgeBuffered(channelId: number): void {
    const items = this.buffer.drain();
    for (const item of items) {
      const n = item as unknown as AmqpNotificationMessage;
      if (n.channelId === channelId) {
        this.unsettled--;
        if (n.uniqueId) this.inFlight.delete(n.uniqueId);
      } else {
        this.buffer.push(item);
      }
    }
  }

  private onDelivery(ch: Channel, id: number, raw: ConsumeMessage | null): void {
    if (raw === null) {
      this.logger.warn('Consumer cancelled by the broker; subscribing again', { queues: this.queueNames() });
      ch.close().catch(() => undefined);
      return;
    }
    let parsed: ParsedRpcRequest | ParsedNotification;
    try {
      const body = decodeBody(raw.content);
      parsed = this.kind === 'rpc' ? parseRpcRequest(body) : parseNotification(body);
    } catch (err) {
      this.logger.warn('Rejecting a malformed message (not requeued)', {
        exchange: raw.fields.exchange,
        routingKey: raw.fields.routingKey,
        deliveryTag: raw.fields.deliveryTag,
        reason: err instanceof Error ? err.message : String(err),
      });
      safely(() => ch.reject(raw, false));
      return;
    }
    if (this.kind === 'rpc') return this.onRequest(ch, raw, parsed as ParsedRpcRequest);
    const { message, ctx, uniqueId, messageId } = parsed as ParsedNotification;
    if (uniqueId !== undefined && (this.dedup.has(uniqueId) || this.inFlight.has(uniqueId))) {
      this.logger.debug('Dropping a duplicate notification', { uniqueId });
      safely(() => ch.ack(raw));
      return;
    }
    if (uniqueId !== undefined) this.inFlight.add(uniqueId);
    this.unsettled++;
    this.batchers.get(id)?.track(raw);
    this.deliver(new AmqpNotificationMessage(ctx, message, messageId, raw, uniqueId, id, this, this.logger) as unknown as M);
  }

  private onRequest(ch: Channel, raw: ConsumeMessage, req: ParsedRpcRequest): void {
    // oslo acks RPC requests before dispatch; if the ack fails the request is dropped.
    if (!safely(() => ch.ack(raw))) return;
    if (req.uniqueId !== undefined) {
      if (this.dedup.has(req.uniqueId)) {
        this.logger.debug('Dropping a duplicate RPC message', { uniqueId: req.uniqueId });
        return;
      }
      this.dedup.add(req.uniqueId);
    }
    this.deliver(new AmqpRpcIncomingMessage(req, raw, this.sendReply, this.logger) as unknown as M);
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
