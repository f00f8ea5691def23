// Dead letters: messages a driver set aside after `maxDeliveries` failed deliveries or because
// they were malformed. One shape for every driver that keeps them (Redis, Kafka), read and
// replayed by `tidings dead-letters` through `BaseDriver.deadLetters()`.

/** One message a driver set aside instead of delivering it again. */
export interface DeadLetter {
  /** The driver's id of the dead letter (a stream entry id, `partition:offset`, ...). */
  readonly id: string;
  /** The address it was consumed from, e.g. `notifications.info` or an RPC topic. */
  readonly address: string;
  /** The pool (consumer group) that gave up on it, when the driver knows it. */
  readonly pool?: string;
  /** The body as it was received (JSON text). Payloads are the user's: never log them. */
  readonly body: string;
  /** Why: the last handler error's message, or `malformed: <reason>`. */
  readonly error: string;
  /** The consumer that held it last, when known. */
  readonly consumer?: string;
  /** When it was set aside, ISO 8601. */
  readonly deadAt: string;
  /** How often it was delivered before it was set aside. */
  readonly deliveries: number;
}

/** Which dead letters an operation applies to. */
export interface DeadLetterQuery {
  /** The address whose dead letters are meant, e.g. `notifications.info`. */
  readonly address: string;
  /** The exchange of the address on drivers that have exchanges. @default the transport's control exchange */
  readonly exchange?: string;
  /** Only these ids; all of the address's dead letters when omitted. */
  readonly ids?: readonly string[];
  /** At most this many, oldest first. @default 100 for list, all for replay and purge */
  readonly limit?: number;
}

/**
 * A driver's dead letters. Every method resolves once the broker acknowledged the change.
 *
 * - `list` MUST NOT change anything and returns the oldest first.
 * - `replay` MUST put each message back on its address with its original body (so listeners
 *   dedupe it on its `_unique_id` if an earlier delivery was in fact handled) before removing it
 *   from the dead letters: a crash in between leaves a copy in both places, never in neither.
 *   It resolves with the number replayed.
 * - `purge` removes them for good and resolves with the number removed.
 */
export interface DeadLetterStore {
  /** The dead letters the query names, oldest first; changes nothing. */
  list(query: DeadLetterQuery): Promise<DeadLetter[]>;
  /** Puts them back on their address, then removes them; resolves with the number replayed. */
  replay(query: DeadLetterQuery): Promise<number>;
  /** Removes them for good; resolves with the number removed. */
  purge(query: DeadLetterQuery): Promise<number>;
}

/** Longest `error` text a dead letter keeps (a stack or a huge message is cut). */
const MAX_REASON_LENGTH = 1000;

/**
 * The `error` text of a dead letter from the last `requeue(reason)`: the error's message (with
 * its class when not a plain Error), or `fallback` (e.g. "requeued 5 times") when the handler
 * asked for the requeue without throwing.
 */
export function requeueReason(reason: unknown, fallback: string): string {
  if (reason === undefined || reason === null) return fallback;
  let text: string;
  if (reason instanceof Error) text = reason.name && reason.name !== 'Error' ? `${reason.name}: ${reason.message}` : reason.message;
  else if (typeof reason === 'string') text = reason;
  else {
    try {
      text = JSON.stringify(reason) ?? String(reason);
    } catch {
      text = String(reason);
    }
  }
  return text.length > MAX_REASON_LENGTH ? `${text.slice(0, MAX_REASON_LENGTH - 1)}…` : text;
}

/** The warning a driver logs when `dead_letter_max_len` made it delete the oldest dead letters (one wording on every driver, for alerts). */
export const DEAD_LETTERS_DROPPED = 'Dropped the oldest dead letters: more than dead_letter_max_len';
