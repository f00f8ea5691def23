// Driver-level delivery on a real Redis: leases claimed from a consumer that stopped, leases
// extended while a handler runs, dead letters after maxDeliveries, malformed entries dead-lettered
// while the listener goes on, trimming that never drops a pending entry, reply lists with a TTL.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from '../../src/contract/incoming-message.js';
import type { Listener } from '../../src/contract/listener.js';
import { TopicKeys, poolGroup, replyKey } from '../../src/drivers/redis/topology.js';
import type { RedisDriver } from '../../src/drivers/redis/index.js';
import { createMemoryLogger, type MemoryLogger } from '../../src/core/logger.js';
import { Target } from '../../src/core/target.js';
import { getNotificationTransport, getRpcTransport } from '../../src/transport.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcServer } from '../../src/rpc/server.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { idOf, useRedisTestKeys, xaddRaw } from '../support/redis-keys.js';

const PREFIX = `t-redisdel-${randomUUID().slice(0, 8)}`;
const { redis, transports } = useRedisTestKeys(PREFIX);

async function driver(options: Record<string, unknown> = {}, logger: MemoryLogger = createMemoryLogger()): Promise<RedisDriver> {
  const t = await getNotificationTransport(`redis://127.0.0.1:6379/?key_prefix=${PREFIX}`, { logger, driverOptions: options });
  transports.push(t);
  return t.driver as RedisDriver;
}

const body = (id: number) => ({ message_id: `m${id}`, publisher_id: 'p', event_type: 'ev', priority: 'INFO', timestamp: 't', payload: { id } });

function listen(d: RedisDriver, topic: string, pool: string | undefined, onMessage: (m: IncomingMessage) => void | Promise<void>): Promise<Listener<IncomingMessage>> {
  return d.listenForNotifications([[new Target({ topic }), 'info']], { pool }).then((l) => {
    l.start(async (ms) => {
      for (const m of ms) await onMessage(m);
    });
    return l;
  });
}

const FAST = { leaseMs: 300, sweepInterval: 100 };


describe('redis delivery', () => {
  it('a consumer that stopped acknowledging loses its lease; a live member of the pool claims the message', async () => {
    const topic = uniqueName('lease');
    const d = await driver(FAST);
    const stream = new TopicKeys(PREFIX, 'openstack', topic).notificationStream('info');
    const pool = 'p1';
    const seen: number[] = [];
    const l = await listen(d, topic, pool, async (m) => {
      seen.push(idOf(m));
      await m.acknowledge();
    });
    // A consumer of the same pool that takes the message and dies: a raw XREADGROUP, never acknowledged.
    await l.stop();
    await d.sendNotification(new Target({ topic: `${topic}.info` }), {}, body(1));
    const taken = (await redis.xreadgroup('GROUP', poolGroup(pool), 'dead-consumer', 'COUNT', 10, 'STREAMS', stream, '>')) as [string, unknown[]][];
    expect(taken[0][1]).toHaveLength(1);
    await l.cleanup();
    const got: { id: number; deliveries: number }[] = [];
    const l2 = await listen(d, topic, pool, async (m) => {
      got.push({ id: idOf(m), deliveries: (m.unwrap() as { deliveries: number }).deliveries });
      await m.acknowledge();
    });
    await waitFor(() => got.length === 1, { timeoutMs: 10_000, message: 'the abandoned message claimed' });
    expect(got[0]).toEqual({ id: 1, deliveries: 2 });
    await waitFor(async () => Number(((await redis.xpending(stream, poolGroup(pool))) as [number])[0]) === 0, { timeoutMs: 5000, message: 'nothing pending' });
    await l2.cleanup();
  });

  it('a handler running past the lease keeps its message: the lease is extended, no other member gets it', async () => {
    const topic = uniqueName('extend');
    const d = await driver(FAST);
    const got: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const a = await listen(d, topic, 'p', async (m) => {
      got.push(`a${idOf(m)}`);
      await gate;
      await m.acknowledge();
    });
    await d.sendNotification(new Target({ topic: `${topic}.info` }), {}, body(1));
    await waitFor(() => got.length === 1, { timeoutMs: 5000 });
    const b = await listen(d, topic, 'p', async (m) => {
      got.push(`b${idOf(m)}`);
      await m.acknowledge();
    });
    // Several leases long: without extension b would claim it.
    await new Promise((r) => setTimeout(r, 1500));
    release();
    await a.cleanup();
    await b.cleanup();
    expect(got).toEqual(['a1']);
  });

  it('a message requeued maxDeliveries times moves to the dead-letter stream with its consumer, count and time', async () => {
    const topic = uniqueName('dead');
    const d = await driver({ ...FAST, maxDeliveries: 3 });
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    let deliveries = 0;
    const l = await listen(d, topic, undefined, async (m) => {
      deliveries++;
      await m.requeue();
    });
    await d.sendNotification(new Target({ topic: `${topic}.info` }), {}, body(7));
    await waitFor(async () => (await redis.xlen(keys.deadLetters)) === 1, { timeoutMs: 10_000, message: 'a dead letter' });
    expect(deliveries).toBe(3);
    const [[, fields]] = (await redis.xrange(keys.deadLetters, '-', '+')) as [string, string[]][];
    const f = Object.fromEntries(fields.reduce<[string, string][]>((acc, v, i) => (i % 2 ? acc : [...acc, [v, fields[i + 1]]]), []));
    expect(f['x-stream']).toBe(keys.notificationStream('info'));
    expect(f['x-group']).toBe('default');
    expect(f['x-deliveries']).toBe('3');
    expect(f['x-consumer']).toMatch(/:\d+:[0-9a-f]{8}:\d+$/);
    expect(Number(f['x-time'])).toBeGreaterThan(Date.now() - 60_000);
    expect(f['x-error']).toMatch(/\S/);
    expect(JSON.parse(f.b).payload).toEqual({ id: 7 });
    await l.cleanup();
    expect(Number(((await redis.xpending(keys.notificationStream('info'), 'default')) as [number])[0])).toBe(0);
  });

  it('a malformed entry is dead-lettered and logged while the listener goes on', async () => {
    const topic = uniqueName('malformed');
    const logger = createMemoryLogger();
    const d = await driver(FAST, logger);
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    const got: number[] = [];
    const l = await listen(d, topic, undefined, async (m) => {
      got.push(idOf(m));
      await m.acknowledge();
    });
    await xaddRaw(keys.notificationStream('info'), { b: '{not json' });
    await xaddRaw(keys.notificationStream('info'), { other: 'no body field' });
    await d.sendNotification(new Target({ topic: `${topic}.info` }), {}, body(2));
    await waitFor(() => got.length === 1, { timeoutMs: 5000 });
    await waitFor(async () => (await redis.xlen(keys.deadLetters)) === 2, { timeoutMs: 5000, message: 'two dead letters' });
    expect(logger.records.filter((r) => r.level === 'warn' && /malformed/.test(r.msg))).toHaveLength(2);
    const dead = (await redis.xrange(keys.deadLetters, '-', '+')) as [string, string[]][];
    expect(dead.map(([, f]) => f[f.indexOf('x-error') + 1])).toEqual(['malformed message', 'malformed fields: unexpected field "other"']);
    await l.cleanup();
  });

  it('trimming removes what every group acknowledged and never an entry still pending', async () => {
    const topic = uniqueName('trim');
    const d = await driver(FAST);
    const stream = new TopicKeys(PREFIX, 'openstack', topic).notificationStream('info');
    // 300 entries: approximate trimming removes whole nodes of 100.
    for (let i = 0; i < 300; i++) await d.sendNotification(new Target({ topic: `${topic}.info` }), {}, body(i));
    // One entry is held by a dead consumer of the default group; everything else is acknowledged.
    const [[, [[heldId]]]] = (await redis.xreadgroup('GROUP', 'default', 'holder', 'COUNT', 1, 'STREAMS', stream, '>')) as [string, [string, string[]][]][];
    const got: number[] = [];
    const l = await listen(d, topic, undefined, async (m) => {
      got.push(idOf(m));
      await m.acknowledge();
    });
    await waitFor(() => got.length >= 299, { timeoutMs: 10_000, message: '299 handled' });
    // The dead consumer's entry comes back after its lease; until then nothing before it is trimmed.
    const length = await redis.xlen(stream);
    expect((await redis.xrange(stream, heldId, heldId)).length).toBe(1);
    await waitFor(() => got.length === 300, { timeoutMs: 10_000, message: 'the held one claimed' });
    await waitFor(async () => (await redis.xlen(stream)) < Math.min(length, 100), { timeoutMs: 10_000, message: 'stream trimmed once nothing is pending' });
    await l.cleanup();
  });

  it('a reply list gets a TTL, so replies nobody reads expire', async () => {
    const rpcT = await getRpcTransport(`redis://127.0.0.1:6379/?key_prefix=${PREFIX}&reply_ttl_ms=5000`);
    transports.push(rpcT);
    await (rpcT.driver as RedisDriver).sendReply('reply_deadbeef', 'm1', '{"x":1}');
    const key = replyKey(PREFIX, 'reply_deadbeef');
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(5000);
    // A live caller pops its replies: the list is gone once read.
    const topic = uniqueName('rpc');
    const server = getRpcServer(rpcT, new Target({ topic, server: 's' }), [{ echo: (_c: unknown, a: unknown) => a }]);
    await server.start();
    const client = getRpcClient(rpcT, { topic }, { timeout: 5000 });
    await expect(client.call({}, 'echo', { a: 1 })).resolves.toEqual({ a: 1 });
    expect(await redis.exists(replyKey(PREFIX, (rpcT.driver as RedisDriver).replyQueue!))).toBe(0);
    await server.stop();
    await server.wait();
  });

  it('a new pool starts at the newest entry by default, or replays from pool_start (oldest, a time, an entry id)', async () => {
    const topic = uniqueName('start');
    const sender = await driver();
    const sent: number[] = [];
    const send = async (id: number) => {
      await sender.sendNotification(new Target({ topic: `${topic}.info` }), {}, body(id));
      sent.push(id);
    };
    // The default group (created by the notifier) keeps these for un-pooled listeners; pools come later.
    await send(1);
    await send(2);
    const stream = new TopicKeys(PREFIX, 'openstack', topic).notificationStream('info');
    const [[secondId]] = (await redis.xrange(stream, '-', '+')).slice(1);
    const afterSecond = Number(secondId.split('-')[0]) + 1;
    while (Date.now() <= afterSecond) await new Promise((r) => setTimeout(r, 1));
    await send(3);

    /** A new listener of `pool` receives sent[from...] and then the one sent after it started. */
    const receives = async (options: Record<string, unknown>, pool: string, from: number) => {
      const expected = [...sent.slice(from), 100 + sent.length];
      const got: number[] = [];
      const l = await listen(await driver(options), topic, pool, (m) => {
        got.push(idOf(m));
        return m.acknowledge();
      });
      await send(100 + sent.length);
      await waitFor(() => got.length >= expected.length, { timeoutMs: 10_000, message: `pool ${pool} got ${expected.length} notifications` });
      await l.stop();
      await l.cleanup();
      expect(got, pool).toEqual(expected);
    };
    await receives({}, 'newest', sent.length);
    const newestReadUpTo = sent.length;
    await receives({ poolStart: 'oldest' }, 'oldest', 0);
    await receives({ poolStart: secondId }, 'after-entry', 2);
    await receives({ poolStart: String(afterSecond) }, 'from-time', 2);
    // An existing pool keeps its position whatever pool_start says: it goes on after what it read.
    await receives({ poolStart: 'oldest' }, 'newest', newestReadUpTo);
    await expect(driver({ poolStart: 'yesterday' })).rejects.toThrow(/poolStart/);
  });

  it('a pool with no consumer left and unread entries is reported (it holds back trimming), once, naming pool and backlog', async () => {
    const topic = uniqueName('idle');
    const logger = createMemoryLogger();
    const gone = await listen(await driver(FAST), topic, 'gone', (m) => m.acknowledge());
    await gone.stop();
    await gone.cleanup();
    const sender = await driver();
    for (let id = 1; id <= 3; id++) await sender.sendNotification(new Target({ topic: `${topic}.info` }), {}, body(id));
    // Any live listener of the stream sweeps it.
    const live = await listen(await driver(FAST, logger), topic, undefined, (m) => m.acknowledge());
    const reports = () => logger.records.filter((r) => r.level === 'warn' && /holds back trimming/.test(r.msg));
    await waitFor(() => reports().length > 0, { timeoutMs: 10_000, message: 'the idle pool reported' });
    expect(reports()[0].fields).toMatchObject({ pool: 'gone', entriesBehind: 3 });
    // Reported once, not on every sweep.
    await new Promise((r) => setTimeout(r, FAST.sweepInterval * 5));
    expect(reports()).toHaveLength(1);
    await live.stop();
    await live.cleanup();
  });
});
