// The plain types every floor speaks: a request context, the notification priorities, and what
// `await` treats as a promise.

/** A request context: a JSON-serialisable plain object (user, project, request id...). */
export type Context = Record<string, unknown>;

/** Notification priorities, lower-case as in routing keys. */
export const PRIORITIES = ['audit', 'debug', 'info', 'warn', 'error', 'critical', 'sample'] as const;
/** A notification priority. */
export type Priority = (typeof PRIORITIES)[number];

/** True for one of PRIORITIES (lower-case). */
export function isPriority(value: unknown): value is Priority {
  return typeof value === 'string' && (PRIORITIES as readonly string[]).includes(value);
}

/** True for a value `await` would wait for (a promise or another thenable): a handler's result, sync or async. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';
}
