// The one retry loop: retries only `retriable` errors, honours an AbortSignal, backs off as
// oslo's rabbit reconnect does, and wraps the last failure in MessageDeliveryFailure.
import { AbortError, MessageDeliveryFailure, MessagingError } from './errors.js';

/** How `withRetry` retries one operation. */
export interface RetryPolicy {
  /** Retries after the first attempt: undefined or -1 = forever, 0 = none. */
  retry?: number;
  /** First wait, ms. @default 1000 (oslo rabbit_retry_interval) */
  intervalMs?: number;
  /** Added per attempt, ms. @default 2000 (oslo rabbit_retry_backoff) */
  backoffMs?: number;
  /** Upper bound of one wait, ms. @default 30000 (oslo rabbit_interval_max) */
  maxIntervalMs?: number;
  /** Aborts the waits between attempts (rejects with AbortError). */
  signal?: AbortSignal;
  /** Called before each wait, for logging. */
  onRetry?: (info: { attempt: number; delayMs: number; error: unknown }) => void;
  /** Decides whether an error is worth retrying. @default error.retriable === true */
  isRetriable?: (error: unknown) => boolean;
}

/** Defaults of RetryPolicy (oslo's rabbit reconnect settings). */
export const RETRY_DEFAULTS = Object.freeze({
  /** First wait, ms (oslo `rabbit_retry_interval`). */
  intervalMs: 1000,
  /** Added per attempt, ms (oslo `rabbit_retry_backoff`). */
  backoffMs: 2000,
  /** Upper bound of one wait, ms (oslo `rabbit_interval_max`). */
  maxIntervalMs: 30_000,
});

/** The wait before retry number `attempt` (1-based). */
export function retryDelay(attempt: number, policy: Pick<RetryPolicy, 'intervalMs' | 'backoffMs' | 'maxIntervalMs'> = {}): number {
  const interval = policy.intervalMs ?? RETRY_DEFAULTS.intervalMs;
  const backoff = policy.backoffMs ?? RETRY_DEFAULTS.backoffMs;
  const max = policy.maxIntervalMs ?? RETRY_DEFAULTS.maxIntervalMs;
  return Math.min(interval + backoff * (attempt - 1), max);
}

/** Runs `fn` until it succeeds, fails with a non-retriable error, or retries run out. */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, policy: RetryPolicy = {}): Promise<T> {
  const isRetriable = policy.isRetriable ?? ((e: unknown) => e instanceof MessagingError && e.retriable);
  const maxRetries = policy.retry === undefined || policy.retry < 0 ? Infinity : policy.retry;
  for (let attempt = 0; ; attempt++) {
    throwIfAborted(policy.signal);
    try {
      return await fn(attempt);
    } catch (error) {
      if (!isRetriable(error)) throw error;
      if (attempt >= maxRetries) {
        throw new MessageDeliveryFailure(`Gave up after ${attempt + 1} attempt(s): ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
      const delayMs = retryDelay(attempt + 1, policy);
      policy.onRetry?.({ attempt: attempt + 1, delayMs, error });
      await abortableSleep(delayMs, policy.signal);
    }
  }
}

/**
 * `withRetry` for an operation whose first attempt is already under way: the retry loop and its
 * policy are only built when that attempt fails, so the usual success costs one `catch`.
 * `onFailure` sees every failed attempt, the first included.
 */
export function retryAfterFirst<T>(first: Promise<T>, again: () => Promise<T>, policy: () => RetryPolicy, onFailure?: (error: unknown) => void): Promise<T> {
  return first.catch((error: unknown) => {
    onFailure?.(error);
    const retry = onFailure
      ? () =>
          again().catch((err: unknown) => {
            onFailure(err);
            throw err;
          })
      : again;
    return withRetry((attempt) => (attempt === 0 ? Promise.reject(error) : retry()), policy());
  });
}

export function throwIfAborted(signal?: AbortSignal): void {
  if (signal?.aborted) throw new AbortError('The operation was aborted', { cause: signal.reason });
}

/** Sleeps `ms`, rejecting with AbortError as soon as `signal` aborts. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new AbortError('The operation was aborted', { cause: signal.reason }));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortError('The operation was aborted', { cause: signal?.reason }));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
