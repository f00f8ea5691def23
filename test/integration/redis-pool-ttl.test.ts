// `pool_ttl_ms` on Redis (127.0.0.1:6379): a pool whose members are all gone is dropped with its
// backlog, and a pool with a member still reading is never dropped, even when that member's own
// sweep (which marks its pool seen) is late, as on a loaded machine: another listener's sweep
// used to destroy the group under it, the member created it again at the newest entry, and what
// was sent in between never reached the pool. A group deleted under a member all the same is
// made again after the last entry the member read.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createMemoryLogger, type MemoryLogger } from '../../src/core/logger.js';
import { TopicKeys } from '../../src/drivers/redis/topology.js';
import { getNotificationListener, getNotificationTransport, Notifier, Target, type NotificationListener, type Transport } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { useRedisTestKeys } from '../support/redis-keys.js';

const PREFIX = `t-redispoolttl-${randomUUID().slice(0, 8)}`;
const BASE = `redis://127.0.0.1:6379/?key_prefix=${PREFIX}`;
/** The sweeping side: sweeps every 50 ms and drops pools unseen for 300 ms. */
const SWEEPER = 'sweep_interval_ms=50&pool_ttl_ms=300&block_ms=100';
/** A pool member whose own sweep never comes during the test (it would mark its pool seen), reading in 100 ms blocks. */
const LATE_SWEEP = 'sweep_interval_ms=600000&block_ms=100';
const { redis, transports } = useRedisTestKeys(PREFIX);

async function transport(query: string, logger: MemoryLogger = createMemoryLogger()): Promise<Transport> {
  const t = await getNotificationTransport(`${BASE}&${query}`, { logger });
  transports.push(t);
  return t;
}

const groupsOf = async (stream: string) => ((await redis.xinfo('GROUPS', stream)) as unknown[][]).map((g) => String(g[g.indexOf('name') + 1])).sort();

/** A listener collecting payload ids; stopped with the test's transports. */
async function collect(t: Transport, topic: string, pool?: string): Promise<{ ids: Set<number>; listener: NotificationListener }> {
  const ids = new Set<number>();
  const listener = getNotificationListener(t, [new Target({ topic })], [{ info: (_c: unknown, _p: string, _t: string, payload: { id: number }) => void ids.add(payload.id) }], pool === undefined ? {} : { pool });
  await listener.start();
  transports.push({ cleanup: async () => { await listener.stop(); await listener.wait(); } } as Transport);
  return { ids, listener };
}

describe('Redis: pool_ttl_ms drops pools whose members are gone, never one with a member reading; a group deleted under a member loses nothing', () => {
  it('a member reading whose own sweep is late keeps its pool: every notification reaches it', async () => {
    const topic = uniqueName('poolttl-live');
    const stream = new TopicKeys(PREFIX, 'openstack', topic).notificationStream('info');
    const memberLog = createMemoryLogger();
    const member = await collect(await transport(LATE_SWEEP, memberLog), topic, 'p');
    // The other listener's sweeps see pool:p unseen past pool_ttl_ms from its first sweep on.
    await collect(await transport(SWEEPER), topic);
    const notifier = new Notifier(await transport(SWEEPER), { publisherId: 'poolttl', driver: 'messagingv2', topics: [topic] });
    // 1.5 s of notifications, five pool ttls: each drop would lose what was sent before the member made the group again.
    const SENT = 1500;
    for (let id = 0; id < SENT; id += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, i) => notifier.info({}, 'poolttl.test', { id: id + i })));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await waitFor(() => member.ids.size === SENT, { timeoutMs: 10_000, message: 'the pool got every notification' }).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}: ${member.ids.size} of ${SENT}; member warnings ${JSON.stringify(memberLog.records.filter((r) => r.level === 'warn').map((r) => r.msg))}`);
    });
    expect(await groupsOf(stream)).toContain('pool:p');
    expect(memberLog.records.filter((r) => /Consumer group missing/.test(r.msg))).toEqual([]);
  });

  it('a pool whose members all stopped is dropped after pool_ttl_ms, and its seen mark with it', async () => {
    const topic = uniqueName('poolttl-gone');
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    const stream = keys.notificationStream('info');
    const member = await collect(await transport(SWEEPER), topic, 'gone');
    await collect(await transport(SWEEPER), topic);
    const notifier = new Notifier(await transport(SWEEPER), { publisherId: 'poolttl', driver: 'messagingv2', topics: [topic] });
    await notifier.info({}, 'poolttl.test', { id: 1 });
    await waitFor(() => member.ids.has(1), { timeoutMs: 10_000, message: 'the pool got the notification' });
    expect(await groupsOf(stream)).toContain('pool:gone');
    await member.listener.stop();
    await member.listener.wait();
    await waitFor(async () => !(await groupsOf(stream)).includes('pool:gone'), { timeoutMs: 10_000, message: 'the pool dropped' });
    expect(await redis.hexists(keys.poolsSeen, 'pool:gone')).toBe(0);
  });

  it('a group deleted under a member is made again after the last entry it read: nothing sent meanwhile is lost', async () => {
    const topic = uniqueName('poolttl-deleted');
    const stream = new TopicKeys(PREFIX, 'openstack', topic).notificationStream('info');
    const memberLog = createMemoryLogger();
    const ids = new Set<number>();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let holding = false;
    // prefetch_count=1: while the first notification is being handled, the member reads nothing.
    const listener = getNotificationListener(
      await transport('prefetch_count=1&block_ms=100', memberLog),
      [new Target({ topic })],
      [
        {
          info: async (_c: unknown, _p: string, _t: string, payload: { id: number }) => {
            if (payload.id === 0) {
              holding = true;
              await gate;
            }
            ids.add(payload.id);
          },
        },
      ],
      { pool: 'stall' },
    );
    await listener.start();
    transports.push({ cleanup: async () => { await listener.stop(); await listener.wait(); } } as Transport);
    const notifier = new Notifier(await transport('block_ms=100'), { publisherId: 'poolttl', driver: 'messagingv2', topics: [topic] });
    await notifier.info({}, 'poolttl.test', { id: 0 });
    await waitFor(() => holding, { timeoutMs: 10_000, message: 'the member handling the first notification' });
    // The group goes (by hand here; pool_ttl_ms does the same to a member stalled that long), and 50 more come.
    await redis.xgroup('DESTROY', stream, 'pool:stall');
    for (let id = 1; id <= 50; id++) await notifier.info({}, 'poolttl.test', { id });
    release();
    await waitFor(() => ids.size === 51, { timeoutMs: 10_000, message: 'every notification handled' }).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}: ${ids.size} of 51; member warnings ${JSON.stringify(memberLog.records.filter((r) => r.level === 'warn').map((r) => r.msg))}`);
    });
    expect(memberLog.records.some((r) => /Consumer group missing/.test(r.msg))).toBe(true);
    expect(await groupsOf(stream)).toContain('pool:stall');
  });
});
