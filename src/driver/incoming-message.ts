// Messages handed from a driver's listener to the façades.
import type { Context, DriverMessage } from './types.js';

/**
 * A received message. `acknowledge()` and `requeue()` MUST NOT throw or reject: a failure is
 * logged by the driver and swallowed, because a handler's outcome must never crash a server.
 */
export abstract class IncomingMessage {
  constructor(
    /** The request context, already unflattened from `_context_*` keys. */
    readonly ctx: Context,
    /** The message body: `{method, args, namespace?, version?}` for RPC, the notification dict otherwise. */
    readonly message: DriverMessage,
    /** The message's unique id (`_unique_id` or the notification `message_id`) when known. */
    readonly msgId?: string,
  ) {}

  /**
   * Tells the broker the message is done with. MUST be idempotent; after the first of
   * `acknowledge()`/`requeue()` the others are no-ops. MUST NOT throw.
   */
  abstract acknowledge(): Promise<void>;

  /**
   * Gives the message back to the broker for redelivery (to this or another consumer).
   * Drivers without the `requeue` capability log a warning and acknowledge. MUST NOT throw.
   */
  abstract requeue(): Promise<void>;

  /** The raw broker message (amqplib `ConsumeMessage`, a Redis stream entry, a Kafka record...). */
  unwrap(): unknown {
    return undefined;
  }
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

/** A received RPC request. */
export abstract class RpcIncomingMessage extends IncomingMessage {
  /** Call-monitor window the client asked for, in milliseconds; undefined when none. */
  abstract readonly callMonitorTimeout?: number;

  /** True when the sender waits for a reply (a `call`, not a `cast`). */
  abstract readonly expectsReply: boolean;

  /**
   * Sends the one final reply of a call. A no-op for casts. MUST NOT throw: a reply that
   * cannot be delivered is logged. A failure is serialised with the remote-error format.
   */
  abstract reply(reply: RpcReply): Promise<void>;

  /** Sends a call-monitor heartbeat (a non-final empty reply). MUST NOT throw. */
  abstract heartbeat(): Promise<void>;
}
