// batchPoll: one stopwatch over the whole batch, with a fake clock and with real timers.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AsyncQueue } from '../../../src/structures/async-queue.js';
import { batchPoll } from '../../../src/contract/poll-style-listener.js';
import { FakeBufferedListener, FakeMessage } from './fakes.js';

/**
 * A fake source on a fake clock: each item arrives at a given time. pollSome hands out what has
 * arrived (up to max), else advances the clock to the next arrival within its timeout, or by it.
 */
function fakeSource(arrivals: number[]) {
  const clock = { t: 0 };
  const pending = [...arrivals].sort((a, b) => a - b);
  const calls: Array<number | undefined> = [];
  const ready = (batch: number[], max: number) => {
    let n = 0;
    for (; n < max && pending.length > 0 && pending[0] <= clock.t; n++) batch.push(pending.shift()!);
    return n;
  };
  const pollSome = async (batch: number[], max: number, timeoutMs: number | undefined): Promise<number> => {
    calls.push(timeoutMs);
    if (pending.length > 0 && pending[0] <= clock.t) return ready(batch, max);
    const next = pending[0];
    if (next !== undefined && (timeoutMs === undefined || next <= clock.t + timeoutMs)) {
      clock.t = next;
      return ready(batch, max);
    }
    if (timeoutMs === undefined) throw new Error('fake source would block forever');
    clock.t += timeoutMs;
    return 0;
  };
  return { clock, pollSome, calls, now: () => clock.t };
}

describe('batchPoll with a fake clock', () => {
  it('one message then silence returns after batchTimeout, not twice it', async () => {
    const src = fakeSource([0]);
    const out = await batchPoll(src.pollSome, { batchSize: 10, batchTimeout: 200, now: src.now });
    expect(out).toEqual([0]);
    expect(src.clock.t).toBe(200);
    expect(src.calls).toEqual([200, 200]);
  });

  it('messages trickling in never hold the batch open: every wait gets only the time left', async () => {
    const src = fakeSource([0, 50, 100, 150, 200, 250, 300]);
    const out = await batchPoll(src.pollSome, { batchSize: 10, batchTimeout: 200, now: src.now });
    expect(out).toEqual([0, 50, 100, 150, 200]);
    expect(src.clock.t).toBe(200);
    // A timer restarted per message or per wait would have waited 200 each time (and taken all seven).
    expect(src.calls).toEqual([200, 200, 150, 100, 50, 0]);
  });

  it('an empty source returns [] after the timeout', async () => {
    const src = fakeSource([]);
    const out = await batchPoll(src.pollSome, { batchSize: 5, batchTimeout: 200, now: src.now });
    expect(out).toEqual([]);
    expect(src.clock.t).toBe(200);
    expect(src.calls).toEqual([200]);
  });

  it('a full batch returns at once', async () => {
    const src = fakeSource([0, 0, 0, 0]);
    const out = await batchPoll(src.pollSome, { batchSize: 3, batchTimeout: 200, now: src.now });
    expect(out).toEqual([0, 0, 0]);
    expect(src.clock.t).toBe(0);
    expect(src.calls).toHaveLength(1);
  });

  it('the wait for the first message counts against batchTimeout', async () => {
    const src = fakeSource([150, 180, 260]);
    const out = await batchPoll(src.pollSome, { batchSize: 10, batchTimeout: 200, now: src.now });
    expect(out).toEqual([150, 180]);
    expect(src.clock.t).toBe(200);
    expect(src.calls).toEqual([200, 50, 20]);
  });

  it('caps batchSize with a positive prefetchSize and ignores -1 and 0', async () => {
    const many = Array.from({ length: 20 }, () => 0);
    let src = fakeSource(many);
    expect(await batchPoll(src.pollSome, { batchSize: 10, batchTimeout: 100, prefetchSize: 3, now: src.now })).toHaveLength(3);
    src = fakeSource(many);
    expect(await batchPoll(src.pollSome, { batchSize: 10, batchTimeout: 100, prefetchSize: -1, now: src.now })).toHaveLength(10);
    src = fakeSource(many);
    expect(await batchPoll(src.pollSome, { batchSize: 10, batchTimeout: 100, prefetchSize: 0, now: src.now })).toHaveLength(10);
  });

  it('batchTimeout undefined falls back to timeout', async () => {
    const src = fakeSource([10, 50, 400]);
    const out = await batchPoll(src.pollSome, { batchSize: 10, timeout: 300, now: src.now });
    expect(out).toEqual([10, 50]);
    expect(src.clock.t).toBe(300);
    expect(src.calls[0]).toBe(300);
  });

  it('with both set, the shorter of timeout and batchTimeout bounds the batch (oslo clips to timeout)', async () => {
    const src = fakeSource([]);
    expect(await batchPoll(src.pollSome, { batchSize: 10, timeout: 100, batchTimeout: 5000, now: src.now })).toEqual([]);
    expect(src.clock.t).toBe(100);
    const src2 = fakeSource([]);
    await batchPoll(src2.pollSome, { batchSize: 10, timeout: 5000, batchTimeout: 100, now: src2.now });
    expect(src2.clock.t).toBe(100);
  });

  it('without any deadline waits for the first message, then takes only what is ready', async () => {
    const src = fakeSource([40, 40, 900]);
    const out = await batchPoll(src.pollSome, { batchSize: 10, now: src.now });
    expect(out).toEqual([40, 40]);
    expect(src.calls).toEqual([undefined]);
    expect(src.clock.t).toBe(40);
  });

  it('batchSize defaults to 1 and bad sizes behave as 1', async () => {
    for (const batchSize of [undefined, 0, -3, Number.NaN]) {
      const src = fakeSource([0, 0]);
      expect(await batchPoll(src.pollSome, { batchSize, batchTimeout: 100, now: src.now })).toEqual([0]);
    }
  });
});

describe('batchPoll with vi fake timers over an AsyncQueue', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('collects what arrives inside the window and returns at its end', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const q = new AsyncQueue<number>();
    const start = Date.now();
    let doneAt: number | undefined;
    const p = batchPoll<number>((batch, max, t) => q.takeInto(batch, max, t), { batchSize: 10, batchTimeout: 200, now: () => Date.now() }).then((r) => {
      doneAt = Date.now();
      return r;
    });
    await vi.advanceTimersByTimeAsync(50);
    q.push(1);
    await vi.advanceTimersByTimeAsync(100);
    q.push(2);
    await vi.advanceTimersByTimeAsync(49);
    expect(doneAt).toBeUndefined();
    q.push(3);
    await vi.advanceTimersByTimeAsync(10);
    expect(await p).toEqual([1, 2, 3]);
    expect(doneAt! - start).toBe(200);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an empty queue resolves [] at the deadline and leaves no timer behind', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const q = new AsyncQueue<number>();
    let result: number[] | undefined;
    void batchPoll<number>((batch, max, t) => q.takeInto(batch, max, t), { batchSize: 3, batchTimeout: 200, now: () => Date.now() }).then((r) => (result = r));
    await vi.advanceTimersByTimeAsync(199);
    expect(result).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(result).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('batchPoll with real timers (generous bounds: busy 2-core box)', () => {
  it('one message then silence returns after ~batchTimeout (not 2x)', async () => {
    const l = new FakeBufferedListener();
    l.deliver(new FakeMessage(1));
    const t0 = performance.now();
    const out = await l.poll({ batchSize: 10, batchTimeout: 200 });
    const took = performance.now() - t0;
    expect(out.map((m) => m.n)).toEqual([1]);
    expect(took).toBeGreaterThanOrEqual(150);
    expect(took).toBeLessThan(1000);
  });

  it('an empty source returns [] after the timeout', async () => {
    const l = new FakeBufferedListener();
    const t0 = performance.now();
    expect(await l.poll({ batchSize: 10, batchTimeout: 200 })).toEqual([]);
    const took = performance.now() - t0;
    expect(took).toBeGreaterThanOrEqual(150);
    expect(took).toBeLessThan(1000);
  });

  it('a full batch returns at once', async () => {
    const l = new FakeBufferedListener();
    for (let i = 0; i < 5; i++) l.deliver(new FakeMessage(i));
    const t0 = performance.now();
    const out = await l.poll({ batchSize: 3, batchTimeout: 5000 });
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(out.map((m) => m.n)).toEqual([0, 1, 2]);
    expect(l.buffered).toBe(2);
  });

  it('a message arriving late in the window still ends the batch at the window end', async () => {
    const l = new FakeBufferedListener();
    const timer = setTimeout(() => l.deliver(new FakeMessage(7)), 120);
    const t0 = performance.now();
    const out = await l.poll({ batchSize: 10, batchTimeout: 250 });
    const took = performance.now() - t0;
    clearTimeout(timer);
    expect(out.map((m) => m.n)).toEqual([7]);
    expect(took).toBeGreaterThanOrEqual(200);
    expect(took).toBeLessThan(1000);
  });

  it('prefetchSize of the listener caps the batch', async () => {
    class Capped extends FakeBufferedListener {
      constructor() {
        super(2);
      }
    }
    const l = new Capped();
    for (let i = 0; i < 5; i++) l.deliver(new FakeMessage(i));
    expect(await l.poll({ batchSize: 10, batchTimeout: 5000 })).toHaveLength(2);
  });

  it('stop() wakes a pending poll without a deadline', async () => {
    const l = new FakeBufferedListener();
    const p = l.poll({ batchSize: 10 });
    await l.stop();
    expect(await p).toEqual([]);
  });

  it('after stop() a poll still hands out what was buffered', async () => {
    const l = new FakeBufferedListener();
    l.deliver(new FakeMessage(1));
    l.deliver(new FakeMessage(2));
    await l.stop();
    expect((await l.poll({ batchSize: 10 })).map((m) => m.n)).toEqual([1, 2]);
    expect(await l.poll({ batchSize: 10 })).toEqual([]);
  });
});
