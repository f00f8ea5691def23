// Messages handed from a driver's listener to the façades, typed once by the driver seam.
import type { Context, ReceivedNotification, RpcRequest } from './types.js';

/**
 * What every received message has. `acknowledge()` and `requeue()` MUST NOT throw or reject: a
 * failure is logged by the driver and swallowed, because a handler's outcome must never crash a
 * server.
 */
export abstract class ReceivedMessage {
  constructor(
    /** The request context, already unflattened from `_context_*` keys. */
    readonly ctx: Context,
    /** The message's unique id (`_unique_id` or the notification `message_id`) when known. */
    readonly msgId?: string,
    /**
     * How often the broker delivered it, counting this delivery: 1 the first time, more after a
     * requeue, a crashed consumer or a lost connection. RabbitMQ counts requeues (its re-published
     * copy carries the count) and a redelivery of one copy as 1 more on classic queues, which only
     * flag it, as counted on quorum queues; Redis and memory:// count; Kafka counts requeues (the
     * retry topic carries the count), not a record read again after a rebalance.
     */
    readonly deliveryCount = 1,
  ) {}

  /** True when the broker delivered it before (to this or another consumer): a handler may have run. */
  get redelivered(): boolean {
    return this.deliveryCount > 1;
  }

  /**
   * Tells the broker the message is done with. MUST be idempotent; after the first of
   * `acknowledge()`/`requeue()` the others are no-ops. MUST NOT throw.
   */
  abstract acknowledge(): Promise<void>;

  /**
   * Gives the message back to the broker for redelivery (to this or another consumer).
   * Drivers without the `requeue` capability log a warning and acknowledge. MUST NOT throw.
   * `reason` is why (the handler's error, when one threw): a driver that dead-letters after
   * `maxDeliveries` SHOULD record the last one's message; others may ignore it.
   */
  abstract requeue(reason?: unknown): Promise<void>;

  /** The raw broker message (amqplib `ConsumeMessage`, a Redis stream entry, a Kafka record...). */
  unwrap(): unknown {
    return undefined;
  }
}

/** A received notification, validated by the driver seam. */
export abstract class IncomingMessage extends ReceivedMessage {
  /** The oslo notification dict without wire and context keys. */
  abstract readonly notification: ReceivedNotification;
}

/** What an RPC server sends back: a result or a failure (an Error or any thrown value). */
export type RpcReply =
  | {
      /** The method's return value (JSON-safe). */
      result: unknown;
      /** Absent with a result. */
      failure?: undefined;
    }
  | {
      /** What the method threw; serialised with `serializeFailure`. */
      failure: unknown;
      /** Absent with a failure. */
      result?: undefined;
    };

/**
 * A received RPC request, validated by the driver seam. Drivers acknowledge requests on receipt
 * (at-most-once, as oslo), so `acknowledge()` and `requeue()` have nothing left to do.
 */
export abstract class RpcIncomingMessage extends ReceivedMessage {
  /** Method, arguments, namespace and version, with oslo's defaults applied. */
  abstract readonly request: RpcRequest;

  /** Call-monitor window the client asked for, in milliseconds; undefined when none. */
  abstract readonly callMonitorTimeout?: number;

  /** True when the sender waits for a reply (a `call`, not a `cast`). */
  abstract readonly expectsReply: boolean;

  /**
   * For a call: its `_msg_id`, the id its reply carries (oslo's conversation id, for logs and
   * traces); undefined for a cast.
   */
  get callId(): string | undefined {
    return undefined;
  }

  /** For a call: the caller's reply address (`_reply_q`); undefined for a cast. */
  get replyAddress(): string | undefined {
    return undefined;
  }

  /**
   * Sends the one final reply of a call. A no-op for casts. MUST NOT throw: a reply that
   * cannot be delivered is logged. A failure is serialised with the remote-error format.
   */
  abstract reply(reply: RpcReply): Promise<void>;

  /** Sends a call-monitor heartbeat (a non-final empty reply). MUST NOT throw. */
  abstract heartbeat(): Promise<void>;
}
