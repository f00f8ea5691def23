// AsyncQueue: the push->poll buffer. Waiters, timeouts, close, unshift, drain.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AsyncQueue } from '../../../src/structures/async-queue.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('AsyncQueue', () => {
  it('is FIFO for buffered items and reports its size', async () => {
    const q = new AsyncQueue<number>();
    q.push(1);
    q.push(2);
    q.push(3);
    expect(q.size).toBe(3);
    expect(await q.shift()).toBe(1);
    expect(await q.shift(0)).toBe(2);
    expect(q.size).toBe(1);
  });

  it('hands a pushed item straight to the oldest waiter', async () => {
    const q = new AsyncQueue<string>();
    const a = q.shift();
    const b = q.shift();
    q.push('x');
    q.push('y');
    expect(await a).toBe('x');
    expect(await b).toBe('y');
    expect(q.size).toBe(0);
  });

  it('resolves undefined after the timeout and forgets the waiter', async () => {
    vi.useFakeTimers();
    const q = new AsyncQueue<number>();
    let got: number | undefined | 'pending' = 'pending';
    void q.shift(100).then((v) => (got = v));
    await vi.advanceTimersByTimeAsync(99);
    expect(got).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(got).toBeUndefined();
    // A later push is buffered, not given to the expired waiter.
    q.push(5);
    expect(q.size).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('clears the waiter timer when an item arrives in time', async () => {
    vi.useFakeTimers();
    const q = new AsyncQueue<number>();
    const p = q.shift(1000);
    expect(vi.getTimerCount()).toBe(1);
    q.push(9);
    expect(await p).toBe(9);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('timeout 0 (or negative) answers at once without a timer', async () => {
    vi.useFakeTimers();
    const q = new AsyncQueue<number>();
    expect(await q.shift(0)).toBeUndefined();
    expect(await q.shift(-5)).toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a timeout too large for setTimeout means no limit, not 1 ms', async () => {
    vi.useFakeTimers();
    const q = new AsyncQueue<number>();
    for (const t of [Infinity, 2 ** 31, 1e12]) {
      let got: number | undefined | 'pending' = 'pending';
      void q.shift(t).then((v) => (got = v));
      await vi.advanceTimersByTimeAsync(10);
      expect(got).toBe('pending');
      q.push(1);
      await vi.advanceTimersByTimeAsync(0);
      expect(got).toBe(1);
    }
  });

  it('close() wakes every waiter with undefined; buffered items still drain after it', async () => {
    const q = new AsyncQueue<number>();
    const waiters = [q.shift(), q.shift(5000)];
    q.close();
    expect(q.closed).toBe(true);
    expect(await Promise.all(waiters)).toEqual([undefined, undefined]);
    q.push(1);
    q.push(2);
    expect(await q.shift()).toBe(1);
    expect(await q.shift(1000)).toBe(2);
    // Closed and empty: answers at once even without a timeout.
    expect(await q.shift()).toBeUndefined();
  });

  it('unshift() puts an item back at the front, also after items were taken', async () => {
    const q = new AsyncQueue<number>();
    q.unshift(1);
    q.push(2);
    expect(await q.shift()).toBe(1);
    q.unshift(0);
    q.unshift(-1);
    expect([await q.shift(), await q.shift(), await q.shift()]).toEqual([-1, 0, 2]);
  });

  it('drain() takes everything buffered at once and leaves it empty', async () => {
    const q = new AsyncQueue<number>();
    for (let i = 0; i < 5; i++) q.push(i);
    await q.shift();
    expect(q.drain()).toEqual([1, 2, 3, 4]);
    expect(q.size).toBe(0);
    expect(q.drain()).toEqual([]);
    q.push(7);
    expect(await q.shift()).toBe(7);
  });

  it('stays FIFO across internal compaction of many items', async () => {
    const q = new AsyncQueue<number>();
    const n = 5000;
    for (let i = 0; i < n; i++) q.push(i);
    const out: number[] = [];
    for (let i = 0; i < 3000; i++) out.push((await q.shift())!);
    for (let i = n; i < n + 10; i++) q.push(i);
    q.unshift(-1);
    out.push((await q.shift())!);
    out.push(...q.drain());
    expect(out.slice(0, 3000)).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    expect(out[3000]).toBe(-1);
    expect(out.slice(3001)).toEqual(Array.from({ length: n + 10 - 3000 }, (_, i) => 3000 + i));
  });
});

/** What `promise` resolved with so far: 'pending' until it settles. */
function watch<T>(promise: Promise<T>): { value: T | 'pending' } {
  const seen: { value: T | 'pending' } = { value: 'pending' };
  void promise.then((v) => (seen.value = v));
  return seen;
}

describe('AsyncQueue.take: one wait of a batch (the batch stopwatch is batchPoll\'s)', () => {
  it('buffered items answer at once, capped at max, without a timer; the rest stays', async () => {
    vi.useFakeTimers();
    const q = new AsyncQueue<number>();
    for (let i = 0; i < 5; i++) q.push(i);
    expect(await q.take(3, 1000)).toEqual([0, 1, 2]);
    expect(vi.getTimerCount()).toBe(0);
    expect(q.size).toBe(2);
  });

  it('resolves on the first item with what the pushing code buffered by then: a burst is one take, one timer', async () => {
    vi.useFakeTimers();
    const q = new AsyncQueue<number>();
    const got = watch(q.take(10, 200));
    expect(vi.getTimerCount()).toBe(1);
    expect(q.waiting).toBe(1);
    q.push(1);
    q.push(2);
    q.push(3);
    await vi.advanceTimersByTimeAsync(0);
    expect(got.value).toEqual([1, 2, 3]);
    expect(vi.getTimerCount()).toBe(0);
    expect(q.waiting).toBe(0);
  });

  it('does not wait for max to fill: that would be a second stopwatch', async () => {
    vi.useFakeTimers();
    const q = new AsyncQueue<number>();
    const got = watch(q.take(3, 200));
    await vi.advanceTimersByTimeAsync(50);
    q.push(1);
    await vi.advanceTimersByTimeAsync(0);
    expect(got.value).toEqual([1]);
  });

  it('answers [] when its timeout passes; a later push is buffered for the next taker', async () => {
    vi.useFakeTimers();
    const q = new AsyncQueue<number>();
    const empty = watch(q.take(10, 100));
    await vi.advanceTimersByTimeAsync(99);
    expect(empty.value).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(empty.value).toEqual([]);
    q.push(2);
    expect(q.size).toBe(1);
  });

  it('without a timeout, waits for the first item with no timer', async () => {
    vi.useFakeTimers();
    const q = new AsyncQueue<number>();
    const got = watch(q.take(10));
    await vi.advanceTimersByTimeAsync(1000);
    expect(got.value).toBe('pending');
    expect(vi.getTimerCount()).toBe(0);
    q.push(1);
    q.push(2);
    await vi.advanceTimersByTimeAsync(0);
    expect(got.value).toEqual([1, 2]);
    q.push(3);
    expect(await q.take(10)).toEqual([3]);
  });

  it('a first item drained away before the take resolved is not an empty take: it waits on', async () => {
    const q = new AsyncQueue<number>();
    const got = watch(q.take(10, 5000));
    q.push(1);
    expect(q.drain()).toEqual([1]);
    await Promise.resolve();
    await Promise.resolve();
    expect(got.value).toBe('pending');
    q.push(2);
    await new Promise((r) => setTimeout(r, 0));
    expect(got.value).toEqual([2]);
  });

  it('timeout 0 takes what is buffered without a timer; max below 1 counts as 1', async () => {
    vi.useFakeTimers();
    const q = new AsyncQueue<number>();
    expect(await q.take(5, 0)).toEqual([]);
    q.push(1);
    q.push(2);
    expect(await q.take(5, 0)).toEqual([1, 2]);
    q.push(3);
    q.push(4);
    expect(await q.take(0, 100)).toEqual([3]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('close() hands each waiting take what is buffered, oldest first; a closed queue answers at once', async () => {
    const q = new AsyncQueue<number>();
    const first = q.take(2, 5000);
    const second = q.take(5, 5000);
    const third = q.shift(5000);
    q.push(1);
    q.close();
    expect(await first).toEqual([1]);
    expect(await second).toEqual([]);
    expect(await third).toBeUndefined();
    q.push(7);
    q.push(8);
    expect(await q.take(5, 5000)).toEqual([7, 8]);
    expect(await q.take(5)).toEqual([]);
  });

  it('waiters are served in order; one that times out takes nothing', async () => {
    vi.useFakeTimers();
    const q = new AsyncQueue<number>();
    const late = watch(q.shift(500));
    const batch = watch(q.take(2, 1000));
    const one = watch(q.shift());
    await vi.advanceTimersByTimeAsync(500);
    expect(late.value).toBeUndefined();
    q.push(1);
    q.push(2);
    q.push(3);
    await vi.advanceTimersByTimeAsync(0);
    expect(batch.value).toEqual([1, 2]);
    expect(one.value).toBe(3);
  });

  it('unshift() serves a waiting taker', async () => {
    const q = new AsyncQueue<number>();
    const p = q.take(1, 5000);
    q.unshift(4);
    expect(await p).toEqual([4]);
  });
});

describe('AsyncQueue.takeReady', () => {
  it('moves what is buffered without a promise, capped at max; nothing while an older take waits', async () => {
    const q = new AsyncQueue<number>();
    const into: number[] = [0];
    expect(q.takeReady(into, 5)).toBe(0);
    q.push(1);
    q.push(2);
    q.push(3);
    expect(q.takeReady(into, 2)).toBe(2);
    expect(into).toEqual([0, 1, 2]);
    expect(q.takeReady(into, 5)).toBe(1);
    const waiting = q.take(1, 5000);
    q.push(4);
    expect(q.takeReady(into, 5)).toBe(0);
    expect(await waiting).toEqual([4]);
  });
});
