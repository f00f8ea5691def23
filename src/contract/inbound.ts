// The inbound pipeline, once for every driver: decode, validate, reject malformed (logged, not
// requeued), dedupe on `_unique_id`, ack RPC requests on receipt, and wrap into the message
// classes. A driver feeds raw bodies with its own delivery handle and settles what it is told.
import { MalformedMessage } from '../core/errors.js';
import type { Logger, LogFields } from '../core/logger.js';
import { DuplicateMessageChecker } from '../structures/dedup.js';
import type { DeliveryStats } from './delivery-stats.js';
import { decodeBody } from './envelope.js';
import type { ReceivedMessage } from './incoming-message.js';
import { NotificationMessage, RpcMessage, type ReplySender } from './messages.js';
import { BufferedPollStyleListener } from './poll-style-listener.js';
import type { ListenerSink, PushSource } from './push-listener.js';
import type { DriverMessage } from './types.js';
import { bodyBytes, parseNotification, parseRpcRequest } from './wire.js';

/**
 * How a driver settles one delivery (`D`: its broker's message handle) on the broker.
 * `generation` is the subscription (channel, consumer) the delivery came from, as the driver
 * passed it to `receive`. None of these may throw: a delivery that can no longer be settled
 * (its channel is gone) is the broker's to redeliver, and the driver logs at debug.
 */
export interface DeliverySettler<D> {
  /** False when it could not be sent (the channel is gone, so the broker redelivers it). */
  ack(delivery: D, generation: number): boolean;
  /**
   * Give it back for redelivery. `reason` is the handler's error when one threw (undefined when
   * it asked for a requeue): a driver that dead-letters SHOULD keep `requeueReason(reason)` of
   * the last delivery with the dead letter. A driver without the `requeue` capability MUST log a
   * warning and acknowledge it instead.
   */
  requeue(delivery: D, generation: number, reason?: unknown): void;
  /**
   * Give back a delivery that is not this listener's (another topic on a shared pool queue) for
   * the queue's other consumers: never dead-lettered, never counted toward a delivery limit.
   * A driver whose `requeue` can dead-letter MUST implement it. @default `requeue`
   */
  giveBack?(delivery: D, generation: number): void;
  /** Drop it without redelivery (malformed): the broker's dead-letter rules apply. */
  reject(delivery: D, generation: number): void;
  /** Where the delivery came from, for the malformed-message log line (never the body). */
  describe(delivery: D): LogFields;
  /**
   * How often the broker delivered it, counting this delivery: 1 the first time. A broker that
   * only flags a redelivery without counting (RabbitMQ classic queues) reports 2. Without it
   * every delivery counts as a first one.
   */
  deliveries?(delivery: D): number;
  /**
   * The oslo address it was consumed from (`<topic>.<priority>`, `<topic>`...), for the
   * redelivery and malformed-message counters. @default `'unknown'`
   */
  address?(delivery: D): string;
  /**
   * The body as its publisher encoded it, when the driver undoes a content encoding of its broker
   * (RabbitMQ: kombu's compression). MAY throw: the message is then malformed (rejected, counted).
   * MUST bound what it produces by the driver's `maxMessageBytes`. @default the body as received
   */
  unwrapBody?(body: Uint8Array | string, delivery: D): Uint8Array | string;

  /**
   * The exchange it was published to (`''` where the broker has none). Needed only with
   * `InboundOptions.subscriptions`, together with `address`.
   */
  exchange?(delivery: D): string;
}

/** The `[exchange, address]` pairs a notification listener subscribed to. */
export type Subscriptions = ReadonlyArray<readonly [exchange: string, address: string]>;

/** What an inbound pipeline is built with. */
export interface InboundOptions<D> {
  /** Settles deliveries on the driver's broker. */
  readonly settler: DeliverySettler<D>;
  /** Where malformed messages and duplicates are reported. */
  readonly logger: Logger;
  /** Ids remembered for duplicate suppression. */
  readonly dedupWindow: number;
  /** The driver's counters of redeliveries and malformed messages (`BaseDriver.deliveryStats`). */
  readonly stats?: DeliveryStats;
  /** The pool (consumer group) of a notification listener, for the counters. */
  readonly pool?: string;
  /**
   * Bodies larger than this (bytes, before decoding) are rejected as malformed, never parsed: the
   * driver's `maxMessageBytes`. 0 or undefined: no limit.
   */
  readonly maxMessageBytes?: number;
  /**
   * For a notification listener whose queue other listeners may share with other bindings (oslo
   * names a pooled listener's queue after the pool alone, so one pool name used on two topics is
   * one queue bound to both): what it subscribed to. A delivery from anywhere else is never
   * dispatched: it is given back for the queue's other consumers (see NotificationInbound).
   * Needs the settler's `exchange` and `address`.
   */
  readonly subscriptions?: Subscriptions;
}

/** Shared by both pipelines: decoding and the malformed-message rule. */
abstract class Inbound<D> {
  /** Settles deliveries on the driver's broker. */
  protected readonly settler: DeliverySettler<D>;
  /** The listener's logger. */
  protected readonly logger: Logger;
  /** Recently seen `_unique_id`s. */
  protected readonly dedup: DuplicateMessageChecker;
  private readonly stats?: DeliveryStats;
  /** The pool (consumer group) of a notification listener. */
  protected readonly pool?: string;
  private readonly maxBytes: number;

  constructor(options: InboundOptions<D>) {
    this.settler = options.settler;
    this.logger = options.logger;
    this.dedup = new DuplicateMessageChecker(options.dedupWindow);
    this.stats = options.stats;
    this.pool = options.pool;
    this.maxBytes = options.maxMessageBytes !== undefined && options.maxMessageBytes > 0 ? options.maxMessageBytes : Infinity;
  }

  /** How often `delivery` was delivered (1 the first time); a redelivery is counted. */
  protected deliveries(delivery: D): number {
    const n = this.settler.deliveries?.(delivery) ?? 1;
    if (n > 1) this.stats?.redelivered(this.addressOf(delivery), this.pool);
    return n;
  }

  private addressOf(delivery: D): string {
    return this.settler.address?.(delivery) ?? 'unknown';
  }

  /** `parse(decoded body)`, or undefined after rejecting (never requeueing) and logging a malformed one. */
  protected decode<
    T extends {
      /** Context keys the parser dropped because they would reach a prototype. */
      readonly droppedContextKeys?: readonly string[];
    },
  >(body: Uint8Array | string, delivery: D, generation: number, parse: (raw: DriverMessage) => T): T | undefined {
    let parsed: T;
    try {
      const size = this.maxBytes === Infinity ? 0 : bodyBytes(body, this.maxBytes);
      if (size > this.maxBytes) throw new MalformedMessage(`Message of ${size} bytes is over max_message_bytes (${this.maxBytes})`);
      // Anything decoding throws (a RangeError from JSON nested too deep included) makes it malformed.
      parsed = parse(decodeBody(this.settler.unwrapBody ? this.settler.unwrapBody(body, delivery) : body));
    } catch (err) {
      this.rejectMalformed(delivery, generation, body, err);
      return undefined;
    }
    if (parsed.droppedContextKeys !== undefined) {
      this.logger.warn('Dropped context keys that would reach a prototype', { ...this.settler.describe(delivery), keys: parsed.droppedContextKeys });
    }
    return parsed;
  }

  /** Rejects (never requeues) a message that cannot be dispatched and logs why; the listener goes on. */
  private rejectMalformed(delivery: D, generation: number, body: Uint8Array | string, err: unknown): void {
    this.settler.reject(delivery, generation);
    this.dropped(delivery, 'Rejecting a malformed message (not requeued)', { bytes: body.length, reason: err instanceof Error ? err.message : String(err) });
  }

  /** Counts a settled message that will not be dispatched as malformed and logs it once (never the body). */
  protected dropped(delivery: D, message: string, fields: LogFields): void {
    this.stats?.deadLettered(this.addressOf(delivery), 'malformed', this.pool);
    this.logger.warn(message, { ...this.settler.describe(delivery), ...fields });
  }
}

/** RPC requests: acknowledged on receipt (at-most-once, as oslo), duplicates dropped. */
export class RpcInbound<D> extends Inbound<D> {
  private readonly replies: ReplySender;

  constructor(options: InboundOptions<D> & { readonly replies: ReplySender }) {
    super(options);
    this.replies = options.replies;
  }

  /** The request to dispatch, or undefined when it was settled here (malformed or duplicate). */
  receive(body: Uint8Array | string, delivery: D, generation = 0): RpcMessage<D> | undefined {
    const request = this.decode(body, delivery, generation, parseRpcRequest);
    if (request === undefined) return undefined;
    // oslo acks a request before dispatch; one whose ack failed comes again to someone else.
    if (!this.settler.ack(delivery, generation)) return undefined;
    const id = request.uniqueId;
    if (id !== undefined && this.dedup.checkAndAdd(id)) {
      this.logger.debug('Dropping a duplicate RPC message', { uniqueId: id });
      return undefined;
    }
    const replyQueue = request.replyQueue;
    if (replyQueue !== undefined && request.msgId !== undefined && !this.replies.isReplyAddress(replyQueue)) {
      // Not executed: its reply would land in whatever queue, topic or key the caller named.
      this.dropped(delivery, 'Dropping a call whose reply address is not one this driver creates (not executed)', { replyQueue: truncated(replyQueue) });
      return undefined;
    }
    return new RpcMessage(request, delivery, this.replies, this.logger, this.deliveries(delivery));
  }
}

/** How long a foreign notification that came back again is held before it is given back again. */
export const FOREIGN_HOLD_MS = 1000;
/** Foreign notifications that came back again and are given back at once, per listener and second. */
const FOREIGN_IMMEDIATE_PER_SECOND = 50;
/** Foreign addresses warned about per listener, at most (names are unbounded input). */
const FOREIGN_WARN_LIMIT = 100;

/**
 * Notifications: settled by the listener's outcome. Ids are remembered once acknowledged, so a
 * requeued message comes back. A copy of an acknowledged one is acknowledged and dropped. A copy
 * of one still being handled (the same Kafka record read again after a rebalance gave its
 * partition back, a publisher's resend) is not dispatched and not settled yet: it is held until
 * the first one is, then acknowledged when that was, else given back. Acknowledging it at once
 * would commit the record's offset (or acknowledge the stream entry) before the first copy was
 * handled; were that copy then requeued, or its listener cleaned up, the message would be lost.
 *
 * With `subscriptions`, a delivery published to an exchange and address the listener did not
 * subscribe to (another topic bound to the same pool queue) is given back to the queue
 * (requeued, neither decoded nor dispatched nor counted): the broker offers it to the queue's
 * next consumer, round robin, so it reaches a listener of its topic within a few hops. A first
 * delivery goes back at once, and so do up to FOREIGN_IMMEDIATE_PER_SECOND redelivered ones per
 * second; past that they are held FOREIGN_HOLD_MS first, so that a queue with no listener of that
 * topic bounces them at a bounded rate instead of in a hot loop. Nothing is lost: it stays in the
 * queue until a listener of its topic takes it.
 */
export class NotificationInbound<D> extends Inbound<D> {
  private unsettledCount = 0;
  private settledWaiters: Array<() => void> = [];
  /** `exchange` -> the addresses subscribed on it; undefined when every delivery is the listener's. */
  private readonly subscribed?: ReadonlyMap<string, ReadonlySet<string>>;
  private readonly warnedForeign = new Set<string>();
  /** Redelivered foreign notifications given back at once in the second since `foreignSince`. */
  private foreignImmediate = 0;
  private foreignSince = 0;
  /** Copies that came while a notification with their id was being handled, by that id: settled as it is. */
  private readonly held = new Map<string, Array<{ readonly delivery: D; readonly generation: number }>>();

  constructor(options: InboundOptions<D>) {
    super(options);
    if (options.subscriptions === undefined) return;
    const byExchange = new Map<string, Set<string>>();
    for (const [exchange, address] of options.subscriptions) {
      const set = byExchange.get(exchange) ?? new Set<string>();
      set.add(address);
      byExchange.set(exchange, set);
    }
    this.subscribed = byExchange;
  }

  /** Notifications handed out and not acknowledged or requeued yet. */
  get unsettled(): number {
    return this.unsettledCount;
  }

  /**
   * Resolves once every notification handed out is settled (or abandoned), or after `timeoutMs`:
   * a listener closing its channel first lets running handlers acknowledge.
   */
  whenSettled(timeoutMs: number): Promise<void> {
    if (this.unsettledCount === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.settledWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** The notification to dispatch, or undefined when it was settled here (malformed or duplicate). */
  receive(body: Uint8Array | string, delivery: D, generation = 0): NotificationMessage<D> | undefined {
    if (this.subscribed !== undefined) {
      const exchange = this.settler.exchange?.(delivery) ?? '';
      const address = this.settler.address?.(delivery) ?? '';
      if (this.subscribed.get(exchange)?.has(address) !== true) {
        this.giveBackForeign(delivery, generation, exchange, address);
        return undefined;
      }
    }
    const parsed = this.decode(body, delivery, generation, parseNotification);
    if (parsed === undefined) return undefined;
    const id = parsed.uniqueId;
    if (id !== undefined) {
      if (!this.dedup.begin(id)) {
        if (this.dedup.has(id)) {
          this.logger.debug('Dropping a duplicate notification', { uniqueId: id });
          this.settler.ack(delivery, generation);
        } else {
          this.logger.debug('Holding a copy of a notification being handled until it is settled', { uniqueId: id });
          const copies = this.held.get(id);
          if (copies) copies.push({ delivery, generation });
          else this.held.set(id, [{ delivery, generation }]);
        }
        return undefined;
      }
    }
    this.unsettledCount++;
    return new NotificationMessage(parsed, delivery, generation, this, this.deliveries(delivery));
  }

  /** Back to the queue for its other consumers: at once the first time, held when it comes back. */
  private giveBackForeign(delivery: D, generation: number, exchange: string, address: string): void {
    const key = `${exchange}\u0000${address}`;
    if (!this.warnedForeign.has(key) && this.warnedForeign.size < FOREIGN_WARN_LIMIT) {
      this.warnedForeign.add(key);
      this.logger.warn(
        'A notification for a topic this listener did not subscribe to came from its queue (a pool name used on other topics shares one queue, as in oslo); giving it back for the listener of that topic. Use one pool name per topic, or pool_queue_per_topic on RabbitMQ',
        { exchange, address, pool: this.pool },
      );
    }
    const giveBack = () => this.giveBack(delivery, generation);
    if ((this.settler.deliveries?.(delivery) ?? 1) <= 1 || this.mayGiveBackAtOnce()) {
      giveBack();
      return;
    }
    setTimeout(giveBack, FOREIGN_HOLD_MS).unref?.();
  }

  /** True for up to FOREIGN_IMMEDIATE_PER_SECOND calls per second. */
  private mayGiveBackAtOnce(): boolean {
    const now = Date.now();
    if (now - this.foreignSince >= 1000) {
      this.foreignSince = now;
      this.foreignImmediate = 0;
    }
    return ++this.foreignImmediate <= FOREIGN_IMMEDIATE_PER_SECOND;
  }

  /** @internal */
  acknowledge(message: NotificationMessage<D>): void {
    if (message.uniqueId !== undefined) this.dedup.add(message.uniqueId);
    this.forget();
    this.settler.ack(message.delivery, message.generation);
    this.settleHeld(message, true);
  }

  /** @internal */
  requeue(message: NotificationMessage<D>, reason?: unknown): void {
    if (message.uniqueId !== undefined) this.dedup.drop(message.uniqueId);
    this.forget();
    this.settler.requeue(message.delivery, message.generation, reason);
    this.settleHeld(message, false);
  }

  /**
   * The copies held while `message` was handled: acknowledged when it was (duplicates of a handled
   * message), else given back, never dead-lettered, to come again.
   */
  private settleHeld(message: NotificationMessage<D>, handled: boolean): void {
    const id = message.uniqueId;
    if (id === undefined || this.held.size === 0) return;
    const copies = this.held.get(id);
    if (!copies) return;
    this.held.delete(id);
    for (const { delivery, generation } of copies) {
      if (handled) this.settler.ack(delivery, generation);
      else this.giveBack(delivery, generation);
    }
  }

  /** Back to the queue without counting as a delivery: the settler's `giveBack`, else `requeue`. */
  private giveBack(delivery: D, generation: number): void {
    if (this.settler.giveBack) this.settler.giveBack(delivery, generation);
    else this.settler.requeue(delivery, generation);
  }

  /**
   * The broker will redeliver `message` (its channel died before it was settled): forget it
   * without settling, so the redelivered copy is not taken for a duplicate.
   */
  abandon(message: NotificationMessage<D>): void {
    if (!message.abandon()) return;
    if (message.uniqueId !== undefined) this.dedup.drop(message.uniqueId);
    this.forget();
    this.settleHeld(message, false);
  }

  /** One notification fewer is unsettled. */
  private forget(): void {
    this.unsettledCount--;
    if (this.unsettledCount === 0 && this.settledWaiters.length > 0) {
      const waiters = this.settledWaiters;
      this.settledWaiters = [];
      for (const wake of waiters) wake();
    }
  }
}

/** At most 64 characters of a caller-chosen string, for a log line. */
function truncated(text: string): string {
  return text.length <= 64 ? text : `${text.slice(0, 64)}…(${text.length} chars)`;
}

/** What a listener receives: RPC requests or notifications. */
export type ListenerKind = 'rpc' | 'notification';

/** What a listener's pipeline is built with: the listener itself is the settler. */
export type SourceInboundOptions<D> = Omit<InboundOptions<D>, 'settler'> & {
  /** Where RPC replies go (the driver's reply sender; notification sources get one too and never use it). */
  readonly replies: ReplySender;
};

/** The pipeline of `kind`, settling through `settler`. */
function pipelineOf<D>(kind: ListenerKind, options: SourceInboundOptions<D>, settler: DeliverySettler<D>): { rpc?: RpcInbound<D>; notifications?: NotificationInbound<D> } {
  const pipeline = { ...options, settler };
  return kind === 'rpc' ? { rpc: new RpcInbound(pipeline) } : { notifications: new NotificationInbound(pipeline) };
}

/**
 * What every driver's push source shares: the sink it delivers to and the inbound pipeline of
 * its kind. A driver extends it with consuming and settling (it is the pipeline's
 * DeliverySettler), and from its consumer callback passes each raw body to `receive`.
 * `M` MUST be the message type of `kind`: `RpcIncomingMessage` or `IncomingMessage`.
 */
export abstract class InboundPushSource<M extends ReceivedMessage, D> implements PushSource<M>, DeliverySettler<D> {
  /** Where `receive`d messages go; set by the listener before the source subscribes. */
  protected sink?: ListenerSink<M>;
  /** The pipeline of an RPC listener. */
  protected readonly rpc?: RpcInbound<D>;
  /** The pipeline of a notification listener. */
  protected readonly notifications?: NotificationInbound<D>;

  constructor(kind: ListenerKind, options: SourceInboundOptions<D>) {
    ({ rpc: this.rpc, notifications: this.notifications } = pipelineOf(kind, options, this));
  }

  attach(sink: ListenerSink<M>): void {
    this.sink = sink;
  }

  /** Runs a raw body through the pipeline: the message to deliver, or undefined when it was settled here. */
  protected receive(body: Uint8Array | string, delivery: D, generation: number): M | undefined {
    const message = this.rpc ? this.rpc.receive(body, delivery, generation) : this.notifications!.receive(body, delivery, generation);
    return message as unknown as M | undefined;
  }

  abstract stop(): Promise<void>;
  abstract cleanup(): Promise<void>;
  abstract ack(delivery: D, generation: number): boolean;
  abstract requeue(delivery: D, generation: number, reason?: unknown): void;
  abstract reject(delivery: D, generation: number): void;
  abstract describe(delivery: D): LogFields;
}

/**
 * The base of a pull driver's listener (Redis `XREADGROUP`): the same pipeline of its kind as
 * InboundPushSource, over a BufferedPollStyleListener that the PollStyleListenerAdapter polls.
 * A driver extends it with settling (it is the pipeline's DeliverySettler) and `fetch()`, which
 * reads from the broker while a poll waits and passes each raw body to `receive`.
 * `M` MUST be the message type of `kind`: `RpcIncomingMessage` or `IncomingMessage`.
 */
export abstract class InboundPollSource<M extends ReceivedMessage, D> extends BufferedPollStyleListener<M> implements DeliverySettler<D> {
  /** The pipeline of an RPC listener. */
  protected readonly rpc?: RpcInbound<D>;
  /** The pipeline of a notification listener. */
  protected readonly notifications?: NotificationInbound<D>;

  constructor(kind: ListenerKind, options: SourceInboundOptions<D>, prefetchSize = -1) {
    super(prefetchSize);
    ({ rpc: this.rpc, notifications: this.notifications } = pipelineOf(kind, options, this));
  }

  /** Runs a raw body through the pipeline and buffers the message for polling; false when it was settled here (malformed, duplicate). */
  protected receive(body: Uint8Array | string, delivery: D, generation: number): boolean {
    const message = this.rpc ? this.rpc.receive(body, delivery, generation) : this.notifications!.receive(body, delivery, generation);
    if (message === undefined) return false;
    this.deliver(message as unknown as M);
    return true;
  }

  abstract ack(delivery: D, generation: number): boolean;
  abstract requeue(delivery: D, generation: number, reason?: unknown): void;
  abstract reject(delivery: D, generation: number): void;
  abstract describe(delivery: D): LogFields;
}
