// withRetry: retries only retriable errors, honours retry counts and AbortSignal, wraps the last failure.
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { AbortError, ConnectionError, InvalidArgument, MessageDeliveryFailure, MessagingTimeout } from '../../src/core/errors.js';
import { abortableSleep, retryDelay, RETRY_DEFAULTS, throwIfAborted, withRetry, type RetryPolicy } from '../../src/core/retry.js';

const fast: RetryPolicy = { intervalMs: 1, backoffMs: 1, maxIntervalMs: 5 };

/** fn that fails `failures` times with `error`, then resolves 'ok'. */
function flaky(failures: number, error: () => unknown = () => new ConnectionError('down')) {
  const calls: number[] = [];
  const fn = async (attempt: number) => {
    calls.push(attempt);
    if (calls.length <= failures) throw error();
    return 'ok';
  };
  return { fn, calls };
}

describe('retryDelay', () => {
  it('follows oslo rabbit defaults: interval + backoff * (n-1), capped', () => {
    expect(RETRY_DEFAULTS).toEqual({ intervalMs: 1000, backoffMs: 2000, maxIntervalMs: 30_000 });
    expect(Object.isFrozen(RETRY_DEFAULTS)).toBe(true);
    expect([1, 2, 3, 15, 16, 100].map((n) => retryDelay(n))).toEqual([1000, 3000, 5000, 29_000, 30_000, 30_000]);
    expect(retryDelay(3, { intervalMs: 10, backoffMs: 5, maxIntervalMs: 100 })).toBe(20);
  });
});

describe('withRetry', () => {
  it('returns the first success without retrying', async () => {
    const f = flaky(0);
    expect(await withRetry(f.fn, fast)).toBe('ok');
    expect(f.calls).toEqual([0]);
  });

  it('retries retriable errors and passes the attempt number', async () => {
    const f = flaky(2);
    const seen: Array<{ attempt: number; delayMs: number }> = [];
    expect(await withRetry(f.fn, { ...fast, retry: 5, onRetry: ({ attempt, delayMs }) => seen.push({ attempt, delayMs }) })).toBe('ok');
    expect(f.calls).toEqual([0, 1, 2]);
    expect(seen).toEqual([
      { attempt: 1, delayMs: 1 },
      { attempt: 2, delayMs: 2 },
    ]);
  });

  it('does not retry a non-retriable error and rethrows it unwrapped', async () => {
    const bad = new InvalidArgument('x', 'y', 1);
    const f = flaky(5, () => bad);
    await expect(withRetry(f.fn, { ...fast, retry: 5 })).rejects.toBe(bad);
    expect(f.calls).toEqual([0]);
    // Plain errors are not retriable by default either.
    const g = flaky(5, () => new Error('plain'));
    await expect(withRetry(g.fn, { ...fast, retry: 5 })).rejects.toThrow('plain');
    expect(g.calls).toHaveLength(1);
  });

  it('honours retriable: false on an otherwise retriable class', async () => {
    const f = flaky(5, () => new ConnectionError('auth refused', { retriable: false }));
    await expect(withRetry(f.fn, { ...fast, retry: 5 })).rejects.toBeInstanceOf(ConnectionError);
    expect(f.calls).toHaveLength(1);
  });

  it('retry 0 means one attempt and a wrapped failure', async () => {
    const f = flaky(5);
    const err = await withRetry(f.fn, { ...fast, retry: 0 }).catch((e) => e);
    expect(f.calls).toEqual([0]);
    expect(err).toBeInstanceOf(MessageDeliveryFailure);
    expect(err.message).toBe('Gave up after 1 attempt(s): down');
    expect(err.cause).toBeInstanceOf(ConnectionError);
  });

  it('retry N means N+1 attempts, and the cause is the last failure', async () => {
    let n = 0;
    const fn = async () => {
      throw new MessagingTimeout(`t${n++}`);
    };
    const err = await withRetry(fn, { ...fast, retry: 3 }).catch((e) => e);
    expect(n).toBe(4);
    expect(err).toBeInstanceOf(MessageDeliveryFailure);
    expect(err.cause.message).toBe('t3');
    expect(err.retriable).toBe(false);
  });

  it('retry -1 and undefined retry until success', async () => {
    for (const retry of [-1, undefined]) {
      const f = flaky(25);
      expect(await withRetry(f.fn, { ...fast, retry })).toBe('ok');
      expect(f.calls).toHaveLength(26);
    }
  });

  it('retry forever is ended by the signal with AbortError', async () => {
    const ac = new AbortController();
    let calls = 0;
    const fn = async () => {
      if (++calls === 10) ac.abort(new Error('test is done'));
      throw new ConnectionError('down');
    };
    const err = await withRetry(fn, { ...fast, retry: -1, signal: ac.signal }).catch((e) => e);
    expect(err).toBeInstanceOf(AbortError);
    expect(err.cause).toEqual(new Error('test is done'));
    expect(calls).toBe(10);
  });

  it('an abort during the wait rejects at once, without waiting out the interval', async () => {
    const ac = new AbortController();
    const t0 = performance.now();
    const p = withRetry(flaky(99).fn, { intervalMs: 60_000, retry: -1, signal: ac.signal });
    setTimeout(() => ac.abort(), 20);
    await expect(p).rejects.toBeInstanceOf(AbortError);
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it('an already aborted signal runs nothing', async () => {
    const f = flaky(0);
    await expect(withRetry(f.fn, { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(AbortError);
    expect(f.calls).toEqual([]);
  });

  it('uses a custom isRetriable', async () => {
    const f = flaky(2, () => new Error('ECONNRESET'));
    expect(await withRetry(f.fn, { ...fast, retry: 3, isRetriable: (e) => (e as Error).message === 'ECONNRESET' })).toBe('ok');
    expect(f.calls).toHaveLength(3);
  });

  it('wraps a non-Error retriable failure with its string form', async () => {
    const err = await withRetry(
      async () => {
        throw 'nope';
      },
      { ...fast, retry: 0, isRetriable: () => true },
    ).catch((e) => e);
    expect(err).toBeInstanceOf(MessageDeliveryFailure);
    expect(err.message).toContain('nope');
    expect(err.cause).toBe('nope');
  });
});

describe('abortableSleep / throwIfAborted', () => {
  it('sleeps, and leaves no abort listener behind', async () => {
    const ac = new AbortController();
    await abortableSleep(5, ac.signal);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    await withRetry(flaky(2).fn, { ...fast, signal: ac.signal });
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('rejects with AbortError carrying the reason', async () => {
    const ac = new AbortController();
    const p = abortableSleep(60_000, ac.signal);
    ac.abort('why');
    const err = await p.catch((e) => e);
    expect(err).toBeInstanceOf(AbortError);
    expect(err.cause).toBe('why');
    await expect(abortableSleep(10, AbortSignal.abort())).rejects.toBeInstanceOf(AbortError);
  });

  it('throwIfAborted throws only for an aborted signal', () => {
    expect(() => throwIfAborted(undefined)).not.toThrow();
    expect(() => throwIfAborted(new AbortController().signal)).not.toThrow();
    expect(() => throwIfAborted(AbortSignal.abort())).toThrow(AbortError);
  });
});
