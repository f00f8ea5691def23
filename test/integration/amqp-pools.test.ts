// One pool name on two topics on RabbitMQ (issue 29): with oslo's naming (one queue named after
// the pool) a listener gives other topics' notifications back and loses none; with
// pool_queue_per_topic each topic of a pool has a queue of its own.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Channel, ChannelModel } from 'amqplib';
import { getNotificationListener, getNotificationTransport, Notifier, Target, type NotificationListener, type Transport } from 'tidings';
import { waitFor } from 'tidings/testing';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { openRawChannel } from '../support/amqp-driver.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';

const prefix = `tpools${randomUUID().slice(0, 8)}`;
const name = (what: string) => `${prefix}-${what}-${randomUUID().slice(0, 8)}`;
let raw: ChannelModel;
const transports: Transport[] = [];
const listeners: NotificationListener[] = [];

beforeAll(async () => {
  await requireRabbitMQ();
  ({ raw } = await openRawChannel());
});
afterEach(async () => {
  for (const l of listeners.splice(0)) await l.stop().then(() => l.wait());
  for (const t of transports.splice(0)) await t.cleanup();
});
afterAll(async () => {
  await raw?.close();
  await deleteRabbitObjectsWithPrefix(prefix);
});

async function transport(query = ''): Promise<Transport> {
  const t = await getNotificationTransport(`${RABBIT_URL}${query}`);
  transports.push(t);
  return t;
}

/** A started listener in `pool` on `topic` that records the payloads it handles into `log`. */
async function listen(t: Transport, topic: string, pool: string, log: Array<{ topic: string; id: number }>): Promise<NotificationListener> {
  const l = getNotificationListener(t, [new Target({ topic })], [{ info: (_c: unknown, _p: unknown, _e: unknown, payload: { topic: string; id: number }) => void log.push(payload) }], { pool });
  await l.start();
  listeners.push(l);
  return l;
}

async function send(t: Transport, topic: string, n: number): Promise<void> {
  const notifier = new Notifier(t, { publisherId: 'pools', driver: 'messagingv2', topics: [topic] });
  for (let id = 0; id < n; id++) await notifier.info({}, 'ev', { topic, id });
}

/** Whether `queue` exists, by a passive declare on a channel of its own (a miss closes it). */
async function queueExists(queue: string): Promise<boolean> {
  const ch: Channel = await raw.createChannel();
  ch.on('error', () => undefined);
  try {
    await ch.checkQueue(queue);
    await ch.close();
    return true;
  } catch {
    return false;
  }
}

const ids = (log: Array<{ id: number }>) => log.map((p) => p.id).sort((a, b) => a - b);

describe('RabbitMQ pools: one pool name on two topics', () => {
  it("oslo's naming: another topic's notifications are given back, never handled here, and wait in the queue for their own listener", async () => {
    const t = await transport();
    const [mine, theirs, pool] = [name('mine'), name('theirs'), name('pool')];
    const got: Array<{ topic: string; id: number }> = [];
    const theirsLog: Array<{ topic: string; id: number }> = [];
    // The other team's listener binds the pool's queue to its topic, then goes away: the binding stays.
    const other = await listen(t, theirs, pool, theirsLog);
    await other.stop();
    await other.wait();
    await listen(t, mine, pool, got);
    await send(t, theirs, 5);
    await send(t, mine, 5);
    await waitFor(() => got.filter((p) => p.topic === mine).length >= 5, { timeoutMs: 10_000, message: 'the listener handled its own 5' });
    expect(got.filter((p) => p.topic !== mine), 'foreign notifications handled').toEqual([]);
    expect(ids(got)).toEqual([0, 1, 2, 3, 4]);
    // Nothing of theirs was lost: a listener of their topic started now gets all 5.
    await listen(t, theirs, pool, theirsLog);
    await waitFor(() => theirsLog.length >= 5, { timeoutMs: 15_000, message: "their 5 reached their listener" });
    expect(ids(theirsLog)).toEqual([0, 1, 2, 3, 4]);
    expect(theirsLog.every((p) => p.topic === theirs)).toBe(true);
    expect(got.filter((p) => p.topic !== mine)).toEqual([]);
  });

  it('pool_queue_per_topic: one queue <pool>:<topic>.<priority> per topic, none named after the pool, each listener only its own', async () => {
    const t = await transport('?pool_queue_per_topic=true');
    const [mine, theirs, pool] = [name('mine'), name('theirs'), name('pool')];
    const logs: Record<string, Array<{ topic: string; id: number }>> = { [mine]: [], [theirs]: [] };
    await listen(t, mine, pool, logs[mine]!);
    await listen(t, theirs, pool, logs[theirs]!);
    expect(await queueExists(`${pool}:${mine}.info`)).toBe(true);
    expect(await queueExists(`${pool}:${theirs}.info`)).toBe(true);
    expect(await queueExists(pool)).toBe(false);
    await send(t, mine, 5);
    await send(t, theirs, 5);
    await waitFor(() => logs[mine]!.length >= 5 && logs[theirs]!.length >= 5, { timeoutMs: 10_000, message: 'both listeners handled their 5' });
    for (const topic of [mine, theirs]) {
      expect(logs[topic]!.every((p) => p.topic === topic), `only ${topic}`).toBe(true);
      expect(ids(logs[topic]!)).toEqual([0, 1, 2, 3, 4]);
    }
  });
});

describe('RabbitMQ pool inspection (passive declares)', () => {
  /** A listener in `pool` on `topic` (info and error), stopped at once: the queues stay, nobody consumes. */
  async function idlePool(t: Transport, topic: string, pool: string): Promise<void> {
    const l = getNotificationListener(t, [new Target({ topic })], [{ info: () => undefined, error: () => undefined }], { pool });
    await l.start();
    await l.stop();
    await l.wait();
  }

  async function sendError(t: Transport, topic: string): Promise<void> {
    await new Notifier(t, { publisherId: 'pools', driver: 'messagingv2', topics: [topic] }).error({}, 'ev', { topic, id: 0 });
  }

  it("oslo's naming: the pool's one queue is reported once, shared, with the messages of every address; the default queues per address", async () => {
    const t = await transport();
    const [topic, pool] = [name('topic'), name('pool')];
    await idlePool(t, topic, pool);
    await send(t, topic, 2);
    await sendError(t, topic);
    const views = await t.driver.inspectPools({ topic, priorities: ['info', 'error'], pools: [pool] });
    expect(views).toEqual([
      { address: `${topic}.info`, pool: `${topic}.info`, isDefault: true, consumers: 0, backlog: 2 },
      { address: `${topic}.info`, pool, isDefault: false, consumers: 0, backlog: 3, shared: true },
      { address: `${topic}.error`, pool: `${topic}.error`, isDefault: true, consumers: 0, backlog: 1 },
    ]);
  });

  it('pool_queue_per_topic: one row per address for the pool, from its <pool>:<address> queue', async () => {
    const t = await transport('?pool_queue_per_topic=true');
    const [topic, pool] = [name('topic'), name('pool')];
    await idlePool(t, topic, pool);
    await send(t, topic, 2);
    await sendError(t, topic);
    const views = await t.driver.inspectPools({ topic, priorities: ['info', 'error'], pools: [pool] });
    expect(views.filter((v) => !v.isDefault)).toEqual([
      { address: `${topic}.info`, pool, isDefault: false, consumers: 0, backlog: 2 },
      { address: `${topic}.error`, pool, isDefault: false, consumers: 0, backlog: 1 },
    ]);
  });

  it('a topic and a pool that do not exist: nothing reported, no queue declared, and the transport keeps working', async () => {
    const t = await transport();
    const [topic, pool] = [name('topic'), name('pool')];
    expect(await t.driver.inspectPools({ topic, pools: [pool] })).toEqual([]);
    for (const queue of [`${topic}.info`, `${topic}.audit`, pool]) expect(await queueExists(queue), queue).toBe(false);
    expect(t.driver.inspection()).toEqual({ listsTopics: false, listsPools: false, consumers: true, backlog: true });
    expect(await t.driver.listRpcTopics()).toBeUndefined();
    await send(t, topic, 1);
    expect(await t.driver.inspectPools({ topic, priorities: ['info'], pools: [pool] })).toEqual([{ address: `${topic}.info`, pool: `${topic}.info`, isDefault: true, consumers: 0, backlog: 1 }]);
  });
});
