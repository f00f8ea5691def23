// GC on Redis: 100,000 notifications (and RPC calls and fanout casts) through pools, pool members,
// notifiers, RPC servers and clients that come and go, against a private redis-server with short
// lease/sweep/TTL options; afterwards key count and memory are back near the warmed-up baseline.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getNotificationListener,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  Notifier,
  NotificationResult,
  Target,
  type NotificationListener,
  type Transport,
} from '../../src/index.js';
import { createConsoleLogger } from '../../src/core/logger.js';
import { TopicKeys } from '../../src/drivers/redis/topology.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { redisCommand, redisInfo, startRedisServer, type RedisServer } from '../support/redis-servers.js';

const ROUNDS = 20;
const PER_ROUND = 5000;
/** Sends in flight at once: ioredis auto-pipelines them into few round trips. */
const IN_FLIGHT = 500;
const OPTIONS = 'lease_ms=500&sweep_interval_ms=100&consumer_ttl_ms=1500&pool_ttl_ms=1000&server_ttl_ms=1000&reply_ttl_ms=1000&block_ms=1000';

interface Snapshot {
  keys: string[];
  usedMemory: number;
  streamBytes: Map<string, number>;
  groups: Map<string, string[]>;
  consumers: number;
}

describe('GC (redis): nothing grows when pools, members and clients come and go', () => {
  let server: RedisServer;
  let url: string;
  const transports = new Set<Transport>();

  /** The transports' warnings and errors, for a failure to show what the drivers saw. */
  const warnings: string[] = [];
  const logger = createConsoleLogger({ level: 'warn', sink: (line) => void warnings.push(line) });

  async function transport(kind: 'rpc' | 'notification', at = url): Promise<Transport> {
    const t = kind === 'rpc' ? await getRpcTransport(at, { logger }) : await getNotificationTransport(at, { logger });
    transports.add(t);
    return t;
  }

  async function drop(...ts: Transport[]): Promise<void> {
    for (const t of ts) {
      transports.delete(t);
      await t.cleanup();
    }
  }

  async function cmd(...args: (string | number)[]): Promise<unknown> {
    return redisCommand(server.endpoint, args, 10_000);
  }

  async function snapshot(): Promise<Snapshot> {
    const keys = ((await cmd('KEYS', '*')) as string[]).sort();
    const streamBytes = new Map<string, number>();
    const groups = new Map<string, string[]>();
    let consumers = 0;
    for (const k of keys) {
      if ((await cmd('TYPE', k)) !== 'stream') continue;
      streamBytes.set(k, Number(await cmd('MEMORY', 'USAGE', k, 'SAMPLES', 0)));
      const gs = (await cmd('XINFO', 'GROUPS', k)) as unknown[][];
      groups.set(k, gs.map((g) => String(g[g.indexOf('name') + 1])).sort());
      for (const g of gs) consumers += Number(g[g.indexOf('consumers') + 1]);
    }
    return { keys, usedMemory: Number((await redisInfo(server.endpoint, 'memory')).used_memory), streamBytes, groups, consumers };
  }

  beforeAll(async () => {
    server = await startRedisServer();
    url = `${server.url}?${OPTIONS}`;
  });

  afterAll(async () => {
    await Promise.all([...transports].map((t) => t.cleanup().catch(() => undefined)));
    await server?.stop();
  }, 60_000);

  it(`${ROUNDS * PER_ROUND} notifications through pools and clients that come and go leave keys and memory where they started`, async () => {
    const topic = uniqueName('t-gc');
    const rpcTopic = uniqueName('t-gc-rpc');
    const counter = () => {
      const seen = new Set<number>();
      const endpoint = {
        info(_ctx: unknown, _pub: string, _type: string, payload: { seq: number }) {
          seen.add(payload.seq);
          return NotificationResult.HANDLED;
        },
      };
      return { seen, endpoint };
    };
    // The default group's listener lives throughout (notifiers create that group: store-and-forward keeps what it has not read).
    const steadyT = await transport('notification');
    const steady = counter();
    const steadyListener = getNotificationListener(steadyT, [new Target({ topic })], [steady.endpoint], {});
    await steadyListener.start();

    let baseline: Snapshot | undefined;
    let seq = 0;
    for (let round = 0; round < ROUNDS; round++) {
      // A pool that lives one round, and a member of a long-lived pool that lives one round.
      const memberT = await transport('notification');
      const shortPool = counter();
      const longPool = counter();
      const listeners: NotificationListener[] = [
        getNotificationListener(memberT, [new Target({ topic })], [shortPool.endpoint], { pool: `short-${round}` }),
        getNotificationListener(memberT, [new Target({ topic })], [longPool.endpoint], { pool: 'long' }),
      ];
      for (const l of listeners) await l.start();
      // An RPC server and a client of their own each round.
      const serverT = await transport('rpc');
      const rpcServer = getRpcServer(serverT, new Target({ topic: rpcTopic, server: `s-${round}` }), [{ echo: (_c: unknown, a: { n: number }) => a.n }]);
      await rpcServer.start();
      const clientT = await transport('rpc');
      const client = getRpcClient(clientT, { topic: rpcTopic }, { timeout: 10_000 });
      for (let n = 0; n < 20; n++) expect(await client.call({}, 'echo', { n })).toBe(n);
      await client.prepare({ fanout: true }).cast({}, 'echo', { n: -1 });

      const notifyT = await transport('notification');
      const notifier = new Notifier(notifyT, { publisherId: 'faults.gc', driver: 'messagingv2', topics: [topic] });
      const first = seq;
      for (let sent = 0; sent < PER_ROUND; sent += IN_FLIGHT) {
        await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, PER_ROUND - sent) }, () => notifier.info({}, 'gc.test', { seq: seq++ })));
      }
      const all = (seen: Set<number>, from: number) => {
        for (let s = from; s < seq; s++) if (!seen.has(s)) return false;
        return true;
      };
      await waitFor(() => all(steady.seen, first) && all(shortPool.seen, first) && all(longPool.seen, first), {
        timeoutMs: 60_000,
        message: `round ${round}: all ${PER_ROUND} delivered to each group (default ${steady.seen.size}, short ${shortPool.seen.size}, long ${longPool.seen.size})`,
      }).catch(async (err: unknown) => {
        const stream = new TopicKeys('tidings', 'openstack', topic).notificationStream('info');
        const groups = await cmd('XINFO', 'GROUPS', stream).catch((e: unknown) => String(e));
        const consumers = Array.isArray(groups) ? await Promise.all((groups as unknown[][]).map((g) => cmd('XINFO', 'CONSUMERS', stream, String(g[g.indexOf('name') + 1])))) : [];
        throw new Error(`${(err as Error).message}: XLEN ${String(await cmd('XLEN', stream))}, groups ${JSON.stringify(groups)}, consumers ${JSON.stringify(consumers)}, last warnings ${JSON.stringify(warnings.slice(-20))}`);
      });
      steady.seen.clear();
      for (const l of listeners) await l.stop();
      for (const l of listeners) await l.wait();
      await rpcServer.stop();
      await rpcServer.wait();
      await drop(memberT, serverT, clientT, notifyT);
      if (round === 0) {
        // Warmed up: every kind of key exists once, scripts are loaded.
        await new Promise((r) => setTimeout(r, 1500));
        baseline = await snapshot();
      }
    }
    expect(seq).toBe(ROUNDS * PER_ROUND);

    // GC runs on the sweeps of the listener still alive: past every TTL, it has dropped the short
    // pools, the gone members and servers, and trimmed what every group acknowledged.
    const settled = async () => {
      const now = await snapshot();
      return now.keys.length <= baseline!.keys.length && now.consumers <= baseline!.consumers ? now : undefined;
    };
    let final: Snapshot | undefined;
    await waitFor(async () => (final = await settled()) !== undefined, { timeoutMs: 30_000, message: 'keys and consumers back to the baseline' }).catch(async (err: unknown) => {
      const now = await snapshot();
      throw new Error(`${(err as Error).message}: baseline ${JSON.stringify({ keys: baseline!.keys, consumers: baseline!.consumers, groups: [...baseline!.groups] })} now ${JSON.stringify({ keys: now.keys, consumers: now.consumers, groups: [...now.groups] })}`);
    });
    const b = baseline!;
    const f = final!;
    const describeIt = JSON.stringify({ baseline: { keys: b.keys, usedMemory: b.usedMemory, streams: [...b.streamBytes], groups: [...b.groups] }, final: { keys: f.keys, usedMemory: f.usedMemory, streams: [...f.streamBytes], groups: [...f.groups] } });
    expect(f.keys.length, describeIt).toBeLessThanOrEqual(b.keys.length);
    // The long pool and the default group remain on the notification stream; every short pool is gone.
    for (const [, groups] of f.groups) expect(groups.filter((g) => g.startsWith('pool:short-')), describeIt).toEqual([]);
    // Tolerance: approximate trimming (MINID ~) keeps whole radix-tree nodes of up to 100 entries,
    // so a stream may keep up to ~2 nodes of ~1 KB entries beyond the baseline: 256 KB per stream.
    for (const [key, bytes] of f.streamBytes) expect(bytes, `${key}: ${describeIt}`).toBeLessThanOrEqual((b.streamBytes.get(key) ?? 0) + 256 * 1024);
    // used_memory also counts client buffers and allocator slack: within 2 MB of the baseline,
    // where growth with the load would be ~100,000 entries x ~1 KB = ~100 MB.
    expect(f.usedMemory, describeIt).toBeLessThanOrEqual(b.usedMemory + 2 * 1024 * 1024);

    await steadyListener.stop();
    await steadyListener.wait();
  }, 180_000);

  it('pools only, no un-pooled listener ever: the default group the notifier created does not pin the stream', async () => {
    const topic = uniqueName('t-gc-pools');
    const stream = new TopicKeys('tidings', 'openstack', topic).notificationStream('info');
    // Fast sweeps, no pool TTL: on a loaded machine a pool dropped by pool_ttl_ms would start again at `$`.
    const at = `${server.url}?lease_ms=2000&sweep_interval_ms=100&block_ms=1000`;
    const listenT = await transport('notification', at);
    const pools = ['a', 'b'].map(() => {
      const seen = new Set<number>();
      return { seen, endpoint: { info: (_c: unknown, _p: string, _t: string, payload: { seq: number }) => void seen.add(payload.seq) } };
    });
    const listeners = pools.map((p, i) => getNotificationListener(listenT, [new Target({ topic })], [p.endpoint], { pool: `p${i}` }));
    for (const l of listeners) await l.start();
    const notifier = new Notifier(await transport('notification', at), { publisherId: 'faults.gc', driver: 'messagingv2', topics: [topic] });
    const SENT = 3000;
    for (let seq = 0; seq < SENT; seq += IN_FLIGHT) await Promise.all(Array.from({ length: IN_FLIGHT }, (_, i) => notifier.info({}, 'gc.test', { seq: seq + i })));
    await waitFor(() => pools.every((p) => p.seen.size === SENT), { timeoutMs: 30_000, message: 'both pools handled every notification' }).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}: seen ${pools.map((p) => p.seen.size)} XLEN ${String(await cmd('XLEN', stream))} groups ${JSON.stringify(await cmd('XINFO', 'GROUPS', stream))} keys ${JSON.stringify(await cmd('KEYS', '*'))}`);
    });
    // The pools' sweeps (every 100 ms) trim what both acknowledged; the never-read default group
    // (created by the notifier, last-delivered 0-0) used to hold every entry until maxmemory.
    const length = async () => Number(await cmd('XLEN', stream));
    await waitFor(async () => (await length()) <= 200, { timeoutMs: 10_000, message: 'the stream trimmed once the pools consumed' }).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}: XLEN ${await length()} of ${SENT}, groups ${JSON.stringify(await cmd('XINFO', 'GROUPS', stream))}`);
    });
    // Store-and-forward stays: the default group is there for an un-pooled listener started later.
    expect(((await cmd('XINFO', 'GROUPS', stream)) as unknown[][]).map((g) => String(g[g.indexOf('name') + 1])).sort()).toEqual(['default', 'pool:p0', 'pool:p1']);
    for (const l of listeners) await l.stop();
    for (const l of listeners) await l.wait();
  }, 60_000);
});
