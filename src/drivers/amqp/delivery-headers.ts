// Reads back the x-tidings-* headers the RabbitMQ driver writes on the copies it re-publishes
// (requeues, replays). Anyone who can publish to a queue can forge them, so a value tidings could
// not have written is malformed: the notification is dead-lettered with why, never obeyed (a count
// that skips the limit or never reaches it, an address that sends its dead letters elsewhere).
import type { Message } from 'amqplib';
import { HEADERS } from './topology.js';

/** The largest delivery count read back: tidings writes fewer than `maxDeliveries` (at most 100,000). */
const MAX_COUNT = 999_999;

export type ParsedDeliveryHeaders =
  | {
      readonly ok: true;
      /** Deliveries before this copy (0 for a notification tidings never re-published). */
      readonly previousDeliveries: number;
      /** The address it was first published to. */
      readonly address: string;
    }
  | {
      readonly ok: false;
      readonly reason: string;
      /** The address its dead letter goes to (the routing key when bound, else the queue's first address). */
      readonly address: string;
    };

/**
 * Validates the tidings headers of `message`, consumed from a queue bound to `addresses` (its
 * bindings' routing keys, never empty). A message without them came through an exchange: its
 * address is its routing key.
 */
export function parseDeliveryHeaders(message: Message, addresses: readonly string[]): ParsedDeliveryHeaders {
  const routingKey = message.fields.routingKey;
  const h = message.properties.headers;
  const count: unknown = h?.[HEADERS.deliveries];
  const named: unknown = h?.[HEADERS.address];
  const fallback = addresses.includes(routingKey) ? routingKey : addresses[0];
  if (count === undefined && named === undefined) return { ok: true, previousDeliveries: 0, address: fallback };
  const bad = (reason: string): ParsedDeliveryHeaders => ({ ok: false, reason, address: fallback });
  if (count !== undefined && !(typeof count === 'number' && Number.isSafeInteger(count) && count >= 1 && count <= MAX_COUNT)) {
    return bad(`header ${HEADERS.deliveries} is not a delivery count: ${describe(count)}`);
  }
  let address = fallback;
  if (named !== undefined) {
    if (typeof named !== 'string' || !addresses.includes(named)) return bad(`header ${HEADERS.address} names ${describe(named)}, not an address this queue is bound to`);
    address = named;
  }
  return { ok: true, previousDeliveries: count === undefined ? 0 : count, address };
}

/** A header value for a log line or a dead letter's reason: bounded, never a whole buffer. */
function describe(value: unknown): string {
  if (typeof value === 'string') return `${JSON.stringify(value.slice(0, 64))}${value.length > 64 ? ` (${value.length} chars)` : ''}`;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Buffer.isBuffer(value)) return `a ${value.length}-byte buffer`;
  return value === null ? 'null' : `a ${typeof value}`;
}
