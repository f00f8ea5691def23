// What a notification stream keeps on Redis (127.0.0.1:6379), bounded by options: the default
// group's store-and-forward backlog (`notification_queue_max_length`, `notification_queue_ttl_ms`),
// no default group at all (`notification_store_and_forward=false`), and the dead letters
// (`dead_letter_max_len`, as on Kafka: the oldest dropped, logged and counted).
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createConsoleLogger } from '../../src/core/logger.js';
import { DEFAULTS } from '../../src/drivers/redis/options.js';
import { TopicKeys } from '../../src/drivers/redis/topology.js';
import { getNotificationListener, getNotificationTransport, Notifier, Target, type Transport } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { useRedisTestKeys } from '../support/redis-keys.js';

const PREFIX = `t-redisbound-${randomUUID().slice(0, 8)}`;
const BASE = `redis://127.0.0.1:6379/?key_prefix=${PREFIX}&sweep_interval_ms=100&lease_ms=300`;
const { redis, transports } = useRedisTestKeys(PREFIX);

async function transport(query: string, options: Parameters<typeof getNotificationTransport>[1] = {}): Promise<Transport> {
  const t = await getNotificationTransport(`${BASE}&${query}`, options);
  transports.push(t);
  return t;
}

const keysOf = (topic: string) => new TopicKeys(PREFIX, 'openstack', topic);
const groupsOf = async (stream: string) => ((await redis.xinfo('GROUPS', stream)) as unknown[][]).map((g) => String(g[g.indexOf('name') + 1])).sort();

/** Sends `ids` as info notifications of `topic`, 100 at a time. */
async function send(notifier: Notifier, ids: number[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 100) await Promise.all(ids.slice(i, i + 100).map((id) => notifier.info({}, 'bound.test', { id })));
}

/** An un-pooled listener (the default group) collecting payload ids. */
async function collect(t: Transport, topic: string, options: { pool?: string } = {}): Promise<number[]> {
  const ids: number[] = [];
  const l = getNotificationListener(t, [new Target({ topic })], [{ info: (_c: unknown, _p: string, _t: string, payload: { id: number }) => void ids.push(payload.id) }], options);
  await l.start();
  transports.push({ cleanup: async () => { await l.stop(); await l.wait(); } } as Transport);
  return ids;
}

describe('Redis: the notification backlog is bounded by options', () => {
  it('notification_queue_max_length: nobody listening, the stream keeps about the newest N; a listener started later gets those', async () => {
    const topic = uniqueName('maxlen');
    const stream = keysOf(topic).notificationStream('info');
    const t = await transport('notification_queue_max_length=50');
    const notifier = new Notifier(t, { publisherId: 'bound', driver: 'messagingv2', topics: [topic] });
    await send(notifier, Array.from({ length: 1000 }, (_, i) => i));
    // The notifier sweeps its streams at most once per sweep_interval_ms: one more send after it.
    let next = 1000;
    await waitFor(async () => (await send(notifier, [next++]), (await redis.xlen(stream)) <= 150), { timeoutMs: 10_000, intervalMs: 150, message: 'the stream cut to about 50 (whole nodes)' }).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}: XLEN ${await redis.xlen(stream)}`);
    });
    const ids = await collect(t, topic);
    await waitFor(() => ids.includes(next - 1), { timeoutMs: 10_000, message: 'the newest notification delivered' });
    expect(ids.length).toBeLessThanOrEqual(150);
    expect(ids).not.toContain(0);
  });

  it('notification_queue_ttl_ms: an un-pooled listener that left keeps its backlog only that long, while pools trim what they read', async () => {
    const topic = uniqueName('ttl');
    const stream = keysOf(topic).notificationStream('info');
    const t = await transport('notification_queue_ttl_ms=500');
    // An un-pooled listener that has read once holds the default group's backlog (store-and-forward) once it is gone.
    const notifier = new Notifier(t, { publisherId: 'bound', driver: 'messagingv2', topics: [topic] });
    const gone = await transport('');
    const early = await collect(gone, topic);
    await send(notifier, [0]);
    await waitFor(() => early.includes(0), { timeoutMs: 10_000, message: 'the un-pooled listener got one' });
    await gone.cleanup();
    const pooled = await collect(t, topic, { pool: 'p' });
    await send(notifier, Array.from({ length: 300 }, (_, i) => i + 1));
    await waitFor(() => pooled.length === 300, { timeoutMs: 20_000, message: 'the pool read all 300' });
    const sentAt = Date.now();
    await waitFor(async () => (await redis.xlen(stream)) <= 100, { timeoutMs: 10_000, message: 'entries older than 500 ms trimmed' }).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}: XLEN ${await redis.xlen(stream)} after ${Date.now() - sentAt} ms`);
    });
    expect(await groupsOf(stream)).toEqual(['default', 'pool:p']);
  });

  it('notification_store_and_forward=false: no default group, and nothing kept for a topic nobody listens to', async () => {
    const topic = uniqueName('nosf');
    const stream = keysOf(topic).notificationStream('info');
    const t = await transport('notification_store_and_forward=false');
    const notifier = new Notifier(t, { publisherId: 'bound', driver: 'messagingv2', topics: [topic] });
    await send(notifier, [1, 2, 3]);
    expect(await redis.exists(stream)).toBe(0);
    const pooled = await collect(t, topic, { pool: 'p' });
    await send(notifier, [4, 5]);
    await waitFor(() => pooled.length === 2, { timeoutMs: 10_000, message: 'the pool got what was sent after it started' });
    expect(pooled.sort()).toEqual([4, 5]);
    expect(await groupsOf(stream)).toEqual(['pool:p']);
  });

  it('dead_letter_max_len: the oldest dead letters are dropped, with a warning and a count', async () => {
    // Bounded unless asked otherwise: dead letters are not kept until someone purges them.
    expect(DEFAULTS.deadLetterMaxLen).toBe(10_000);
    const topic = uniqueName('dlcap');
    const dead = keysOf(topic).deadLetters;
    const lines: string[] = [];
    const t = await transport('max_deliveries=1&dead_letter_max_len=2', { logger: createConsoleLogger({ level: 'warn', sink: (l) => void lines.push(l) }) });
    const l = getNotificationListener(t, [new Target({ topic })], [{ info: () => { throw new Error('always fails'); } }], { pool: 'p', allowRequeue: true });
    await l.start();
    transports.push({ cleanup: async () => { await l.stop(); await l.wait(); } } as Transport);
    const notifier = new Notifier(t, { publisherId: 'bound', driver: 'messagingv2', topics: [topic] });
    const stats = () => t.driver.deliveryStats.snapshot().find((c) => c.address === `${topic}.info` && c.pool === 'p');
    for (let id = 1; id <= 4; id++) {
      await send(notifier, [id]);
      await waitFor(() => (stats()?.deadLettered ?? 0) === id, { timeoutMs: 10_000, message: `notification ${id} dead-lettered` });
    }
    const kept = (await redis.xrange(dead, '-', '+')).map(([, f]) => (JSON.parse(f[f.indexOf('b') + 1]) as { payload: { id: number } }).payload.id);
    expect(kept).toEqual([3, 4]);
    expect(lines.filter((line) => line.includes('Dropped the oldest dead letters') && line.includes(dead))).toHaveLength(2);
    expect(stats()).toMatchObject({ deadLettered: 4, deadLettersDropped: 2 });
  });
});
