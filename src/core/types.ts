// The plain types every floor speaks: a request context and the notification priorities.

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
