// pollReady: the synchronous take of what a BufferedPollStyleListener holds, and the adapter's
// use of it. It must hand out exactly what poll() would, and never what poll() would wait for.
import { describe, expect, it } from 'vitest';
import { PollStyleListenerAdapter } from '../../../src/contract/listener.js';
import { BufferedPollStyleListener } from '../../../src/contract/poll-style-listener.js';
import { waitFor } from '../../../src/testing/wait.js';
import { FakeBufferedListener, FakeMessage } from './fakes.js';

/** A buffered listener that does not override poll(), so pollReady answers from the buffer. */
class PlainBuffered extends BufferedPollStyleListener<FakeMessage> {
  constructor(prefetch = -1) {
    super(prefetch);
  }
  async cleanup(): Promise<void> {}
}

const fill = (l: PlainBuffered, ns: number[]) => ns.forEach((n) => l.deliver(new FakeMessage(n)));

describe('BufferedPollStyleListener.pollReady', () => {
  it('is undefined on an empty buffer', () => {
    expect(new PlainBuffered().pollReady({ batchSize: 5 })).toBeUndefined();
  });

  it('without a deadline takes what is buffered, up to batchSize, in order', () => {
    const l = new PlainBuffered();
    fill(l, [1, 2, 3]);
    expect(l.pollReady({ batchSize: 2 })!.map((m) => m.n)).toEqual([1, 2]);
    expect(l.pollReady({ batchSize: 10 })!.map((m) => m.n)).toEqual([3]);
    expect(l.pollReady({ batchSize: 10 })).toBeUndefined();
  });

  it('with a batch deadline answers only with a full batch (poll would wait for the rest)', async () => {
    const l = new PlainBuffered();
    fill(l, [1, 2]);
    expect(l.pollReady({ batchSize: 3, batchTimeout: 50 })).toBeUndefined();
    expect(l.pollReady({ batchSize: 2, batchTimeout: 50 })!.map((m) => m.n)).toEqual([1, 2]);
    fill(l, [3]);
    expect(l.pollReady({ batchSize: 2, timeout: 50 })).toBeUndefined();
    expect((await l.poll({ batchSize: 2, timeout: 20 })).map((m) => m.n)).toEqual([3]);
  });

  it('a positive prefetch caps the batch, as in poll()', () => {
    const l = new PlainBuffered(2);
    fill(l, [1, 2, 3]);
    expect(l.pollReady({ batchSize: 10, batchTimeout: 50 })!.map((m) => m.n)).toEqual([1, 2]);
  });

  it('gives no answer for a subclass that overrides poll()', () => {
    const l = new FakeBufferedListener();
    l.deliver(new FakeMessage(1));
    expect(l.pollReady({ batchSize: 1 })).toBeUndefined();
  });

  it('the adapter takes buffered messages through it, one callback per batch, nothing lost or repeated', async () => {
    const l = new PlainBuffered();
    fill(l, [1, 2, 3, 4, 5]);
    const adapter = new PollStyleListenerAdapter(l, { batchSize: 2 });
    const batches: number[][] = [];
    adapter.start((batch) => void batches.push(batch.map((m) => m.n)));
    await waitFor(() => batches.flat().length === 5, { timeoutMs: 5000 });
    fill(l, [6]);
    await waitFor(() => batches.flat().length === 6, { timeoutMs: 5000 });
    await adapter.stop();
    expect(batches.flat()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(batches.every((b) => b.length >= 1 && b.length <= 2)).toBe(true);
  });
});
