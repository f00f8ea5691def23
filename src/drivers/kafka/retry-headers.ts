// Reads back the headers tidings writes on its retry copies (delivery count, original topic,
// due time). Anyone who can produce to a topic can forge them, so a value tidings could not have
// written is malformed: the record is dead-lettered, never obeyed (a count that skips the retries,
// a topic that redirects the copy, a due time that holds the partition for years).
import type { IncomingRecord } from './client/index.js';
import { HEADERS } from './topology.js';
import { MAX_TIMER_MS, quoteForLog as quote } from '../../core/checks.js';

/** Slack on a due time beyond `now + requeueBackoff`, for clocks that disagree between hosts. */
export const NOT_BEFORE_SLACK_MS = 60_000;
/** Most digits a delivery count may have: tidings writes at most maxDeliveries (a few). */
const COUNT = /^[1-9][0-9]{0,5}$/;
/** A due time: ms since the epoch, decimal, no sign. */
const EPOCH_MS = /^[0-9]{1,15}$/;

export interface RetryHeaders {
  /** Deliveries before this copy (0 for a record tidings never requeued). */
  readonly previousDeliveries: number;
  /** The topic the notification was first published to. */
  readonly originalTopic: string;
  /** When the copy is due, ms since the epoch; 0 when at once. */
  readonly notBefore: number;
}

export type ParsedRetryHeaders = { readonly ok: true; readonly headers: RetryHeaders } | { readonly ok: false; readonly reason: string; readonly originalTopic: string };

export interface RetryHeaderRules {
  /** The topic a record read from `record.topic` may name as its original: its own, or the one whose retry topic it is. */
  readonly originalTopic: string;
  /** The `requeueBackoff` option, ms. */
  readonly requeueBackoff: number;
  /** Now, ms since the epoch; read from the clock when a due time is checked if not given. */
  readonly now?: number;
}

/** A record whose retry headers tidings could not have written. */
function malformed(reason: string, originalTopic: string): ParsedRetryHeaders {
  return { ok: false, reason, originalTopic };
}

/**
 * Validates the retry headers of `record` against what tidings could have written. Runs for every
 * record a listener reads: no closure, and the clock only for a record with a due time.
 */
export function parseRetryHeaders(record: Pick<IncomingRecord, 'headers'>, rules: RetryHeaderRules): ParsedRetryHeaders {
  const h = record.headers;
  const originalTopic = rules.originalTopic;
  const count = h[HEADERS.deliveries];
  if (count !== undefined && !COUNT.test(count)) return malformed(`header ${HEADERS.deliveries} is not a delivery count: ${quote(count)}`, originalTopic);
  const original = h[HEADERS.originalTopic];
  if (original !== undefined && original !== originalTopic) return malformed(`header ${HEADERS.originalTopic} names ${quote(original)}, not ${originalTopic}`, originalTopic);
  const at = h[HEADERS.notBefore];
  let notBefore = 0;
  if (at !== undefined) {
    if (!EPOCH_MS.test(at)) return malformed(`header ${HEADERS.notBefore} is not a time: ${quote(at)}`, originalTopic);
    notBefore = Number(at);
    const now = rules.now ?? Date.now();
    if (notBefore > now + rules.requeueBackoff + NOT_BEFORE_SLACK_MS) {
      return malformed(`header ${HEADERS.notBefore} is ${notBefore - now} ms ahead, more than requeueBackoff ${rules.requeueBackoff} ms allows`, originalTopic);
    }
  }
  return { ok: true, headers: { previousDeliveries: count === undefined ? 0 : Number(count), originalTopic, notBefore } };
}

/** How long to wait for a due time, as a timer can take it. */
export function delayUntil(notBefore: number, now: number): number {
  return Math.min(Math.max(notBefore - now, 0), MAX_TIMER_MS);
}
