// Conformance: a driver declaring `deadLetters` never redelivers a failing notification for ever:
// with `maxDeliveries` 2 it is handled twice, then set aside in the dead letters of its address
// (listed with its count and an error), the listener keeps serving, a replay hands it to its pool
// again and removes it, and a purge removes one for good.
import { describe, expect, it } from 'vitest';
import { NotificationResult, type Context } from '../index.js';
import type { NotificationMetadata } from '../contract/handlers.js';
import type { ConformanceEnv } from './harness.js';
import { notifier, startListener } from './notify.js';
import { waitFor } from './wait.js';

export function deadLetterTests(env: ConformanceEnv): void {
  // Optional: a driver without the capability may still keep dead letters of its own kind (a
  // masked subject cannot take the method away), so nothing is asserted then.
  if (!env.caps.deadLetters || !env.caps.requeue) return;
  describe('dead letters', () => {
    it('with maxDeliveries 2 a notification whose handler always throws is handled twice, dead-lettered with its count, replayed to its pool once, and purged', async () => {
      const nt = await env.notificationTransport({ driverOptions: { maxDeliveries: 2 } });
      const topic = env.name('topic');
      const address = `${topic}.info`;
      let failing = true;
      const runs: Array<{ id: number; deliveryCount: number }> = [];
      const handled: number[] = [];
      const endpoint = {
        info(_ctx: Context, _pub: unknown, _ev: string, payload: { id: number }, metadata: NotificationMetadata) {
          runs.push({ id: payload.id, deliveryCount: metadata.deliveryCount });
          if (failing && payload.id > 0) throw new Error(`conformance poison ${payload.id}`);
          handled.push(payload.id);
        },
      };
      await startListener(env, nt, [topic], [endpoint], { pool: env.name('pool'), allowRequeue: true });
      const store = nt.driver.deadLetters();
      const n = notifier(nt, topic);
      const runsOf = (id: number) => runs.filter((r) => r.id === id).length;

      await n.info({}, 'poison', { id: 1 });
      await waitFor(() => runsOf(1) >= 2, { timeoutMs: env.ms(15_000), message: 'the poison notification delivered twice' });
      // Listing reads the broker (on Kafka: a whole topic through a group join): polled sparingly.
      let letters = await store.list({ address });
      await waitFor(async () => letters.length > 0 || (letters = await store.list({ address })).length > 0, { timeoutMs: env.ms(20_000), intervalMs: 250, message: 'the poison notification in the dead letters of its address' });
      // The listener keeps serving, and the poison one came no more.
      await n.info({}, 'good', { id: 0 });
      await waitFor(() => handled.includes(0), { timeoutMs: env.ms(10_000), message: 'a good notification handled after the poison one' });
      expect(runs.filter((r) => r.id === 1).map((r) => r.deliveryCount)).toEqual([1, 2]);
      expect(letters).toHaveLength(1);
      const [letter] = letters;
      expect(letter).toMatchObject({ address, deliveries: 2 });
      expect(typeof letter.error === 'string' && letter.error.length > 0).toBe(true);
      expect(new Date(letter.deadAt).toISOString()).toBe(letter.deadAt);
      expect(JSON.parse(letter.body)).toBeTypeOf('object');

      failing = false;
      await expect(store.replay({ address, ids: [letter.id] })).resolves.toBe(1);
      await waitFor(() => handled.includes(1), { timeoutMs: env.ms(15_000), message: 'the replayed notification handled by its pool' });

      failing = true;
      await n.info({}, 'poison', { id: 2 });
      await waitFor(() => runsOf(2) >= 2, { timeoutMs: env.ms(15_000), message: 'the second poison notification delivered twice' });
      let purged = 0;
      await waitFor(async () => (purged += await store.purge({ address })) > 0, { timeoutMs: env.ms(20_000), intervalMs: 250, message: 'the second poison notification purged from the dead letters' });
      expect(purged).toBe(1);
      // Neither the replayed nor the purged one is left.
      expect(await store.list({ address })).toEqual([]);
      expect(handled.filter((id) => id === 1)).toEqual([1]);
    });

    if (env.caps.pools) {
      it("a notification given back by another topic's listener in the same pool is not counted: with maxDeliveries 2 its own listener sees it first, requeues it once and handles it; nothing dead-lettered", async () => {
        const nt = await env.notificationTransport({ driverOptions: { maxDeliveries: 2 } });
        const [mine, theirs, pool] = [env.name('mine'), env.name('theirs'), env.name('pool')];
        const address = `${theirs}.info`;
        // Their listener subscribes the pool to their topic and goes away (where a pool is one queue, its binding stays).
        const gone = await startListener(env, nt, [theirs], [{ info: () => undefined }], { pool });
        await gone.stop();
        await gone.wait();
        const own: number[] = [];
        await startListener(env, nt, [mine], [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: number }) => void own.push(payload.id) }], { pool });
        const N = 3;
        for (let id = 0; id < N; id++) await notifier(nt, theirs).info({}, 'ev', { id });
        // Sent after theirs: once it is handled, theirs went past this listener (and were given back where the pool is one queue).
        await notifier(nt, mine).info({}, 'ev', { id: 0 });
        await waitFor(() => own.length >= 1, { timeoutMs: env.ms(10_000), message: 'the listener of the other topic handled its own' });
        const runs: Array<{ id: number; deliveryCount: number }> = [];
        await startListener(
          env,
          nt,
          [theirs],
          [
            {
              info(_c: Context, _p: unknown, _e: string, payload: { id: number }, metadata: NotificationMetadata) {
                runs.push({ id: payload.id, deliveryCount: metadata.deliveryCount });
                return metadata.deliveryCount === 1 ? NotificationResult.REQUEUE : NotificationResult.HANDLED;
              },
            },
          ],
          { pool, allowRequeue: true },
        );
        await waitFor(() => runs.length >= 2 * N, { timeoutMs: env.ms(15_000), message: `their ${N} each delivered twice` });
        for (let id = 0; id < N; id++) expect(runs.filter((r) => r.id === id).map((r) => r.deliveryCount), `deliveries of ${id}`).toEqual([1, 2]);
        expect(own).toEqual([0]);
        expect(await nt.driver.deadLetters().list({ address })).toEqual([]);
      });
    }
  });
}
