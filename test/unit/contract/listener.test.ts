// PollStyleListenerAdapter: a poll loop that never dies, and a stop() that loses nothing.
import { describe, expect, it } from 'vitest';
import { InvalidState } from '../../../src/core/errors.js';
import { createMemoryLogger, type Logger } from '../../../src/core/logger.js';
import { PollStyleListenerAdapter } from '../../../src/contract/listener.js';
import { deferred, waitFor } from '../../../src/testing/wait.js';
import { FakeBufferedListener, FakeMessage } from './fakes.js';

const fastBackoff = { minMs: 5, maxMs: 40 };

describe('PollStyleListenerAdapter', () => {
  it('delivers batches pushed into the source', async () => {
    const source = new FakeBufferedListener();
    const adapter = new PollStyleListenerAdapter(source, { batchSize: 1 });
    const got: number[][] = [];
    adapter.start((batch) => {
      got.push(batch.map((m) => m.n));
    });
    source.deliver(new FakeMessage(1));
    source.deliver(new FakeMessage(2));
    await waitFor(() => got.length === 2, { timeoutMs: 5000 });
    expect(got).toEqual([[1], [2]]);
    await adapter.stop();
    await adapter.cleanup();
  });

  it('passes batchSize and batchTimeout to the source and delivers partial batches at the deadline', async () => {
    const source = new FakeBufferedListener();
    const adapter = new PollStyleListenerAdapter(source, { batchSize: 5, batchTimeout: 50 });
    const got: number[][] = [];
    adapter.start((batch) => {
      got.push(batch.map((m) => m.n));
    });
    source.deliver(new FakeMessage(1));
    source.deliver(new FakeMessage(2));
    await waitFor(() => got.flat().length === 2, { timeoutMs: 5000 });
    expect(got.flat()).toEqual([1, 2]);
    expect(source.polls[0]).toMatchObject({ batchSize: 5, batchTimeout: 50 });
    await adapter.stop();
  });

  it('without batchTimeout a partial batch is delivered as soon as nothing else is buffered', async () => {
    const source = new FakeBufferedListener();
    const adapter = new PollStyleListenerAdapter(source, { batchSize: 100 });
    const got: number[][] = [];
    adapter.start((batch) => {
      got.push(batch.map((m) => m.n));
    });
    source.deliver(new FakeMessage(1));
    await waitFor(() => got.length === 1, { timeoutMs: 5000, message: 'a lone message delivered without a full batch' });
    await adapter.stop();
  });

  it('a poll that throws is logged, retried with backoff, and delivery continues afterwards', async () => {
    const logger = createMemoryLogger();
    const source = new FakeBufferedListener();
    source.failNextPolls = 3;
    const adapter = new PollStyleListenerAdapter(source, { logger, backoff: fastBackoff });
    const got: number[] = [];
    adapter.start((batch) => {
      got.push(...batch.map((m) => m.n));
    });
    source.deliver(new FakeMessage(1));
    await waitFor(() => got.length === 1, { timeoutMs: 5000 });
    const failures = logger.records.filter((r) => r.msg.includes('poll failed'));
    expect(failures).toHaveLength(3);
    expect(failures.map((r) => r.level)).toEqual(['error', 'error', 'error']);
    expect(failures.map((r) => r.fields.retryInMs)).toEqual([5, 10, 20]);
    expect((failures[0].fields.err as Error).message).toBe('poll exploded');
    // The loop keeps going after recovering, and the backoff was reset.
    source.failNextPolls = 1;
    source.deliver(new FakeMessage(2));
    await waitFor(() => got.length === 2, { timeoutMs: 5000 });
    expect(logger.records.filter((r) => r.msg.includes('poll failed')).at(-1)!.fields.retryInMs).toBe(5);
    await adapter.stop();
  });

  it('a callback that throws (sync or async) is logged and the loop continues', async () => {
    const logger = createMemoryLogger();
    const source = new FakeBufferedListener();
    const adapter = new PollStyleListenerAdapter(source, { logger, backoff: fastBackoff });
    const got: number[] = [];
    adapter.start(async (batch) => {
      const n = batch[0].n;
      got.push(n);
      if (n === 1) throw new Error('sync boom');
      if (n === 2) await Promise.reject(new Error('async boom'));
    });
    for (const n of [1, 2, 3]) source.deliver(new FakeMessage(n));
    await waitFor(() => got.length === 3, { timeoutMs: 5000 });
    expect(got).toEqual([1, 2, 3]);
    const failed = logger.records.filter((r) => r.msg.includes('callback failed'));
    expect(failed.map((r) => (r.fields.err as Error).message)).toEqual(['sync boom', 'async boom']);
    expect(failed[0].fields.messages).toBe(1);
    await adapter.stop();
  });

  it('a logger that throws does not kill the loop', async () => {
    const throwing: Logger = {
      debug() {},
      info() {},
      warn() {},
      error() {
        throw new Error('logger broke');
      },
      child() {
        return throwing;
      },
    };
    const source = new FakeBufferedListener();
    source.failNextPolls = 2;
    const adapter = new PollStyleListenerAdapter(source, { logger: throwing, backoff: fastBackoff });
    const got: number[] = [];
    adapter.start((batch) => {
      got.push(...batch.map((m) => m.n));
      if (batch[0].n === 1) throw new Error('callback boom');
    });
    source.deliver(new FakeMessage(1));
    source.deliver(new FakeMessage(2));
    await waitFor(() => got.length === 2, { timeoutMs: 5000 });
    await adapter.stop();
  });

  it('stop() stops polling, then delivers everything already consumed before it resolves', async () => {
    const source = new FakeBufferedListener();
    const adapter = new PollStyleListenerAdapter(source, { batchSize: 2 });
    const gate = deferred();
    const got: number[] = [];
    let calls = 0;
    adapter.start(async (batch) => {
      calls++;
      if (calls === 1) await gate.promise;
      got.push(...batch.map((m) => m.n));
    });
    source.deliver(new FakeMessage(0));
    await waitFor(() => calls === 1, { timeoutMs: 5000 });
    // While the first callback is busy, more messages are consumed into the buffer.
    for (let n = 1; n <= 7; n++) source.deliver(new FakeMessage(n));
    let stopped = false;
    const stopping = adapter.stop().then(() => {
      stopped = true;
    });
    await waitFor(() => source.stopCalls === 1, { timeoutMs: 5000 });
    expect(stopped).toBe(false);
    gate.resolve();
    await stopping;
    expect(got).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(source.buffered).toBe(0);
    // Nothing is delivered after stop() resolved.
    const after = got.length;
    source.deliver(new FakeMessage(99));
    await new Promise((r) => setTimeout(r, 30));
    expect(got.length).toBe(after);
  });

  it('stop() during a long batch window delivers the partial batch without waiting the window out', async () => {
    const source = new FakeBufferedListener();
    const adapter = new PollStyleListenerAdapter(source, { batchSize: 10, batchTimeout: 60_000 });
    const got: number[][] = [];
    adapter.start((batch) => {
      got.push(batch.map((m) => m.n));
    });
    await waitFor(() => source.polls.length === 1, { timeoutMs: 5000, message: 'a poll waiting for its batch' });
    source.deliver(new FakeMessage(1));
    source.deliver(new FakeMessage(2));
    // The partial batch waits in the buffer for the pending poll (withdraw() can still take it back).
    expect(source.buffered).toBe(2);
    const t0 = performance.now();
    await adapter.stop();
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(got).toEqual([[1, 2]]);
  });

  it('an idle source with a short batchTimeout keeps polling without piling up timers', async () => {
    const source = new FakeBufferedListener();
    const adapter = new PollStyleListenerAdapter(source, { batchSize: 5, batchTimeout: 5 });
    const got: number[] = [];
    adapter.start((batch) => {
      got.push(...batch.map((m) => m.n));
    });
    await waitFor(() => source.polls.length >= 5, { timeoutMs: 5000 });
    source.deliver(new FakeMessage(3));
    await waitFor(() => got.length === 1, { timeoutMs: 5000 });
    await adapter.stop();
  });

  it('stop() wakes a loop sleeping in backoff', async () => {
    const source = new FakeBufferedListener();
    source.failNextPolls = 1;
    const adapter = new PollStyleListenerAdapter(source, { backoff: { minMs: 60_000, maxMs: 60_000 } });
    adapter.start(() => {});
    await waitFor(() => source.polls.length >= 1, { timeoutMs: 5000 });
    const t0 = performance.now();
    await adapter.stop();
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it('stop() is idempotent and concurrent calls share one stop', async () => {
    const source = new FakeBufferedListener();
    const adapter = new PollStyleListenerAdapter(source);
    const got: number[] = [];
    adapter.start((batch) => {
      got.push(...batch.map((m) => m.n));
    });
    source.deliver(new FakeMessage(1));
    const a = adapter.stop();
    const b = adapter.stop();
    expect(a).toBe(b);
    await Promise.all([a, b]);
    await adapter.stop();
    expect(source.stopCalls).toBe(1);
    expect(got).toEqual([1]);
  });

  it('stop() before start() resolves, and start() after stop() is refused', async () => {
    const source = new FakeBufferedListener();
    const adapter = new PollStyleListenerAdapter(source);
    await adapter.stop();
    expect(() => adapter.start(() => {})).toThrow(InvalidState);
  });

  it('start() twice is refused with InvalidState', async () => {
    const adapter = new PollStyleListenerAdapter(new FakeBufferedListener());
    adapter.start(() => {});
    expect(() => adapter.start(() => {})).toThrow(InvalidState);
    await adapter.stop();
  });

  it('cleanup() stops first, then calls source.cleanup once per call', async () => {
    const source = new FakeBufferedListener();
    const adapter = new PollStyleListenerAdapter(source);
    const got: number[] = [];
    adapter.start((batch) => {
      got.push(...batch.map((m) => m.n));
    });
    source.deliver(new FakeMessage(5));
    await adapter.cleanup();
    expect(source.stopCalls).toBe(1);
    expect(source.cleanupCalls).toBe(1);
    expect(got).toEqual([5]);
  });

  it('a source stopped behind the adapter\'s back does not starve the event loop', async () => {
    const source = new FakeBufferedListener();
    const adapter = new PollStyleListenerAdapter(source, { backoff: fastBackoff });
    adapter.start(() => {});
    // e.g. the driver closed its consumer after a connection loss: poll() now returns [] at once.
    await source.stop();
    // A timer must still fire; a microtask-only spin would block it forever.
    await new Promise((r) => setTimeout(r, 20));
    const polls = source.polls.length;
    await new Promise((r) => setTimeout(r, 100));
    // Backed off, not spinning: at most a few dozen polls in 100 ms.
    expect(source.polls.length - polls).toBeLessThan(50);
    await adapter.stop();
  });
});
