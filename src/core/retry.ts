// The one retry loop: retries only `retriable` errors, honours an AbortSignal, backs off as
// oslo's rabbit reconnect does, and wraps the last failure in MessageDeliveryFailure.
import { AbortError, InvalidArgument, MessageDeliveryFailure, MessagingError } from './errors.js';

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

/**
 * Retries of whole RPC calls (`RpcClientOptions.retryPolicy`, `RpcCallOptions.retryPolicy`), as
 * Moleculer's `retryPolicy`: a new attempt is a new request. Only calls the caller declared
 * idempotent are retried, and only after a failure that says the server did not answer: a
 * timeout or a delivery failure, never an error the server replied with.
 */
export interface RpcRetryPolicy {
  /** Attempts in all, the first included (1 = no retry). @default 3 */
  attempts?: number;
  /** Wait before the first retry, ms. @default 100 */
  delayMs?: number;
  /** Each wait is the previous one times this. @default 2 */
  backoffFactor?: number;
  /** Upper bound of one wait, ms. @default 5000 */
  maxDelayMs?: number;
  /** Share of each wait drawn at random (0 = none, 1 = anywhere between 0 and the wait), so that callers spread out. @default 0.5 */
  jitter?: number;
  /** Methods whose calls may be retried: the caller declares them idempotent. A call's `idempotent` option overrides it. @default [] */
  idempotentMethods?: readonly string[];
  /**
   * Narrows the failures retried: called only with a timeout or delivery failure (the default
   * set); return false to give up. Errors a server replied with are never retried.
   * @default every failure of the default set
   */
  retryOn?: (error: unknown) => boolean;
}

/** Defaults of RpcRetryPolicy. */
export const RPC_RETRY_DEFAULTS = Object.freeze({
  /** Attempts in all, the first included. */
  attempts: 3,
  /** Wait before the first retry, ms. */
  delayMs: 100,
  /** Growth of the wait per retry. */
  backoffFactor: 2,
  /** Upper bound of one wait, ms. */
  maxDelayMs: 5000,
  /** Share of each wait drawn at random. */
  jitter: 0.5,
});

/** An RpcRetryPolicy with every default filled in and checked. */
export interface ResolvedRpcRetryPolicy {
  readonly attempts: number;
  readonly delayMs: number;
  readonly backoffFactor: number;
  readonly maxDelayMs: number;
  readonly jitter: number;
  readonly idempotentMethods: ReadonlySet<string>;
  readonly retryOn: ((error: unknown) => boolean) | undefined;
}

const RETRY_POLICY_KEYS = ['attempts', 'delayMs', 'backoffFactor', 'maxDelayMs', 'jitter', 'idempotentMethods', 'retryOn'];

/**
 * Checks an RpcRetryPolicy (`field` names it in errors) and fills in the defaults.
 * @throws InvalidArgument naming the field, the expected and the received value.
 */
export function resolveRpcRetryPolicy(field: string, policy: unknown): ResolvedRpcRetryPolicy {
  if (policy === null || typeof policy !== 'object' || Array.isArray(policy)) throw new InvalidArgument(field, 'an object {attempts?, delayMs?, backoffFactor?, maxDelayMs?, jitter?, idempotentMethods?, retryOn?}', policy);
  const p = policy as Record<string, unknown>;
  for (const key of Object.keys(p)) if (!RETRY_POLICY_KEYS.includes(key)) throw new InvalidArgument(`${field}.${key}`, `one of ${RETRY_POLICY_KEYS.join(', ')}`, key);
  const attempts = p.attempts ?? RPC_RETRY_DEFAULTS.attempts;
  if (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < 1) throw new InvalidArgument(`${field}.attempts`, 'an integer >= 1 (attempts in all, the first included)', attempts);
  const number = (key: string, fallback: number, ok: (n: number) => boolean, expected: string): number => {
    const v = p[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || !ok(v)) throw new InvalidArgument(`${field}.${key}`, expected, v);
    return v;
  };
  const delayMs = number('delayMs', RPC_RETRY_DEFAULTS.delayMs, (n) => n >= 0, 'a non-negative number of milliseconds');
  const backoffFactor = number('backoffFactor', RPC_RETRY_DEFAULTS.backoffFactor, (n) => n >= 1, 'a number >= 1');
  const maxDelayMs = number('maxDelayMs', RPC_RETRY_DEFAULTS.maxDelayMs, (n) => n >= 0, 'a non-negative number of milliseconds');
  const jitter = number('jitter', RPC_RETRY_DEFAULTS.jitter, (n) => n >= 0 && n <= 1, 'a number from 0 to 1');
  const methods = p.idempotentMethods ?? [];
  if (!Array.isArray(methods) || methods.some((m) => typeof m !== 'string' || m === '')) throw new InvalidArgument(`${field}.idempotentMethods`, 'an array of method names', methods);
  if (p.retryOn !== undefined && typeof p.retryOn !== 'function') throw new InvalidArgument(`${field}.retryOn`, 'a function (error) => boolean', p.retryOn);
  return Object.freeze({ attempts, delayMs, backoffFactor, maxDelayMs, jitter, idempotentMethods: new Set(methods as string[]), retryOn: p.retryOn as ResolvedRpcRetryPolicy['retryOn'] });
}

/** The wait before retry number `retry` (1-based): exponential, capped, with `jitter` of it random. */
export function rpcRetryDelay(retry: number, policy: Pick<ResolvedRpcRetryPolicy, 'delayMs' | 'backoffFactor' | 'maxDelayMs' | 'jitter'>, random: () => number = Math.random): number {
  const base = Math.min(policy.delayMs * policy.backoffFactor ** (retry - 1), policy.maxDelayMs);
  return base * (1 - policy.jitter * random());
}
