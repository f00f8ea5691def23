// Deadline-based waiting for tests: poll a condition instead of sleeping. Part of tidings/testing,
// and the one copy tidings' own tests use.
import { randomUUID } from 'node:crypto';

/** Options of {@link waitFor}. */
export interface WaitOptions {
  /** Give up after this many ms. @default 10000 */
  timeoutMs?: number;
  /** Poll interval in ms. @default 10 */
  intervalMs?: number;
  /** Included in the timeout error. */
  message?: string;
}

/** Resolves with the first truthy value of `cond`, or rejects after the deadline. */
export async function waitFor<T>(cond: () => T | Promise<T>, options: WaitOptions = {}): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await cond();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const why = options.message ?? 'condition';
      throw new Error(`waitFor: ${why} not met within ${timeoutMs} ms${lastError ? ` (last error: ${String(lastError)})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 10));
  }
}

/** A unique name for topics, pools, exchanges: `t-<uuid>` (with an optional prefix). */
export function uniqueName(prefix = 't'): string {
  return `${prefix}-${randomUUID()}`;
}

/** A promise with its resolvers exposed; see {@link deferred}. */
export interface Deferred<T> {
  /** Settles when `resolve` or `reject` is called. */
  promise: Promise<T>;
  /** Fulfils `promise` with a value. */
  resolve: (v: T) => void;
  /** Rejects `promise` with a reason. */
  reject: (e: unknown) => void;
}

/** A promise with its resolvers exposed, for handlers that tests want to release later. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
