// Conformance: batch notification listeners (batch sizes, the single batch stopwatch). The
// stopwatch cases are exported so that a unit test can show they fail on a restarting timer.
import { describe, expect, it } from 'vitest';
import { getBatchNotificationListener, NotificationResult, Target, type Transport } from '../index.js';
import { waitFor } from './wait.js';
import { since, started, type ConformanceEnv } from './harness.js';
import { notifier } from './notify.js';

interface BatchItem {
  ctx: unknown;
  publisherId: unknown;
  eventType: string;
  payload: any;
  metadata: any;
}

function startBatchListener(
  env: ConformanceEnv,
  nt: Transport,
  topic: string,
  batches: BatchItem[][],
  options: { batchSize: number; batchTimeout: number; allowRequeue?: boolean },
  result?: (messages: BatchItem[]) => unknown,
) {
  const endpoint = {
    info(messages: BatchItem[]) {
      batches.push(messages);
      return result?.(messages);
    },
  };
  return started(env, getBatchNotificationListener(nt, [new Target({ topic })], [endpoint], options as never));
}

/** Notifications of a batch listener, with when each batch arrived. */
function collector() {
  const batches: BatchItem[][] = [];
  const arrivedAt: number[] = [];
  const count = (eventType: string) => batches.reduce((sum, b) => sum + b.filter((m) => m.eventType === eventType).length, 0);
  return { batches, arrivedAt, count, onBatch: () => void arrivedAt.push(Date.now()) };
}

/**
 * ONE stopwatch per batch: notifications trickling in every batchTimeout/4 for six
 * batchTimeouts still close a batch about batchTimeout after it started. A timeout restarted
 * per message or per poll keeps the batch open until they stop: one batch, after the last one.
 */
export async function trickleClosesBatchesCase(env: ConformanceEnv): Promise<void> {
  const nt = await env.notificationTransport();
  const topic = env.name('topic');
  const got = collector();
  const batchTimeout = env.ms(400);
  await startBatchListener(env, nt, topic, got.batches, { batchSize: 1000, batchTimeout }, got.onBatch);
  const n = notifier(nt, topic);
  // The listener is live once a first notification came through (a broker may take a while to join a group).
  await n.info({}, 'warmup', {});
  await waitFor(() => got.count('warmup') === 1, { timeoutMs: env.ms(15_000), message: 'the warm-up notification' });
  const first = got.batches.length;
  const N = 24;
  for (let i = 0; i < N; i++) {
    await n.info({}, 'trickle', { id: i });
    await new Promise((resolve) => setTimeout(resolve, batchTimeout / 4));
  }
  const lastSentAt = Date.now();
  await waitFor(() => got.count('trickle') >= N, { timeoutMs: env.ms(20_000), message: `${N} trickled notifications` });
  expect(got.count('trickle')).toBe(N);
  const trickled = got.batches.slice(first).length;
  // About six batches; a restarted timer gives one. Counts, not times: a busy box only merges batches.
  expect(trickled, 'batches of notifications sent every batchTimeout/4 for 6 x batchTimeout').toBeGreaterThanOrEqual(2);
  expect(got.arrivedAt[first], 'the first batch closed while notifications were still coming').toBeLessThan(lastSentAt);
}

/** A partial batch (3 of batchSize 50) is delivered once the batch timeout passes, not held back for more. */
export async function partialBatchCase(env: ConformanceEnv): Promise<void> {
  const nt = await env.notificationTransport();
  const topic = env.name('topic');
  const got = collector();
  await startBatchListener(env, nt, topic, got.batches, { batchSize: 50, batchTimeout: env.ms(300) }, got.onBatch);
  const n = notifier(nt, topic);
  await Promise.all([0, 1, 2].map((id) => n.info({}, 'partial', { id })));
  await waitFor(() => got.count('partial') >= 3, { timeoutMs: env.ms(10_000), message: 'a partial batch of 3 (batchSize 50) after its batch timeout' });
  expect(got.count('partial')).toBe(3);
  expect(got.batches.every((b) => b.length < 50)).toBe(true);
}

export function batchTests(env: ConformanceEnv): void {
  describe('batch listener', () => {
    it('205 messages with batchSize 100 arrive as batches of 100, 100 and 5', async () => {
      const nt = await env.notificationTransport();
      const topic = env.name('topic');
      const batches: BatchItem[][] = [];
      // A long batchTimeout so that only the last, partial batch waits for it.
      await startBatchListener(env, nt, topic, batches, { batchSize: 100, batchTimeout: env.ms(3000) });
      const n = notifier(nt, topic);
      const N = 205;
      for (let start = 0; start < N; start += 50) {
        await Promise.all(Array.from({ length: Math.min(50, N - start) }, (_, i) => n.info({}, 'ev', { id: start + i })));
      }
      const total = () => batches.reduce((sum, b) => sum + b.length, 0);
      await waitFor(() => total() >= N, { timeoutMs: env.ms(20_000), message: `${N} batched notifications` });
      expect(total()).toBe(N);
      expect(batches.map((b) => b.length)).toEqual([100, 100, 5]);
      const seen = batches.flat();
      expect(new Set(seen.map((m) => m.payload.id)).size).toBe(N);
      expect(seen[0]).toMatchObject({ publisherId: 'conformance.host1', eventType: 'ev' });
      expect(seen[0].metadata.message_id).toEqual(expect.any(String));
    });

    it('one message then silence is delivered as a batch of 1 within the one batch timeout (single stopwatch)', async () => {
      const nt = await env.notificationTransport();
      const topic = env.name('topic');
      const batches: BatchItem[][] = [];
      const batchTimeout = 300;
      await startBatchListener(env, nt, topic, batches, { batchSize: 100, batchTimeout });
      const t0 = Date.now();
      await notifier(nt, topic).info({}, 'lonely', { id: 1 });
      await waitFor(() => batches.length >= 1, { timeoutMs: env.ms(10_000), message: 'a batch of one' });
      const elapsed = since(t0);
      expect(batches[0].map((m) => m.eventType)).toEqual(['lonely']);
      // Per-message timeouts would take up to 2 x batchTimeout; one stopwatch stays below it.
      expect(elapsed).toBeLessThan(env.ms(2 * batchTimeout));
    });

    it('notifications trickling in faster than batchTimeout still close a batch about batchTimeout after it started (one stopwatch per batch)', () =>
      trickleClosesBatchesCase(env));

    it('a partial batch is delivered after the batch timeout', () => partialBatchCase(env));

    it('a batch is grouped by priority: each method gets only its own priority', async () => {
      const nt = await env.notificationTransport();
      const topic = env.name('topic');
      const got: Array<{ method: string; priorities: string[] }> = [];
      const endpoint = {
        info(messages: BatchItem[]) {
          got.push({ method: 'info', priorities: messages.map((m) => m.eventType) });
        },
        error(messages: BatchItem[]) {
          got.push({ method: 'error', priorities: messages.map((m) => m.eventType) });
        },
      };
      await started(env, getBatchNotificationListener(nt, [new Target({ topic })], [endpoint], { batchSize: 10, batchTimeout: env.ms(500) } as never));
      const n = notifier(nt, topic);
      for (let i = 0; i < 3; i++) {
        await n.info({}, 'info', { i });
        await n.error({}, 'error', { i });
      }
      await waitFor(() => got.reduce((sum, g) => sum + g.priorities.length, 0) >= 6, { timeoutMs: env.ms(10_000) });
      for (const g of got) expect(g.priorities.every((p) => p === g.method)).toBe(true);
    });

    if (env.caps.requeue) {
      it('REQUEUE from a batch endpoint redelivers the whole batch when allowRequeue', async () => {
        const nt = await env.notificationTransport();
        const topic = env.name('topic');
        const batches: BatchItem[][] = [];
        let first = true;
        await startBatchListener(env, nt, topic, batches, { batchSize: 5, batchTimeout: env.ms(1000), allowRequeue: true }, () => {
          if (!first) return NotificationResult.HANDLED;
          first = false;
          return NotificationResult.REQUEUE;
        });
        const n = notifier(nt, topic);
        await Promise.all([0, 1, 2, 3, 4].map((id) => n.info({}, 'ev', { id })));
        const count = () => batches.flat().length;
        await waitFor(() => batches.length > 0 && count() >= 5 + batches[0].length, { timeoutMs: env.ms(15_000), message: 'the first batch delivered again' });
        const seen = batches.flat().map((m) => m.payload.id as number);
        // The first batch came back in full; after that everything was handled exactly once more.
        for (const id of batches[0].map((m) => m.payload.id as number)) expect(seen.filter((x) => x === id)).toHaveLength(2);
        expect(new Set(seen)).toEqual(new Set([0, 1, 2, 3, 4]));
        expect(count()).toBe(5 + batches[0].length);
      });
    }
  });
}
