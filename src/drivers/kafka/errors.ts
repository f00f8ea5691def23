// Maps kafkajs and @platformatic/kafka errors into tidings' error tree; the raw error only rides
// as `cause`, and its `retriable` flag (both libraries set one) carries over.
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
 * Wraps any error of a Kafka client. MessagingErrors pass through; connection failures become a
 * retriable ConnectionError, produce failures a MessageDeliveryFailure keeping the library's
 * `retriable` verdict. Client messages hold broker addresses, never credentials; any URL in them
 * is redacted all the same.
 */
export function toMessagingError(err: unknown, what: string): MessagingError {
  if (err instanceof MessagingError) return err;
  const text = `${what}: ${redactUrlsIn(messageOf(err))}`;
  if (isConnectionFailure(err)) return new ConnectionError(text, { cause: err, retriable: true });
  return new MessageDeliveryFailure(text, { cause: err, retriable: retriableOf(err) ?? false });
}
