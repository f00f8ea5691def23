// Plain data types shared by the contract and the façades.
export { PRIORITIES, isPriority, type Context, type Priority } from '../core/types.js';

/** A message body as the driver sees it: a JSON-serialisable plain object. */
export type DriverMessage = Record<string, unknown>;

/** An RPC request as servers receive it: validated once by the driver seam (wire.ts). */
export interface RpcRequest {
  /** The endpoint method to run: a non-empty string. */
  readonly method: string;
  /** Keyword arguments; `{}` when the sender sent none. */
  readonly args: Record<string, unknown>;
  /** The endpoint namespace; undefined for oslo's null namespace. */
  readonly namespace?: string;
  /** The requested version; oslo's default `'1.0'` when the sender sent none. */
  readonly version: string;
}

/**
 * A notification as listeners receive it (oslo-wire.md §1.10), validated once by the driver
 * seam: `event_type`, `priority` (upper case on the wire) and `payload` are always there; other
 * keys a sender added pass through.
 */
export interface ReceivedNotification {
  /** The notifier's id for it (a uuid with dashes) when the sender set one. */
  readonly message_id?: string;
  /** The sender, e.g. `compute.host1`; null when it has none. */
  readonly publisher_id?: string | null;
  /** What happened, e.g. `compute.instance.create.end`. */
  readonly event_type: string;
  /** The priority, upper case on the wire (`INFO`). */
  readonly priority: string;
  /** Any JSON value. */
  readonly payload: unknown;
  /** `YYYY-MM-DD HH:MM:SS[.ffffff]`, naive UTC, when the sender set one. */
  readonly timestamp?: string;
  readonly [key: string]: unknown;
}
