// memory:// mirrors oslo's pool queue (one queue named after the pool, bound to every topic of
// the pool): a listener gives another topic's notifications back however often they bounce,
// never dead-lettering them at maxDeliveries, and their own listener gets them when it starts.
import { afterEach, describe, expect, it } from 'vitest';
import { getNotificationListener, getNotificationTransport, Notifier, Target, type NotificationListener, type Transport } from '../../../../src/index.js';
import type { MemoryDriver } from '../../../../src/drivers/memory/memory-driver.js';
import { uniqueName, waitFor } from '../../../../src/testing/wait.js';

const transports: Transport[] = [];
const listeners: NotificationListener[] = [];
afterEach(async () => {
  for (const l of listeners.splice(0)) await l.close();
  await Promise.all(transports.splice(0).map((t) => t.cleanup()));
});

async function listen(t: Transport, topic: string, log: Array<{ topic: string; id: number }>): Promise<NotificationListener> {
  const l = getNotificationListener(t, [new Target({ topic })], [{ info: (_c: unknown, _p: unknown, _e: unknown, payload: { topic: string; id: number }) => void log.push(payload) }], { pool: 'audit' });
  await l.start();
  listeners.push(l);
  return l;
}

describe('memory:// one pool name on two topics', () => {
  it('bounces past max_deliveries are not dead letters: the topic’s own listener started later gets every one', async () => {
    const t = await getNotificationTransport(`memory:///${uniqueName('pg')}?max_deliveries=2`);
    transports.push(t);
    const [mine, theirs] = ['order-events', 'other-team'];
    const got: Array<{ topic: string; id: number }> = [];
    const theirsLog: Array<{ topic: string; id: number }> = [];
    const other = await listen(t, theirs, theirsLog);
    await other.close(); // the binding of `theirs` to the pool's queue stays
    await listen(t, mine, got);
    const notifier = new Notifier(t, { publisherId: 'p', driver: 'messagingv2', topics: [theirs] });
    for (let id = 0; id < 3; id++) await notifier.info({}, 'ev', { topic: theirs, id });
    // Let them bounce past the limit (the one listener of the queue gives them back each time).
    await waitFor(() => ((t.driver as MemoryDriver).broker.queueStats('audit')?.requeued ?? 0) >= 9, { timeoutMs: 10_000, message: 'given back 3 times each' });
    expect(await t.driver.deadLetters().list({ address: `${theirs}.info` })).toEqual([]);
    await listen(t, theirs, theirsLog);
    await waitFor(() => theirsLog.length >= 3, { timeoutMs: 10_000, message: 'their 3 reached their listener' });
    expect(theirsLog.map((p) => p.id).sort()).toEqual([0, 1, 2]);
    expect(got).toEqual([]);
  });
});
