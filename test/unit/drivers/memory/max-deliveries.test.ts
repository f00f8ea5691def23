// memory:// `maxDeliveries`: a notification whose handler always throws, in a pool with
// `allowRequeue`, is delivered at most max_deliveries times, then set aside among the virtual
// host's dead letters (listed, replayed, purged as on Redis and Kafka), logged once and counted.
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryLogger } from '../../../../src/core/logger.js';
import { getNotificationListener, getNotificationTransport, Notifier, Target, type NotificationListener, type Transport } from '../../../../src/index.js';
import { uniqueName, waitFor } from '../../../../src/testing/wait.js';

const transports: Transport[] = [];
const listeners: NotificationListener[] = [];
afterEach(async () => {
  for (const l of listeners.splice(0)) await l.close();
  await Promise.all(transports.splice(0).map((t) => t.cleanup()));
});

async function transport(query = ''): Promise<{ t: Transport; logger: ReturnType<typeof createMemoryLogger> }> {
  const logger = createMemoryLogger();
  const t = await getNotificationTransport(`memory:///${uniqueName('mx')}${query}`, { logger });
  transports.push(t);
  return { t, logger };
}

/** A pool listener whose handler always throws; counts deliveries per payload id. */
async function failing(t: Transport, topic: string): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  const endpoint = {
    info(_ctx: unknown, _pub: string, _type: string, payload: { id: number }) {
      counts.set(payload.id, (counts.get(payload.id) ?? 0) + 1);
      throw new Error(`handler failed on ${payload.id}`);
    },
  };
  const l = getNotificationListener(t, [new Target({ topic })], [endpoint], { pool: 'billing', allowRequeue: true });
  await l.start();
  listeners.push(l);
  return counts;
}

describe('memory:// maxDeliveries', () => {
  it('a notification that always fails stops at the default limit (10) and is a dead letter', async () => {
    const { t, logger } = await transport();
    const topic = uniqueName('poison');
    const counts = await failing(t, topic);
    await new Notifier(t, { publisherId: 'p', driver: 'messagingv2', topics: [topic] }).info({}, 'ev', { id: 1 });
    const store = t.driver.deadLetters();
    await waitFor(async () => (await store.list({ address: `${topic}.info` })).length === 1, { timeoutMs: 5000, message: 'the notification dead-lettered' });
    // No delivery after the limit: the count stays at 10 while more turns of the loop pass.
    await new Promise((r) => setTimeout(r, 50));
    expect(counts.get(1)).toBe(10);
    const [letter] = await store.list({ address: `${topic}.info` });
    expect(letter).toMatchObject({ address: `${topic}.info`, pool: 'billing', deliveries: 10, error: 'handler failed on 1' });
    expect(JSON.parse(JSON.parse(letter.body)['oslo.message']).payload).toEqual({ id: 1 });
    expect(logger.records.filter((r) => r.msg === 'Notification dead-lettered after maxDeliveries')).toHaveLength(1);
    expect(t.driver.deliveryStats.snapshot().find((c) => c.address === `${topic}.info`)).toMatchObject({ pool: 'billing', deadLettered: 1, redeliveries: 9 });
  });

  it('max_deliveries from the URL; replay puts the letter back on its pool queue, purge removes it', async () => {
    const { t } = await transport('?max_deliveries=2');
    const topic = uniqueName('poison');
    const counts = await failing(t, topic);
    const notifier = new Notifier(t, { publisherId: 'p', driver: 'messagingv2', topics: [topic] });
    await notifier.info({}, 'ev', { id: 1 });
    await notifier.info({}, 'ev', { id: 2 });
    const store = t.driver.deadLetters();
    const address = `${topic}.info`;
    await waitFor(async () => (await store.list({ address })).length === 2, { timeoutMs: 5000, message: 'both dead-lettered' });
    expect([counts.get(1), counts.get(2)]).toEqual([2, 2]);
    const [first] = await store.list({ address });
    expect(await store.replay({ address, ids: [first.id] })).toBe(1);
    // Delivered afresh (2 more times), then a dead letter again.
    await waitFor(async () => counts.get(1) === 4 && (await store.list({ address })).length === 2, { timeoutMs: 5000, message: 'the replayed letter failed again' });
    expect(await store.list({ address: `${topic}.error` })).toEqual([]);
    expect(await store.purge({ address })).toBe(2);
    expect(await store.list({ address })).toEqual([]);
  });

  it('max_deliveries=0 requeues without a limit, as before', async () => {
    const { t } = await transport('?max_deliveries=0');
    const topic = uniqueName('poison');
    const counts = await failing(t, topic);
    await new Notifier(t, { publisherId: 'p', driver: 'messagingv2', topics: [topic] }).info({}, 'ev', { id: 1 });
    await waitFor(() => (counts.get(1) ?? 0) > 50, { timeoutMs: 5000, message: 'more than 50 deliveries' });
    expect(await t.driver.deadLetters().list({ address: `${topic}.info` })).toEqual([]);
  });
});
