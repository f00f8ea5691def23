// oslo's 2.0 envelope as the raw baselines write it by hand (oslo-wire.md §1): the message JSON
// inside JSON, uuid4-hex ids, and a notification as tidings' Notifier puts it on the wire. Shared
// by the RabbitMQ, Redis and Kafka protocol baselines; loads no broker library.
import { randomUUID } from 'node:crypto';
import { PAYLOAD_TEXT } from './measure.js';

/** A uuid4 in hex, as oslo writes `_msg_id`/`_unique_id`. */
export const hexId = (): string => randomUUID().replace(/-/g, '');

/** The 2.0 envelope of `message`, as text. */
export const envelopeText = (message: Record<string, unknown>): string => JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify(message) });

/** The 2.0 envelope of `message`, as bytes. */
export const envelope = (message: Record<string, unknown>): Buffer => Buffer.from(envelopeText(message));

/** Both layers of an enveloped body. */
export const unenvelope = (content: Buffer | string): Record<string, unknown> =>
  JSON.parse((JSON.parse(typeof content === 'string' ? content : content.toString('utf8')) as Record<string, string>)['oslo.message']) as Record<string, unknown>;

/** Python's `str(datetime.utcnow())`, as notifications carry it. */
function timestamp(): string {
  const iso = new Date().toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}000`;
}

/** The notification fields every layout shares (oslo-wire.md §1.10). */
const notificationFields = (i: number) => ({ message_id: randomUUID(), publisher_id: 'bench', event_type: 'bench.event', priority: 'INFO', payload: { i, text: PAYLOAD_TEXT }, timestamp: timestamp() });

/** A notification as oslo's Kafka driver writes it (oslo-wire.md §2): enveloped, the context as one nested `_context` object, no `_unique_id`. */
export const osloKafkaNotificationText = (i: number): string => envelopeText({ ...notificationFields(i), _context: {} });

/** A notification as tidings' Notifier puts it on the wire (oslo-wire.md §1.10, enveloped). */
export const osloNotification = (i: number): Buffer => Buffer.from(osloNotificationText(i));

/** The same, as text. */
export const osloNotificationText = (i: number): string =>
  envelopeText({ ...notificationFields(i), _unique_id: hexId() });

/** A notification in oslo's 1.0 form (no envelope), as tidings' Notifier puts it on Redis. */
export const osloBareNotificationText = (i: number): string => JSON.stringify({ ...notificationFields(i), _unique_id: hexId() });

/** A body in oslo's 1.0 form (one JSON layer). */
export const unbare = (content: Buffer | string): Record<string, unknown> => JSON.parse(typeof content === 'string' ? content : content.toString('utf8')) as Record<string, unknown>;
