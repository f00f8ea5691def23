// Maps kafkajs and @platformatic/kafka errors into tidings' error tree; the raw error only rides
// as `cause`, and its `retriable` flag (both libraries set one) carries over, except for errors
// no retry can fix (authorization, SASL, record too large), which never are.
import { ConnectionError, MessageDeliveryFailure, MessagingError } from '../../core/errors.js';
import { redactUrlsIn } from '../../core/transport-url.js';

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The library's own verdict: kafkajs `retriable`, platformatic `canRetry`; undefined when neither says. */
function retriableOf(err: unknown): boolean | undefined {
  const e = err as { retriable?: unknown; canRetry?: unknown } | null;
  if (typeof e?.retriable === 'boolean') return e.retriable;
  if (typeof e?.canRetry === 'boolean') return e.canRetry;
  return undefined;
}

/**
 * Broker verdicts a retry cannot change: the client is not allowed (authorization, a failed SASL
 * handshake) or the record can never fit (too large). By Kafka's protocol error name (kafkajs
 * `type`, platformatic `apiId`) or number (kafkajs `code`, platformatic `apiCode`).
 */
const PERMANENT_TYPES = new Set([
  'TOPIC_AUTHORIZATION_FAILED',
  'GROUP_AUTHORIZATION_FAILED',
  'CLUSTER_AUTHORIZATION_FAILED',
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
  'DELEGATION_TOKEN_AUTHORIZATION_FAILED',
  'SASL_AUTHENTICATION_FAILED',
  'MESSAGE_TOO_LARGE',
  'RECORD_LIST_TOO_LARGE',
]);
const PERMANENT_CODES = new Set([10, 18, 29, 30, 31, 53, 58, 65]);
/** The libraries' own classes for a failed SASL handshake (kafkajs `name`, platformatic `code`). */
const AUTHENTICATION_FAILURES = new Set(['KafkaJSSASLAuthenticationError', 'PLT_KFK_AUTHENTICATION']);

/**
 * The Kafka error name that makes `err` permanent, found on it or on what it wraps (kafkajs's
 * `cause` of a NumberOfRetriesExceeded, platformatic's `errors` of a MultipleErrors); undefined
 * when nothing in it is permanent.
 */
export function permanentFailureOf(err: unknown): string | undefined {
  return kafkaErrorIn(err, (e) => {
    for (const id of [e.type, e.apiId]) if (typeof id === 'string' && PERMANENT_TYPES.has(id)) return id;
    for (const code of [e.code, e.apiCode]) if (typeof code === 'number' && PERMANENT_CODES.has(code)) return String(code);
    for (const name of [e.name, e.code]) if (typeof name === 'string' && AUTHENTICATION_FAILURES.has(name)) return 'SASL_AUTHENTICATION_FAILED';
    return undefined;
  });
}

/** Broker verdicts about one topic (unknown, invalid, not allowed), not about the connection: by name or number. */
const TOPIC_TYPES = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'INVALID_TOPIC_EXCEPTION', 'TOPIC_AUTHORIZATION_FAILED']);
const TOPIC_CODES = new Set([3, 17, 29]);

/**
 * The Kafka error name when `err` (or what it wraps) is about a topic, not the connection: a
 * produce to a topic the broker does not know or refuses. Such a failure says nothing about the
 * client's health (a forged call's reply topic must not mark the transport failing).
 */
export function topicFailureOf(err: unknown): string | undefined {
  return kafkaErrorIn(err, (e) => {
    for (const id of [e.type, e.apiId]) if (typeof id === 'string' && TOPIC_TYPES.has(id)) return id;
    for (const code of [e.code, e.apiCode]) if (typeof code === 'number' && TOPIC_CODES.has(code)) return String(code);
    return undefined;
  });
}

interface KafkaErrorFields {
  name?: unknown;
  type?: unknown;
  apiId?: unknown;
  code?: unknown;
  apiCode?: unknown;
  cause?: unknown;
  errors?: unknown;
}

/** What `match` finds on `err` or on what it wraps (kafkajs's `cause`, platformatic's `errors`), depth-first. */
function kafkaErrorIn(err: unknown, match: (e: KafkaErrorFields) => string | undefined, depth = 0): string | undefined {
  if (err === null || typeof err !== 'object' || depth > 5) return undefined;
  const e = err as KafkaErrorFields;
  const found = match(e);
  if (found !== undefined) return found;
  for (const inner of [e.cause, ...(Array.isArray(e.errors) ? e.errors : [])]) {
    const deeper = kafkaErrorIn(inner, match, depth + 1);
    if (deeper !== undefined) return deeper;
  }
  return undefined;
}

/** Connection-level failures: the broker is unreachable, a socket closed, a request timed out. */
function isConnectionFailure(err: unknown): boolean {
  const name = (err as { name?: unknown } | null)?.name;
  const text = messageOf(err);
  return (
    (typeof name === 'string' && /Connection|NetworkError|Timeout|BrokerNotFound|NumberOfRetriesExceeded/.test(name)) ||
    /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|Connection (closed|error|timeout)|socket/i.test(text)
  );
}

/** True when the broker does not implement an API (e.g. the test broker and CreateTopics). */
export function isUnsupportedApi(err: unknown): boolean {
  const e = err as { name?: unknown; type?: unknown; apiCode?: unknown } | null;
  return e?.name === 'KafkaJSServerDoesNotSupportApiKey' || /does not support|UNSUPPORTED_VERSION|Unsupported API/i.test(messageOf(err));
}

/**
 * Wraps any error of a Kafka client. MessagingErrors pass through; authorization, SASL and
 * too-large failures are never retriable (a ConnectionError for SASL, else a
 * MessageDeliveryFailure); other connection failures become a retriable ConnectionError, produce
 * failures a MessageDeliveryFailure keeping the library's `retriable` verdict. Client messages hold broker addresses, never credentials; any URL in them
 * is redacted all the same.
 */
export function toMessagingError(err: unknown, what: string): MessagingError {
  if (err instanceof MessagingError) return err;
  const text = `${what}: ${redactUrlsIn(messageOf(err))}`;
  // Before the connection check: kafkajs wraps a refused SASL handshake like a lost connection.
  const permanent = permanentFailureOf(err);
  if (permanent !== undefined) {
    const reason = `${text} (${permanent}: not retried, retrying cannot fix it)`;
    return permanent === 'SASL_AUTHENTICATION_FAILED' ? new ConnectionError(reason, { cause: err, retriable: false }) : new MessageDeliveryFailure(reason, { cause: err, retriable: false });
  }
  if (isConnectionFailure(err)) return new ConnectionError(text, { cause: err, retriable: true });
  return new MessageDeliveryFailure(text, { cause: err, retriable: retriableOf(err) ?? false });
}
