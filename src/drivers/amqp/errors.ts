// Maps amqplib and socket errors into tidings' error tree; the raw error only rides as `cause`.
import { ConnectionError, InvalidArgument, MessageDeliveryFailure, MessagingError } from '../../core/errors.js';
import { redactUrlsIn } from '../../core/transport-url.js';

/** AMQP reply codes that matter here. */
const AMQP_CODES = Object.freeze({ ACCESS_REFUSED: 403, NOT_FOUND: 404, PRECONDITION_FAILED: 406 });

function codeOf(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** True for a channel closed by the broker with 406 PRECONDITION_FAILED (declare mismatch). */
export function isPreconditionFailed(err: unknown): boolean {
  return codeOf(err) === AMQP_CODES.PRECONDITION_FAILED || /PRECONDITION_FAILED/.test(messageOf(err));
}

/** True for a channel closed by the broker with 404 NOT_FOUND (a passive declare of a missing queue). */
export function isNotFound(err: unknown): boolean {
  return codeOf(err) === AMQP_CODES.NOT_FOUND || /NOT_FOUND/.test(messageOf(err));
}

/** The oslo option (URL query name) that sets each declare argument, for the mismatch hint. */
const OPTION_OF_ARGUMENT: Readonly<Record<string, string>> = {
  durable: 'amqp_durable_queues (rabbit_quorum_queue forces it)',
  auto_delete: 'amqp_auto_delete',
  'x-queue-type': 'rabbit_quorum_queue',
  'x-delivery-limit': 'rabbit_quorum_delivery_limit',
  'x-max-in-memory-length': 'rabbit_quroum_max_memory_length',
  'x-max-in-memory-bytes': 'rabbit_quroum_max_memory_bytes',
  'x-ha-policy': 'rabbit_ha_queues',
  'x-expires': 'rabbit_transient_queues_ttl',
  'x-max-length': 'notification_queue_max_length',
  'x-message-ttl': 'notification_queue_ttl_ms',
};
const QUEUE_OPTIONS = 'amqp_durable_queues / amqp_auto_delete / rabbit_quorum_queue / rabbit_ha_queues / rabbit_transient_queues_ttl';

/**
 * A declare the broker refused because the object exists with other arguments. The message
 * names the queue/exchange, the argument and the oslo option that sets it, so a mismatch with
 * the Python side's options (amqp_durable_queues, rabbit_quorum_*, rabbit_transient_queues_ttl...)
 * is obvious.
 */
export function declareMismatch(kind: 'queue' | 'exchange', name: string, err: unknown): InvalidArgument {
  const text = messageOf(err);
  const m = /inequivalent arg '([^']+)' for (?:queue|exchange) '[^']*' in vhost '[^']*': received (.*?) but current is (.*?)(?:$|")/.exec(text);
  const field = m ? `${kind} "${name}" argument ${m[1]}` : `${kind} "${name}" declaration`;
  const expected = m
    ? `the value the broker already has (current is ${m[3]}); align ${m[1] === 'x-max-length' && name.endsWith('.dlq') ? 'dead_letter_max_len' : (OPTION_OF_ARGUMENT[m[1]] ?? QUEUE_OPTIONS)} with the other declarer or delete the ${kind}`
    : `arguments equivalent to the existing ${kind} (${text})`;
  return new InvalidArgument(field, expected, m ? m[2] : 'different arguments', { cause: err });
}

/**
 * True when the broker answered connection.open with connection.close: RabbitMQ does that when the
 * user may not use the virtual host or it does not exist (530 NOT_ALLOWED). amqplib reports only
 * the frame's name, not the broker's reason.
 */
function isOpenRefused(text: string): boolean {
  return /Expected ConnectionOpenOk; got <ConnectionClose/.test(text);
}

/** The limit in a 406 RabbitMQ sends for a message over its `max_message_size`, else undefined. */
export function brokerSizeLimit(err: unknown): number | undefined {
  const m = /message size \d+ is larger than configured max size (\d+)/.exec(messageOf(err));
  return m ? Number(m[1]) : undefined;
}

/**
 * Wraps any error from amqplib or the socket. MessagingErrors pass through; declare
 * mismatches become InvalidArgument (not retriable). What retrying cannot fix is not retriable:
 * a refused login or access (403 ACCESS_REFUSED: wrong password, no permission on a resource),
 * a virtual host the broker would not open (530 NOT_ALLOWED: no permission on it, or no such
 * vhost) and a message the broker refused (406 PRECONDITION_FAILED, e.g. over its `max_message_size`);
 * everything else is a retriable ConnectionError. amqplib gets an options object, never a URL, so
 * its messages hold no password; any URL in them is redacted all the same.
 */
export function toMessagingError(err: unknown, what: string): MessagingError {
  if (err instanceof MessagingError) return err;
  const code = codeOf(err);
  const text = messageOf(err);
  if (code === AMQP_CODES.ACCESS_REFUSED || /ACCESS_REFUSED|auth/i.test(text)) {
    return new ConnectionError(`${what}: the broker refused the login or access (${redactUrlsIn(text)})`, { cause: err, retriable: false });
  }
  if (isOpenRefused(text)) {
    return new ConnectionError(`${what}: the broker refused to open the virtual host (530 NOT_ALLOWED: the user has no permission on it, or it does not exist; amqplib does not pass on the broker's reason)`, {
      cause: err,
      retriable: false,
    });
  }
  if (isPreconditionFailed(err)) return new MessageDeliveryFailure(`${what}: the broker refused it (${redactUrlsIn(text)})`, { cause: err, retriable: false });
  return new ConnectionError(`${what}: ${redactUrlsIn(text)}`, { cause: err });
}
