// Conformance: batch notification listeners (batch sizes, the single batch stopwatch).
import { describe, expect, it } from 'vitest';
import { getBatchNotificationListener, Target, type Transport } from '../../src/index.js';
import { waitFor } from '../support/wait.js';
import { since, started, type ConformanceEnv } from './harness.js';
import { notifier } from './notify.js';

interface BatchItem {
  ctx: unknown;
  publisherId: unknown;
  eventType: string;
  payload: any;
  metadata: any;
}

function startBatchListener(env: ConformanceEnv, nt: Transport, topic: string, batches: BatchItem[][], options: { batchSize: number; batchTimeout: number }) {
  const endpoint = {
    info(messages: BatchItem[]) {
      batches.push(messages);
    },
  };
  return started(env, getBatchNotificationListener(nt, [new Target({ topic })], [endpoint], options as never));
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
  });
}
