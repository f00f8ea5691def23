// listenToPushSource: push sources hand messages straight to the callback; batch listeners
// collect them under batchPoll's single stopwatch.
import { describe, expect, it } from 'vitest';
import { InvalidState } from '../../../src/core/errors.js';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { listenToPushSource, type ListenerSink, type PushSource } from '../../../src/contract/push-listener.js';
import { deferred, waitFor } from '../../../src/testing/wait.js';
import { FakeMessage } from './fakes.js';

/** A push source the test drives: deliver() is the broker's consumer callback. */
class FakeSource implements PushSource<FakeMessage> {
  sink!: ListenerSink<FakeMessage>;
  stops = 0;
  cleanups = 0;
  attach(sink: ListenerSink<FakeMessage>): void {
    this.sink = sink;
  }
  push(...ns: number[]): void {
    for (const n of ns) this.sink.deliver(new FakeMessage(n));
  }
  async stop(): Promise<void> {
    this.stops++;
  }
  async cleanup(): Promise<void> {
    this.cleanups++;
  }
}

describe('listenToPushSource without batching', () => {
  it('hands each message to the callback synchronously, as it arrives', () => {
    const source = new FakeSource();
    const listener = listenToPushSource(source);
    const got: number[][] = [];
    listener.start((batch) => void got.push(batch.map((m) => m.n)));
    source.push(1);
    expect(got).toEqual([[1]]);
    source.push(2, 3);
    expect(got).toEqual([[1], [2], [3]]);
  });

  it('messages delivered before start() wait and arrive in order on start', () => {
    const source = new FakeSource();
    const listener = listenToPushSource(source);
    source.push(1, 2);
    const got: number[] = [];
    listener.start((batch) => void got.push(...batch.map((m) => m.n)));
    expect(got).toEqual([1, 2]);
  });

  it('while the callback has not accepted a message, later ones wait in order (back-pressure)', async () => {
    const source = new FakeSource();
    const listener = listenToPushSource(source);
    const gates = [deferred<void>(), deferred<void>()];
    const got: number[] = [];
    listener.start((batch) => {
      const n = batch[0].n;
      got.push(n);
      return n <= 2 ? gates[n - 1].promise : undefined;
    });
    source.push(1, 2, 3);
    expect(got).toEqual([1]);
    gates[0].resolve();
    await waitFor(() => got.length === 2);
    expect(got).toEqual([1, 2]);
    gates[1].resolve();
    await waitFor(() => got.length === 3);
    source.push(4);
    expect(got).toEqual([1, 2, 3, 4]);
  });

  it('a callback that throws or rejects is logged and the next message still arrives', async () => {
    const logger = createMemoryLogger();
    const source = new FakeSource();
    const listener = listenToPushSource(source, { logger });
    const got: number[] = [];
    listener.start((batch) => {
      const n = batch[0].n;
      got.push(n);
      if (n === 1) throw new Error('sync boom');
      if (n === 2) return Promise.reject(new Error('async boom'));
      return undefined;
    });
    source.push(1, 2, 3);
    await waitFor(() => got.length === 3);
    expect(got).toEqual([1, 2, 3]);
    await waitFor(() => logger.records.filter((r) => r.level === 'error').length === 2);
  });

  it('stop() stops the source, then hands everything received to the callback before it resolves', async () => {
    const source = new FakeSource();
    const listener = listenToPushSource(source);
    const gate = deferred<void>();
    const got: number[] = [];
    listener.start((batch) => {
      got.push(batch[0].n);
      return batch[0].n === 1 ? gate.promise : undefined;
    });
    source.push(1, 2, 3);
    let stopped = false;
    const stopping = listener.stop().then(() => (stopped = true));
    await waitFor(() => source.stops === 1);
    expect(stopped).toBe(false);
    gate.resolve();
    await stopping;
    expect(got).toEqual([1, 2, 3]);
    await Promise.all([listener.stop(), listener.stop()]);
    expect(source.stops).toBe(1);
    expect(() => listener.start(() => undefined)).toThrow(InvalidState);
  });

  it('withdraw() takes back waiting messages the source names; they never reach the callback', async () => {
    const source = new FakeSource();
    const listener = listenToPushSource(source);
    const gate = deferred<void>();
    const got: number[] = [];
    listener.start((batch) => {
      got.push(batch[0].n);
      return batch[0].n === 1 ? gate.promise : undefined;
    });
    source.push(1, 2, 3, 4);
    expect(source.sink.withdraw((m) => m.n % 2 === 0).map((m) => m.n)).toEqual([2, 4]);
    gate.resolve();
    await listener.stop();
    expect(got).toEqual([1, 3]);
  });

  it('cleanup() stops first and cleans the source up; start() twice is refused', async () => {
    const source = new FakeSource();
    const listener = listenToPushSource(source);
    listener.start(() => undefined);
    expect(() => listener.start(() => undefined)).toThrow(InvalidState);
    await listener.cleanup();
    expect([source.stops, source.cleanups]).toEqual([1, 1]);
  });
});

describe('listenToPushSource with batching', () => {
  it('one message then silence arrives as a batch of 1 within the one batch timeout', async () => {
    const source = new FakeSource();
    const listener = listenToPushSource(source, { batchSize: 10, batchTimeout: 50 });
    const got: number[][] = [];
    listener.start((batch) => void got.push(batch.map((m) => m.n)));
    source.push(1);
    await waitFor(() => got.length === 1, { timeoutMs: 5000 });
    expect(got).toEqual([[1]]);
    await listener.cleanup();
    expect(source.cleanups).toBe(1);
  });

  it('a full batch is delivered at once, capped by the prefetch size', async () => {
    const source = new FakeSource();
    const listener = listenToPushSource(source, { batchSize: 10, batchTimeout: 60_000, prefetchSize: 3 });
    const got: number[][] = [];
    listener.start((batch) => void got.push(batch.map((m) => m.n)));
    source.push(1, 2, 3, 4, 5, 6);
    await waitFor(() => got.flat().length === 6, { timeoutMs: 5000 });
    expect(got).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    expect(source.sink.withdraw(() => true)).toEqual([]);
    await listener.stop();
  });

  it('withdraw() takes back messages of a batch still filling: it goes out without them', async () => {
    const source = new FakeSource();
    const listener = listenToPushSource(source, { batchSize: 10, batchTimeout: 60_000 });
    const got: number[][] = [];
    listener.start((batch) => void got.push(batch.map((m) => m.n)));
    source.push(1, 2, 3, 4);
    await Promise.resolve();
    expect(source.sink.withdraw((m) => m.n % 2 === 0).map((m) => m.n)).toEqual([2, 4]);
    source.push(5);
    await listener.stop();
    expect(got).toEqual([[1, 3, 5]]);
  });
});
