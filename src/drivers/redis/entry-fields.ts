// Reads back the fields the Redis driver writes beside a body: a stream entry's `b` (body) and
// `x` (an RPC request's deadline), an RPC request list element's deadline prefix (`x=<ms>;`), and
// the x-* metadata the dead-letter script appends. Anyone who
// can write to a stream can forge them, so a value tidings could not have written is malformed:
// the entry is dead-lettered, never obeyed (a deadline no timer can hold, fields of a dead letter
// smuggled into a live entry, a dead letter whose origin or counts are not numbers).
import { MAX_TIMER_MS, quoteForLog } from '../../core/checks.js';
import { BODY_FIELD, DEADLINE_FIELD } from './topology.js';

/** A time as the driver writes it: ms since the epoch, decimal, no sign. */
const EPOCH_MS = /^[0-9]{1,15}$/;
/** A delivery count as the dead-letter script writes it. */
const COUNT = /^[0-9]{1,9}$/;

/** The fields the dead-letter script appends after the original ones, in this order (scripts/index.ts). */
export const DEAD_LETTER_FIELDS = ['x-stream', 'x-group', 'x-id', 'x-consumer', 'x-deliveries', 'x-error', 'x-time'] as const;

/** A stream entry's fields: its body and, on an RPC request with a timeout, its deadline. */
export type ParsedEntry = { readonly ok: true; readonly body: string; readonly deadline?: number } | { readonly ok: false; readonly reason: string };

/**
 * Validates a stream entry's fields against what the driver writes: one `b`, and on an RPC
 * stream at most one `x`, a time no further ahead than a timer can wait; nothing else.
 */
export function parseEntryFields(fields: readonly string[] | null, rpc: boolean, now: number): ParsedEntry {
  if (!fields || fields.length % 2 !== 0) return { ok: false, reason: 'the entry has no fields' };
  let body: string | undefined;
  let deadline: number | undefined;
  for (let i = 0; i < fields.length; i += 2) {
    const [name, value] = [fields[i], fields[i + 1]];
    if (name === BODY_FIELD && body === undefined) {
      body = value;
    } else if (name === DEADLINE_FIELD && rpc && deadline === undefined) {
      if (!EPOCH_MS.test(value)) return { ok: false, reason: `field ${DEADLINE_FIELD} is not a deadline: ${quoteForLog(value)}` };
      deadline = Number(value);
      if (deadline - now > MAX_TIMER_MS) return { ok: false, reason: `field ${DEADLINE_FIELD} is ${deadline - now} ms ahead, more than any call timeout` };
    } else {
      return { ok: false, reason: `unexpected field ${quoteForLog(name)}` };
    }
  }
  if (body === undefined) return { ok: false, reason: `no ${BODY_FIELD} (body) field` };
  return deadline === undefined ? { ok: true, body } : { ok: true, body, deadline };
}

/** The prefix of a request list element carrying a deadline: `x=<epoch ms>;<body>`. */
const LIST_DEADLINE = /^x=([0-9]{1,15});/;

/**
 * An RPC request as a list element: the body (oslo's envelope, a JSON object: it starts with `{`),
 * or, for a call with a timeout, `x=<deadline>;` and the body, so that the server skips it once
 * its caller gave up, as it does with a stream entry's `x` field.
 */
export function encodeListRequest(body: string, deadline: number | undefined): string {
  return deadline === undefined ? body : `x=${deadline};${body}`;
}

/**
 * Reads a request list element back: a body that starts with `{`, or a deadline prefix tidings
 * could have written (a time no further ahead than a timer can wait) and the body. Anything else
 * is malformed: set aside, never obeyed. Its `fields` are those of the same request as a stream
 * entry (`b`, and `x` when it has a deadline), for its dead letter.
 */
export function parseListRequest(element: string, now: number): ParsedEntry & { readonly fields: readonly string[] } {
  if (element.startsWith('{')) return { ok: true, body: element, fields: [BODY_FIELD, element] };
  const m = LIST_DEADLINE.exec(element);
  if (!m) return { ok: false, reason: `a request list element starts with neither { nor x=<deadline>;: ${quoteForLog(element.slice(0, 16))}`, fields: [BODY_FIELD, element] };
  const deadline = Number(m[1]);
  const body = element.slice(m[0].length);
  const fields = [BODY_FIELD, body, DEADLINE_FIELD, m[1]];
  if (deadline - now > MAX_TIMER_MS) return { ok: false, reason: `its deadline is ${deadline - now} ms ahead, more than any call timeout`, fields };
  return { ok: true, body, deadline, fields };
}

/** A dead-letter entry split into what was on the stream and the metadata the script added. */
export interface DeadLetterFields {
  /** The original fields, as they were on the stream. */
  readonly original: readonly string[];
  /** The stream it came from. */
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;
  readonly error: string;
  /** Deliveries before it was set aside; undefined when the field is not a count. */
  readonly deliveries?: number;
  /** When it was set aside, ms since the epoch; undefined when the field is not a time. */
  readonly time?: number;
  /** Why the metadata cannot be trusted (a count or time tidings could not have written). */
  readonly malformed?: string;
}

/**
 * The metadata of a dead-letter entry, read from its end (where the script appended it): a
 * live entry's own `x-stream` field, copied in front, is original content, never the origin.
 * Undefined when the entry does not end with the driver's metadata.
 */
export function parseDeadLetterFields(fields: readonly string[]): DeadLetterFields | undefined {
  const start = fields.length - 2 * DEAD_LETTER_FIELDS.length;
  if (start < 0 || fields.length % 2 !== 0) return undefined;
  const meta: string[] = [];
  for (let i = 0; i < DEAD_LETTER_FIELDS.length; i++) {
    if (fields[start + 2 * i] !== DEAD_LETTER_FIELDS[i]) return undefined;
    meta.push(fields[start + 2 * i + 1]);
  }
  const [stream, group, , consumer, count, error, at] = meta;
  const problems: string[] = [];
  const deliveries = COUNT.test(count) ? Number(count) : undefined;
  if (deliveries === undefined) problems.push(`x-deliveries is not a count: ${quoteForLog(count)}`);
  const time = EPOCH_MS.test(at) && Number.isFinite(new Date(Number(at)).getTime()) ? Number(at) : undefined;
  if (time === undefined) problems.push(`x-time is not a time: ${quoteForLog(at)}`);
  return { original: fields.slice(0, start), stream, group, consumer, error, deliveries, time, ...(problems.length > 0 ? { malformed: problems.join('; ') } : {}) };
}
