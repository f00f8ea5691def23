// Maps ioredis and socket errors into tidings' error tree; the raw error only rides as `cause`.
import { ConnectionError, MessageDeliveryFailure, MessagingError } from '../../core/errors.js';
import { redactUrlsIn } from '../../core/transport-url.js';

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The last connection failure of each client (TLS, refused, DNS), until it is ready again. */
const lastConnectionErrors = new WeakMap<object, Error>();

/** Remembers why `client` could not connect, for the commands that fail because of it; `undefined` once it is ready. */
export function noteConnectionError(client: object, err: Error | undefined): void {
  if (err) lastConnectionErrors.set(client, err);
  else lastConnectionErrors.delete(client);
}

/** ioredis's own words for "the command never reached a connection": they say nothing of why. */
function isUnreachable(err: unknown): boolean {
  return (err as { name?: string } | null)?.name === 'MaxRetriesPerRequestError' || /Connection is closed|Stream isn't writeable/.test(messageOf(err));
}

/** True when the server said the group or its stream does not exist (deleted under us). */
export function isNoGroup(err: unknown): boolean {
  return /^NOGROUP/.test(messageOf(err));
}

/** True for `XGROUP CREATE` on a group that exists: the declaration is already done. */
export function isBusyGroup(err: unknown): boolean {
  return /^BUSYGROUP/.test(messageOf(err));
}

/** Redis refused a write at `maxmemory` with a noeviction policy. */
export function isOutOfMemory(err: unknown): boolean {
  return /^OOM\b/.test(messageOf(err));
}

/**
 * Wraps any error from ioredis or the socket. MessagingErrors pass through. Redis at
 * `maxmemory` with `noeviction` (OOM) and a refused login or permission are not retriable
 * (trying again at once changes nothing); replication that fell short, read-only replicas
 * during a failover, LOADING, cluster redirections and lost connections are. ioredis gets an
 * options object, never a URL, but any URL in its text is redacted all the same. When the
 * command failed because `client` could not connect, the message says why (a certificate that
 * does not verify, a refused connection) instead of ioredis's "max retries per request".
 */
export function toMessagingError(err: unknown, what: string, client?: object): MessagingError {
  if (err instanceof MessagingError) return err;
  const connectErr = client && isUnreachable(err) ? lastConnectionErrors.get(client) : undefined;
  if (connectErr) {
    const why = toMessagingError(connectErr, what);
    if (!why.retriable) return why;
    return new ConnectionError(`${what}: Redis is unreachable (${redactUrlsIn(messageOf(connectErr))})`, { cause: err, retriable: true });
  }
  const text = redactUrlsIn(messageOf(err));
  if (isOutOfMemory(err)) {
    return new MessageDeliveryFailure(`${what}: Redis is out of memory (maxmemory reached with a noeviction policy): ${text}`, { cause: err, retriable: false });
  }
  if (/^(NOPERM|WRONGPASS|NOAUTH)\b/.test(text)) {
    return new ConnectionError(`${what}: Redis refused the login or the command (${text})`, { cause: err, retriable: false });
  }
  if (/^ERR The user executing the script can't run this command/.test(text)) {
    // A command the ACL denies, run by one of the driver's scripts: Redis 7.0 says ERR, not NOPERM.
    return new ConnectionError(`${what}: Redis refused the command (NOPERM, inside a script: ${text})`, { cause: err, retriable: false });
  }
  if (/^(READONLY|LOADING|MASTERDOWN|TRYAGAIN|CLUSTERDOWN|MOVED|ASK)\b/.test(text)) {
    return new ConnectionError(`${what}: ${text}`, { cause: err, retriable: true });
  }
  if (/^[A-Z]+ /.test(text) && (err as { name?: string } | null)?.name === 'ReplyError') {
    // Any other server error reply: the command is wrong for this data, not the connection.
    return new MessageDeliveryFailure(`${what}: ${text}`, { cause: err, retriable: false });
  }
  return new ConnectionError(`${what}: ${text}`, { cause: err, retriable: true });
}
