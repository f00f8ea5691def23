// Batch notification listeners over memory://: oslo's 205/100 test, one stopwatch per batch,
// one array per priority group, whole-group requeue, option validation.
import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '../../../src/core/errors.js';
import type { Transport } from '../../../src/transport.js';
import { Notifier } from '../../../src/notify/notifier.js';
import { NotificationResult, type NotificationBatchItem } from '../../../src/notify/dispatcher.js';
import { getBatchNotificationListener } from '../../../src/notify/listener.js';
import { uniqueName, waitFor } from '../../../src/testing/wait.js';
import { useNotifyHarness } from './harness.js';

const { transport, track } = useNotifyHarness();


async function startBatch(t: Transport, topic: string, endpoints: object[], options: Parameters<typeof getBatchNotificationListener>[3]) {
  const l = getBatchNotificationListener(t, [{ topic }], endpoints, options);
  track(l);
  await l.start();
  return l;
}

describe('getBatchNotificationListener', () => {
  it('205 messages with batchSize 100 arrive as 100 + 100 + 5 (oslo test_simple_batch)', async () => {
    const t = await transport();
    const topic = uniqueName();
    const n = new Notifier(t, { topics: [topic], publisherId: 'batch.host' });
    // Sent first: notifications wait in the queue, so the batches do not depend on send speed.
    for (let id = 0; id < 205; id++) await n.info({ user: 'u' }, 'ev', { id });
    const batches: NotificationBatchItem[][] = [];
    await startBatch(t, topic, [{ info: (items: NotificationBatchItem[]) => void batches.push(items) }], { batchSize: 100, batchTimeout: 500 });
    await waitFor(() => batches.flat().length === 205, { message: '205 notifications' });
    expect(batches.map((b) => b.length)).toEqual([100, 100, 5]);
    expect(batches.flat().map((i) => i.payload.id)).toEqual([...Array(205).keys()]);
    const first = batches[0][0];
    expect(first).toMatchObject({ ctx: { user: 'u' }, publisherId: 'batch.host', eventType: 'ev' });
    expect(Object.keys(first.metadata).sort()).toEqual(['message_id', 'timestamp']);
  });

  it('a partial batch is delivered once batchTimeout passes, timed by one stopwatch', async () => {
    const t = await transport();
    const topic = uniqueName();
    let deliveredAt = 0;
    const batches: number[] = [];
    // The stopwatch starts with the poll (the wait for the first message counts), so measure from start().
    const startedAt = performance.now();
    await startBatch(t, topic, [{ info: (items: NotificationBatchItem[]) => void (batches.push(items.length), (deliveredAt ||= performance.now())) }], { batchSize: 100, batchTimeout: 300 });
    const n = new Notifier(t, { topics: [topic] });
    const sentAt = performance.now();
    for (let id = 0; id < 3; id++) await n.info({}, 'ev', { id });
    await waitFor(() => batches.length > 0, { message: 'partial batch' });
    // Generous bounds: the batch was not full, so it waited for a deadline, and not much longer.
    expect(deliveredAt - startedAt).toBeGreaterThan(250);
    expect(deliveredAt - sentAt).toBeLessThan(2500);
    expect(batches).toEqual([3]);
  });

  it('calls each endpoint method once per priority group of a batch', async () => {
    const t = await transport();
    const topic = uniqueName();
    const n = new Notifier(t, { topics: [topic] });
    await n.info({}, 'a', { id: 1 });
    await n.error({}, 'b', { id: 2 });
    await n.info({}, 'c', { id: 3 });
    const calls: Array<[string, string[]]> = [];
    const rec = (p: string) => (items: NotificationBatchItem[]) => void calls.push([p, items.map((i) => i.eventType)]);
    await startBatch(t, topic, [{ info: rec('info'), error: rec('error') }], { batchSize: 3, batchTimeout: 2000 });
    await waitFor(() => calls.flatMap((c) => c[1]).length === 3);
    const info = calls.filter((c) => c[0] === 'info').flatMap((c) => c[1]);
    const error = calls.filter((c) => c[0] === 'error').flatMap((c) => c[1]);
    expect(info).toEqual(['a', 'c']);
    expect(error).toEqual(['b']);
  });

  it('REQUEUE requeues the whole group when allowRequeue', async () => {
    const t = await transport();
    const topic = uniqueName();
    const n = new Notifier(t, { topics: [topic] });
    for (let id = 0; id < 4; id++) await n.info({}, 'ev', { id });
    const deliveries: number[][] = [];
    await startBatch(t, topic, [{ info: (items: NotificationBatchItem[]) => (deliveries.push(items.map((i) => i.payload.id)), deliveries.length === 1 ? NotificationResult.REQUEUE : undefined) }], {
      batchSize: 4,
      batchTimeout: 1000,
      allowRequeue: true,
    });
    await waitFor(() => deliveries.flat().length >= 8, { message: 'the batch twice' });
    expect(deliveries[0].sort()).toEqual([0, 1, 2, 3]);
    expect(deliveries.slice(1).flat().sort()).toEqual([0, 1, 2, 3]);
  });

  it('validates batchSize and batchTimeout', async () => {
    const t = await transport();
    const ep = [{ info() {} }];
    expect(() => getBatchNotificationListener(t, [{ topic: 'a' }], ep, { batchSize: 0 })).toThrow(InvalidArgument);
    expect(() => getBatchNotificationListener(t, [{ topic: 'a' }], ep, { batchSize: 1.5 })).toThrow(/batchSize/);
    expect(() => getBatchNotificationListener(t, [{ topic: 'a' }], ep, { batchTimeout: -1 })).toThrow(/batchTimeout/);
    const l = getBatchNotificationListener(t, [{ topic: 'a' }], ep);
    expect([l.batchSize, l.batchTimeout]).toEqual([100, 1000]);
  });
});
