// Checks of the option values several floors accept (a retry count, a duration): one name, one
// meaning and one message each, so a bad value reads the same from a client, a notifier or a driver.
import { InvalidArgument } from './errors.js';

/** setTimeout's longest delay, ms: a longer one (or Infinity) fires after 1 ms instead. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A retry count: undefined (the caller's default), -1 (forever), 0 (none) or a count of retries.
 * @throws InvalidArgument naming `field` for anything else.
 */
export function checkRetry(value: unknown, field = 'retry'): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < -1) throw new InvalidArgument(field, 'an integer: -1 (forever), 0 (none) or a count of retries', value);
  return value;
}

/**
 * A deadline that must leave time to act (a call's timeout, a discovery window): a positive finite
 * number of milliseconds.
 * @throws InvalidArgument naming `field` otherwise.
 */
export function checkPositiveMs(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw new InvalidArgument(field, 'a positive finite number of milliseconds', value);
  return value;
}

/**
 * An optional wait that may be zero (a batch timeout, a send's timeout as drivers receive it):
 * undefined, or a finite number of milliseconds >= 0.
 * @throws InvalidArgument naming `field` otherwise.
 */
export function checkOptionalMs(field: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new InvalidArgument(field, 'a non-negative number of milliseconds', value);
  return value;
}

/**
 * A value read off the wire for a log line or a dead letter's reason: at most 64 characters,
 * JSON-quoted so that control characters are escaped.
 */
export function quoteForLog(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}...` : value);
}
