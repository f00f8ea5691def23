// What handlers receive and return, below the façades: the RPC handler's `meta`, a notification's
// metadata and result. Middleware and observability take these types from here, never from a façade.
import type { Context } from './types.js';
import type { IncomingMessage } from './incoming-message.js';

/** Facts about the request being handled, beside the context and the arguments. */
export interface RpcMeta {
  /** The message's unique id (`_unique_id` on the wire) when the driver knows it. */
  readonly messageId?: string;
  /** The method name the caller asked for. */
  readonly method: string;
  /** The requested namespace; undefined is the default (null) namespace. */
  readonly namespace?: string;
  /** The requested version (`'1.0'` when the caller sent none, as oslo does). */
  readonly version: string;
  /**
   * Aborts when the request runs past the server's `handlerTimeout` (its reason is the
   * HandlerTimeout the caller was answered with); hand it to `fetch`, database drivers and the
   * like so the abandoned work stops. Without a `handlerTimeout` it never aborts.
   */
  readonly signal: AbortSignal;
  /** The raw broker message (amqplib `ConsumeMessage`, ...); an escape hatch, not portable. */
  unwrap(): unknown;
}

/** The signal handlers get when no `handlerTimeout` is configured: one shared instance that never aborts. */
export const NEVER_ABORTS: AbortSignal = new AbortController().signal;

/** What an endpoint method returns. `undefined` counts as HANDLED. */
export const NotificationResult = Object.freeze({
  /** Done with; the next endpoint gets the notification too. */
  HANDLED: 'handled',
  /** Stop here; requeue the notification when the listener allows it, else acknowledge it. */
  REQUEUE: 'requeue',
} as const);
export type NotificationResult = (typeof NotificationResult)[keyof typeof NotificationResult];

/** What a handler may return (or resolve with). */
export type NotificationHandlerResult = NotificationResult | void | undefined | null;

/**
 * Metadata handed to endpoints. The enumerable keys are oslo's (`message_id`, `timestamp`), so
 * filters and JSON dumps see oslo's shape; `messageId`, `priority` and `unwrap()` are extras.
 */
export interface NotificationMetadata {
  /** The notification's `message_id` (a dashed uuid), as sent. */
  readonly message_id: string | undefined;
  /** The notification's `timestamp` (`YYYY-MM-DD HH:MM:SS[.ffffff]`, naive UTC), as sent. */
  readonly timestamp: string | undefined;
  /** Alias of `message_id`. */
  readonly messageId: string | undefined;
  /** The priority, lower-case. */
  readonly priority: string;
  /**
   * True when the broker delivered this notification before (a requeue, a crashed member, a lost
   * connection): a handler may already have acted on it, so a handler with side effects can check.
   */
  readonly redelivered: boolean;
  /**
   * How often it was delivered, this delivery included (1 the first time). RabbitMQ classic
   * queues only flag a redelivery (2); quorum queues, Redis and memory:// count; Kafka counts
   * requeues (the retry topic carries the count), not a record read again after a rebalance.
   */
  readonly deliveryCount: number;
  /**
   * Aborts when the handler runs past the listener's `handlerTimeout` (the notification is then
   * requeued or acknowledged as if the handler had thrown). A batch shares one signal: every item
   * of a batch carries the batch's. Without a `handlerTimeout` it never aborts.
   */
  readonly signal: AbortSignal;
  /** The driver's raw broker message. */
  unwrap(): unknown;
}

/**
 * NotificationMetadata as handlers get it: oslo's two keys are its only own enumerable
 * properties, so filters, equality checks and JSON see just them; the rest are accessors on the
 * prototype (cheaper per notification than defining non-enumerable own properties). Frozen.
 * The accessors answer `undefined` on a copy of it (same prototype, own keys only: what vitest's
 * diff builds for a failing `toMatchObject`) instead of throwing on the private field.
 */
export class ReceivedMetadata implements NotificationMetadata {
  readonly #priority: string;
  readonly #incoming: IncomingMessage;
  readonly #signal: AbortSignal;

  constructor(
    readonly message_id: string | undefined,
    readonly timestamp: string | undefined,
    priority: string,
    incoming: IncomingMessage,
    signal: AbortSignal = NEVER_ABORTS,
  ) {
    this.#priority = priority;
    this.#incoming = incoming;
    this.#signal = signal;
    Object.freeze(this);
  }

  get signal(): AbortSignal {
    return this.#signal;
  }

  get messageId(): string | undefined {
    return this.message_id;
  }

  get priority(): string {
    return #priority in this ? this.#priority : (undefined as never);
  }

  get redelivered(): boolean {
    return #incoming in this ? this.#incoming.redelivered : (undefined as never);
  }

  get deliveryCount(): number {
    return #incoming in this ? this.#incoming.deliveryCount : (undefined as never);
  }

  /** A function, so that `const { unwrap } = metadata` keeps working. */
  get unwrap(): () => unknown {
    if (!(#incoming in this)) return undefined as never;
    const incoming = this.#incoming;
    return () => incoming.unwrap();
  }

  /** The context as it arrived (before the serializer), for trace propagation; undefined for metadata not built here. */
  static wireContextOf(metadata: NotificationMetadata): Context | undefined {
    return #incoming in metadata ? metadata.#incoming.ctx : undefined;
  }
}

/** @internal The context a received notification arrived with, before the serializer (what a tracer extracts from). */
export const wireContextOf = (metadata: NotificationMetadata): Context | undefined => ReceivedMetadata.wireContextOf(metadata);

/** A notification as a batch endpoint receives it. */
export interface NotificationBatchItem<Ctx = Context> {
  /** The context, after the serializer's `deserializeContext`. */
  ctx: Ctx;
  /** The sender's `publisherId`; null when it sent none. */
  publisherId: string | null;
  /** e.g. `compute.instance.create.end`. */
  eventType: string;
  /** Whatever the publisher sent, after the serializer's `deserializeEntity`. */
  payload: any;
  /** `message_id`, `timestamp`, priority and the raw message. */
  metadata: NotificationMetadata;
}

