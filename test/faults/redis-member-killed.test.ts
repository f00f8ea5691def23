// Faults on Redis: a pool member SIGKILLed while it holds leased notifications (a child process
// whose handlers never return); the surviving member claims every one once the lease runs out.
// And an RPC server SIGKILLed: a live server of its topic removes the dead one's own stream.
// Runs against its own redis-server, never the shared 127.0.0.1:6379.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getNotificationListener, getNotificationTransport, getRpcClient, getRpcServer, getRpcTransport, Notifier, NotificationResult, Target, type Transport } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { redisCommand, startRedisServer, type RedisServer } from '../support/redis-servers.js';
import { spawnMember } from './support/member-child.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
const FIXTURE = join(FIXTURES, 'pool-member.ts');
const N = 25;
const LEASE_MS = 1000;

interface KillFixture {
  server: RedisServer;
  url: string;
  transport?: Transport;
  /** The child the test kills; killed after the file if it still runs. */
  child?: ChildProcessWithoutNullStreams;
}

/** A private redis-server and a transport on it (URL + `query`); all stopped after the tests. */
function useKillFixture(query: string, open: (url: string) => Promise<Transport>): KillFixture {
  const f = {} as KillFixture;
  beforeAll(async () => {
    f.server = await startRedisServer();
    f.url = `${f.server.url}${query}`;
    f.transport = await open(f.url);
  });
  afterAll(async () => {
    if (f.child && f.child.exitCode === null && f.child.signalCode === null) f.child.kill('SIGKILL');
    await f.transport?.cleanup();
    await f.server?.stop();
  }, 60_000);
  return f;
}

describe('fault (redis): a pool member dies holding leased notifications', () => {
  const topic = uniqueName('t-kill');
  const pool = uniqueName('pool');
  const f = useKillFixture(`?lease_ms=${LEASE_MS}&sweep_interval_ms=200`, getNotificationTransport);

  it('another member of the pool claims every message the killed member held, none lost', async () => {
    const spawned = spawnMember(FIXTURE, { url: f.url, topic, pool });
    const child = (f.child = spawned.child);
    const childEvents = spawned.events;
    const childState = spawned.state;
    await waitFor(() => childEvents.some((e) => e.event === 'ready'), { timeoutMs: 60_000, message: `the pool-member child to start (${childState()})` });

    const notifier = new Notifier(f.transport!, { publisherId: 'faults.kill', driver: 'messagingv2', topics: [topic] });
    for (let seq = 0; seq < N; seq++) await notifier.info({}, 'kill.test', { seq });
    const held = () => new Set(childEvents.filter((e) => e.event === 'held').map((e) => e.seq as number));
    await waitFor(() => held().size === N, { timeoutMs: 30_000, message: `the child to hold all ${N} notifications (holds ${held().size}; ${childState()})` });

    // The second member joins while the first still holds everything: it gets nothing while the
    // first is alive (its leases are extended), and everything once it is gone.
    const received: number[] = [];
    const member = getNotificationListener(
      f.transport!,
      [new Target({ topic })],
      [
        {
          info(_ctx: unknown, _pub: string, _type: string, payload: { seq: number }) {
            received.push(payload.seq);
            return NotificationResult.HANDLED;
          },
        },
      ],
      { pool },
    );
    await member.start();
    try {
      // Three leases with the child alive: its lease extension keeps them its own.
      await new Promise((r) => setTimeout(r, 3 * LEASE_MS));
      expect(received).toEqual([]);
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      await waitFor(() => new Set(received).size === N, { timeoutMs: 30_000, message: `the surviving member to claim all ${N} (has ${new Set(received).size})` });
      expect([...new Set(received)].sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i));
      expect(received).toHaveLength(N);
      // Nothing is left pending in the pool's group.
      const stream = (await redisCommand(f.server.endpoint, ['KEYS', `*${topic}*:notify:*`])) as string[];
      expect(stream).toHaveLength(1);
      await waitFor(async () => Number(((await redisCommand(f.server.endpoint, ['XPENDING', stream[0], `pool:${pool}`])) as [number])[0]) === 0, { timeoutMs: 10_000, message: 'nothing pending in the pool' });
    } finally {
      await member.stop();
      await member.wait();
    }
  }, 120_000);
});

describe('fault (redis): an RPC server dies without leaving', () => {
  const topic = uniqueName('t-rpc-kill');
  const dead = uniqueName('pod');
  const f = useKillFixture('?server_ttl_ms=300&consumer_ttl_ms=300&sweep_interval_ms=100', getRpcTransport);

  const keys = async (pattern: string) => (await redisCommand(f.server.endpoint, ['KEYS', pattern])) as string[];

  it('a live server of the topic removes the dead server\'s own stream and request list (with what nobody read) and its fanout inbox', async () => {
    const spawned = spawnMember(join(FIXTURES, 'rpc-server.ts'), { url: f.url, topic, server: dead });
    const child = (f.child = spawned.child);
    await waitFor(() => spawned.events.some((e) => e.event === 'ready'), { timeoutMs: 60_000, message: `the rpc-server child to start (${spawned.state()})` });
    const survivor = getRpcServer(f.transport!, new Target({ topic, server: 'survivor' }), [{ echo: (_ctx: unknown, args: unknown) => args }]);
    await survivor.start();
    try {
      const client = getRpcClient(f.transport!, { topic, server: dead }, { timeout: 10_000 });
      expect(await client.call({}, 'echo', { hello: 1 })).toEqual({ hello: 1 });
      const deadStream = await keys(`*:rpc:${topic}.${dead}`);
      expect(deadStream).toHaveLength(1);
      const inboxesBefore = await keys(`*${topic}*:fanout:*`);
      expect(inboxesBefore).toHaveLength(2);

      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      // A cast nobody will read lands in the dead server's request list; it goes with the stream.
      await client.cast({}, 'echo', { unread: true });
      const deadList = await keys(`*:req:${topic}.${dead}`);
      expect(deadList).toHaveLength(1);
      expect(Number(await redisCommand(f.server.endpoint, ['LLEN', deadList[0]!]))).toBeGreaterThan(0);

      await waitFor(async () => (await keys(`*:rpc:${topic}.${dead}`)).length === 0, { timeoutMs: 20_000, message: `the dead server's stream ${deadStream[0]} to be removed` });
      expect(await keys(`*:req:${topic}.${dead}`), 'its request list went with it').toHaveLength(0);
      await waitFor(async () => (await keys(`*${topic}*:fanout:*`)).length === 1, { timeoutMs: 20_000, message: 'the dead server\'s fanout inbox to be removed' });
      // The live server keeps its own stream and still answers.
      expect(await keys(`*:rpc:${topic}.survivor`)).toHaveLength(1);
      expect(await getRpcClient(f.transport!, { topic, server: 'survivor' }, { timeout: 10_000 }).call({}, 'echo', { still: 'here' })).toEqual({ still: 'here' });
    } finally {
      await survivor.stop();
      await survivor.wait();
    }
  }, 120_000);
});
