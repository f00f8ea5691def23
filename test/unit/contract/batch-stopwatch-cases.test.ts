// The conformance cases of the single batch stopwatch (src/testing/batch.ts) run against the
// memory driver with its batch path deliberately broken: they must fail there and pass on the real one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BufferedPollStyleListener, type PollOptions } from '../../../src/contract/poll-style-listener.js';
import type { ReceivedMessage } from '../../../src/contract/incoming-message.js';
import type { AsyncQueue } from '../../../src/structures/async-queue.js';
import { partialBatchCase, trickleClosesBatchesCase } from '../../../src/testing/batch.js';
import { useConformanceEnv } from '../../../src/testing/harness.js';
import { memoryConformanceSubject } from '../../../src/testing/memory.js';

type Poll = (this: BufferedPollStyleListener, options?: PollOptions) => Promise<ReceivedMessage[]>;

const bufferOf = (l: BufferedPollStyleListener) => (l as unknown as { buffer: AsyncQueue<ReceivedMessage> }).buffer;

/** Every message gets a fresh batchTimeout: a batch closes only after a pause of batchTimeout. */
const restartPerMessage: Poll = async function (options = {}) {
  const buffer = bufferOf(this);
  const batch: ReceivedMessage[] = [];
  while (batch.length < (options.batchSize ?? 1)) {
    const message = await buffer.shift(options.batchTimeout);
    if (message === undefined) break;
    batch.push(message);
  }
  return batch;
};

/** Each wait gets the full batchTimeout again instead of the time left of the batch's stopwatch. */
const restartPerWait: Poll = async function (options = {}) {
  const buffer = bufferOf(this);
  const batch: ReceivedMessage[] = [];
  const size = options.batchSize ?? 1;
  while (batch.length < size && (await buffer.takeInto(batch, size - batch.length, options.batchTimeout)) > 0);
  return batch;
};

/** The timeout never fires: a batch goes out only when full. */
const neverTimesOut: Poll = async function (options = {}) {
  const buffer = bufferOf(this);
  const batch: ReceivedMessage[] = [];
  const size = options.batchSize ?? 1;
  while (batch.length < size && (await buffer.takeInto(batch, size - batch.length)) > 0);
  return batch;
};

/** Runs the tests of `body` with BufferedPollStyleListener.poll replaced by `broken`. */
function withPoll(broken: Poll, body: () => void): void {
  const original = Object.getOwnPropertyDescriptor(BufferedPollStyleListener.prototype, 'poll')!;
  beforeAll(() => {
    Object.defineProperty(BufferedPollStyleListener.prototype, 'poll', { ...original, value: broken });
  });
  afterAll(() => {
    Object.defineProperty(BufferedPollStyleListener.prototype, 'poll', original);
  });
  body();
}

describe('single batch stopwatch conformance cases on the memory driver', () => {
  // The cases scale their batch timeouts and deadlines by timeScale. Not shorter: a broken timer
  // only shows while the trickle's gaps (batchTimeout/4) stay below batchTimeout, and at 0.5 (50 ms
  // gaps, 200 ms timeout) a loaded CI machine once stretched one past it, so the broken path passed.
  const env = useConformanceEnv(memoryConformanceSubject({ timeScale: 1 }), 'tunit');

  it('pass on the real batch path (batchPoll)', async () => {
    await trickleClosesBatchesCase(env);
    await partialBatchCase(env);
  });

  describe('a timer restarted per message', () => {
    withPoll(restartPerMessage, () => {
      it('fails the trickle case: one batch, after the last notification', async () => {
        await expect(trickleClosesBatchesCase(env)).rejects.toThrow(/batches of notifications sent every batchTimeout\/4/);
      });
    });
  });

  describe('a timer restarted per wait (per poll of the source)', () => {
    withPoll(restartPerWait, () => {
      it('fails the trickle case', async () => {
        await expect(trickleClosesBatchesCase(env)).rejects.toThrow(/batches of notifications sent every batchTimeout\/4/);
      });
    });
  });

  describe('a timeout that never fires', () => {
    withPoll(neverTimesOut, () => {
      it('fails the partial-batch case', async () => {
        await expect(partialBatchCase(env)).rejects.toThrow(/a partial batch of 3/);
      });
    });
  });
});
