// RPC requests on request lists, on the Redis at 127.0.0.1:6379: requests wait in the address's
// list while no server pops it and the next server runs them; a stopping server blocked in BLMPOP
// returns at once; requests popped and not yet running when a server stops still run; a named
// server leaving with requests unread in its list keeps them for the next
// server of that name; an address no server ever listened on drops requests (no list is made);
// forged list elements are dead-lettered, never run; a request an earlier version wrote to the
// stream is still served (rolling upgrade); wait_replicas applies to a request as to any write.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { BaseDriver } from '../../src/contract/base-driver.js';
import { createMemoryLogger } from '../../src/core/logger.js';
import { MessageDeliveryFailure, MessagingTimeout } from '../../src/core/errors.js';
import { Target } from '../../src/core/target.js';
import { TopicKeys } from '../../src/drivers/redis/topology.js';
import { getRpcTransport, Notifier } from '../../src/index.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcServer } from '../../src/rpc/server.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { useRedisTestKeys } from '../support/redis-keys.js';

const PREFIX = `t-redisrpcl-${randomUUID().slice(0, 8)}`;
const URL = `redis://127.0.0.1:6379/?key_prefix=${PREFIX}`;
const { redis, transports } = useRedisTestKeys(PREFIX);
const TEN_YEARS = 10 * 365 * 86_400_000;
const hex = () => randomUUID().replaceAll('-', '');

/** A cast or call in oslo's 2.0 envelope, as tidings and Python oslo.messaging write it. */
const request = (method: string, args: object, replyQueue?: string) =>
  JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ method, args, namespace: null, version: '1.0', _unique_id: hex(), ...(replyQueue ? { _msg_id: hex(), _reply_q: replyQueue, _timeout: null } : {}) }) });

async function transportPair(url = URL) {
  const logger = createMemoryLogger();
  const serverT = await getRpcTransport(url, { logger });
  const clientT = await getRpcTransport(url);
  transports.push(serverT, clientT);
  return { serverT, clientT, logger };
}

describe('Redis: RPC request lists', () => {
  it('requests sent while no server pops wait in the list; a server blocked in BLMPOP stops at once; the next server runs each once', async () => {
    // A blocking read of 30 s: stop() must not wait it out.
    const { serverT, clientT } = await transportPair(`${URL}&block_ms=30000`);
    const topic = uniqueName('rl');
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    const ran: number[] = [];
    const endpoints = [{ record: (_c: unknown, args: { id: number }) => void ran.push(args.id), echo: (_c: unknown, a: unknown) => a }];
    const first = getRpcServer(serverT, new Target({ topic, server: 's1' }), endpoints);
    await first.start();
    const client = getRpcClient(clientT, { topic }, { timeout: 10_000 });
    await expect(client.call({}, 'echo', { n: 1 })).resolves.toEqual({ n: 1 });
    // Its readers are blocked again (nothing more to read) when it stops.
    const began = Date.now();
    await first.stop();
    await first.wait();
    expect(Date.now() - began, 'stop() returned without waiting out the 30 s blocking read').toBeLessThan(15_000);
    for (let id = 1; id <= 3; id++) await client.cast({}, 'record', { id });
    expect(await redis.llen(keys.topicList), 'the casts wait in the topic\'s request list').toBe(3);
    expect(ran).toEqual([]);
    const second = getRpcServer(serverT, new Target({ topic, server: 's2' }), endpoints);
    await second.start();
    await waitFor(() => ran.length >= 3, { timeoutMs: 10_000, message: `the next server ran the waiting casts (${ran.length})` });
    await expect(client.call({}, 'echo', { n: 2 })).resolves.toEqual({ n: 2 });
    expect(ran.sort()).toEqual([1, 2, 3]);
    expect(await redis.llen(keys.topicList)).toBe(0);
    await second.close();
  });

  it('requests popped together and not yet running when the server stops still run: none lost once popped', async () => {
    const { serverT, clientT } = await transportPair();
    const topic = uniqueName('rp');
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    const ran: number[] = [];
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const endpoints = [{ record: async (_c: unknown, args: { id: number }) => {
      ran.push(args.id);
      if (args.id === 1) await gate;
    }, echo: (_c: unknown, a: unknown) => a }];
    // One request at a time: the others wait in the listener once popped.
    const server = getRpcServer(serverT, new Target({ topic, server: 's1' }), endpoints, { executorSize: 1 });
    await server.start();
    const client = getRpcClient(clientT, { topic }, { timeout: 10_000 });
    await client.call({}, 'echo', {});
    await client.cast({}, 'record', { id: 1 });
    await waitFor(() => ran.length === 1, { timeoutMs: 10_000, message: 'the first request running' });
    // Pushed together: one BLMPOP takes them all while the first still runs.
    await redis.rpush(keys.topicList, ...[2, 3, 4, 5].map((id) => request('record', { id })));
    await waitFor(async () => (await redis.llen(keys.topicList)) === 0, { timeoutMs: 10_000, message: 'the server popped the four' });
    const stopped = server.stop();
    open();
    await stopped;
    await server.wait();
    expect(ran.sort()).toEqual([1, 2, 3, 4, 5]);
  });

  it('a named server leaving with requests unread in its list keeps them for the next server of that name; leaving with none removes its keys', async () => {
    const { serverT, clientT } = await transportPair();
    const topic = uniqueName('rn');
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    const ran: number[] = [];
    const endpoints = [{ record: (_c: unknown, args: { id: number }) => void ran.push(args.id) }];
    const first = getRpcServer(serverT, new Target({ topic, server: 'x' }), endpoints);
    await first.start();
    const toX = getRpcClient(clientT, { topic, server: 'x' }, { timeout: 10_000 });
    // Stopped (no more reads), not yet released: what is sent now waits in its list.
    await first.stop();
    for (let id = 1; id <= 2; id++) await toX.cast({}, 'record', { id });
    await first.wait();
    expect(await redis.llen(keys.serverList('x')), 'the unread requests stay in the list').toBe(2);
    expect(await redis.exists(keys.serverStream('x')), 'the address stays (its stream marks it)').toBe(1);
    const next = getRpcServer(serverT, new Target({ topic, server: 'x' }), endpoints);
    await next.start();
    await waitFor(() => ran.length >= 2, { timeoutMs: 10_000, message: `the next server of the name ran them (${ran.length})` });
    expect(ran.sort()).toEqual([1, 2]);
    await next.stop();
    await next.wait();
    expect(await redis.exists(keys.serverList('x'), keys.serverStream('x')), 'nothing left of the name').toBe(0);
    // Now requests to it are dropped, also several sent in one tick (one RPUSH, taken back): no list stays.
    await Promise.all([3, 4, 5].map((id) => toX.cast({}, 'record', { id })));
    expect(await redis.exists(keys.serverList('x'))).toBe(0);
    await toX.cast({}, 'record', { id: 6 });
    expect(await redis.exists(keys.serverList('x'))).toBe(0);
    expect(ran.sort()).toEqual([1, 2]);
  });

  it('a request to an address no server ever listened on is dropped: no list is made, the call times out', async () => {
    const { clientT } = await transportPair();
    const topic = uniqueName('rd');
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    await getRpcClient(clientT, { topic }).cast({}, 'record', { id: 1 });
    await getRpcClient(clientT, { topic, server: 'nobody' }).cast({}, 'record', { id: 2 });
    await expect(getRpcClient(clientT, { topic }, { timeout: 300 }).call({}, 'echo', {})).rejects.toBeInstanceOf(MessagingTimeout);
    expect(await redis.exists(keys.topicList, keys.serverList('nobody'), keys.topicStream, keys.serverStream('nobody'))).toBe(0);
  });

  it('forged list elements (a deadline tidings could not write, no envelope) are dead-lettered, never run; genuine ones run', { timeout: 30_000 }, async () => {
    const { serverT, clientT, logger } = await transportPair();
    const topic = uniqueName('rf');
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    const ran: number[] = [];
    const server = getRpcServer(serverT, new Target({ topic, server: 's1' }), [{ record: (_c: unknown, args: { id: number }) => (ran.push(args.id), args.id) }]);
    await server.start();
    await redis.rpush(keys.topicList, `x=soon;${request('record', { id: 1 })}`);
    await redis.rpush(keys.topicList, `x=${Date.now() + TEN_YEARS};${request('record', { id: 2 })}`);
    await redis.rpush(keys.topicList, 'not a request');
    await redis.rpush(keys.topicList, `x=${Date.now() + 60_000};${request('record', { id: 4 })}`);
    await redis.rpush(keys.topicList, request('record', { id: 5 }));
    // Past its deadline: its caller gave up, so it is skipped (not dead-lettered).
    await redis.rpush(keys.topicList, `x=${Date.now() - 1};${request('record', { id: 6 })}`);
    await expect(getRpcClient(clientT, { topic }, { timeout: 10_000 }).call({}, 'record', { id: 7 })).resolves.toBe(7);
    await waitFor(async () => ran.includes(5) && (await redis.xlen(keys.deadLetters)) === 3, { timeoutMs: 10_000, message: 'the genuine requests run and the forged ones dead-lettered' });
    expect(ran.sort()).toEqual([4, 5, 7]);
    const dead = (await redis.xrange(keys.deadLetters, '-', '+')).map(([, f]) => f);
    const field = (f: string[], name: string) => f[f.lastIndexOf(name) + 1];
    expect(dead.map((f) => field(f, 'x-error'))).toEqual([
      'malformed fields: a request list element starts with neither { nor x=<deadline>;: "x=soon;{\\"oslo.ve"',
      expect.stringMatching(/^malformed fields: its deadline is \d+ ms ahead, more than any call timeout$/),
      'malformed fields: a request list element starts with neither { nor x=<deadline>;: "not a request"',
    ]);
    // Kept as the stream entry it would have been, with the address's stream as its origin (a replay puts it there).
    expect(dead.every((f) => field(f, 'x-stream') === keys.topicStream)).toBe(true);
    expect([dead[1][0], dead[1][2]]).toEqual(['b', 'x']);
    expect(JSON.parse(JSON.parse(dead[1][1])['oslo.message']).args).toEqual({ id: 2 });
    expect(logger.records.filter((r) => /malformed tidings fields/.test(r.msg))).toHaveLength(3);
    expect((serverT.driver as BaseDriver).deliveryStats.snapshot().find((c) => c.address === topic)?.malformed).toBe(3);
    await server.close();
  });

  it('rolling upgrade: a request an earlier version wrote to the stream (XADD) is still served', async () => {
    const { serverT, clientT } = await transportPair();
    const topic = uniqueName('ru');
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    const server = getRpcServer(serverT, new Target({ topic, server: 's1' }), [{ echo: (_c: unknown, a: unknown) => a }]);
    await server.start();
    // The caller's transport reads its reply list once it made a call.
    const client = getRpcClient(clientT, { topic }, { timeout: 10_000 });
    await client.call({}, 'echo', {});
    const replyQueue = (clientT.driver as unknown as { replyQueue: string }).replyQueue;
    const replies: string[] = [];
    const replyKeyName = `${PREFIX}:reply:{${replyQueue}}`;
    // Its reader gone, the replies stay in its list for this test to read.
    await clientT.cleanup();
    // As an earlier version sends a call: XADD with the deadline field, to the topic's and the server's stream.
    await redis.xadd(keys.topicStream, '*', 'b', request('echo', { old: 1 }, replyQueue), 'x', String(Date.now() + 60_000));
    await redis.xadd(keys.serverStream('s1'), '*', 'b', request('echo', { old: 2 }, replyQueue));
    await waitFor(
      async () => {
        replies.push(...(await redis.lpop(replyKeyName, 10) ?? []));
        return replies.length === 2;
      },
      { timeoutMs: 10_000, message: `both replies pushed (${replies.length})` },
    );
    const results = replies.map((r) => JSON.parse(r).result as { old: number });
    expect(results.map((r) => r.old).sort()).toEqual([1, 2]);
    await server.close();
  });

  it("requests, replies and notifications go in oslo's 1.0 form (no 2.0 envelope); requests in the envelope are served, in either form the same", async () => {
    const { serverT, clientT } = await transportPair();
    const topic = uniqueName('rb');
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    const ran: unknown[] = [];
    const server = getRpcServer(serverT, new Target({ topic, server: 's1' }), [{ echo: (_c: unknown, a: unknown) => a, record: (_c: unknown, a: unknown) => void ran.push(a) }]);
    await server.start();
    const client = getRpcClient(clientT, { topic }, { timeout: 10_000 });
    expect(await client.call({ user: 'u1' }, 'echo', { n: 1 })).toEqual({ n: 1 });
    const replyQueue = (clientT.driver as unknown as { replyQueue: string }).replyQueue;
    await server.stop();
    await server.wait();
    // A cast and a call wait in the list while no server pops it: each the inner message itself.
    await client.cast({ user: 'u1' }, 'record', { id: 1 });
    const pending = client.call({}, 'echo', { n: 2 });
    await waitFor(async () => (await redis.llen(keys.topicList)) === 2, { timeoutMs: 5000, message: 'cast and call in the list' });
    const elements = await redis.lrange(keys.topicList, 0, -1);
    const [cast, call] = elements.map((e) => JSON.parse(e.startsWith('{') ? e : e.slice(e.indexOf(';') + 1)) as Record<string, unknown>);
    expect(cast).not.toHaveProperty(['oslo.version']);
    expect(cast).toMatchObject({ method: 'record', args: { id: 1 }, _context_user: 'u1' });
    expect(cast._unique_id).toMatch(/^[0-9a-f]{32}$/);
    expect(call).toMatchObject({ method: 'echo', args: { n: 2 }, _reply_q: replyQueue });
    // A request in the 2.0 envelope (an earlier version) beside them: all three run, and the replies are bare too.
    await redis.rpush(keys.topicList, request('record', { id: 2 }));
    await server.start();
    expect(await pending).toEqual({ n: 2 });
    await waitFor(() => ran.length === 2, { timeoutMs: 10_000, message: `both casts ran (${ran.length})` });
    expect(ran).toEqual([{ id: 1 }, { id: 2 }]);
    const replyKeyName = `${PREFIX}:reply:{${replyQueue}}`;
    await clientT.cleanup();
    await redis.rpush(keys.topicList, request('echo', { n: 3 }, replyQueue));
    let reply: string[] | null = null;
    await waitFor(async () => (reply = await redis.lpop(replyKeyName, 10)) !== null, { timeoutMs: 10_000, message: 'the reply pushed' });
    const parsed = JSON.parse(reply![0]) as Record<string, unknown>;
    expect(parsed).not.toHaveProperty(['oslo.version']);
    expect(parsed).toMatchObject({ result: { n: 3 }, failure: null, ending: true });
    // Notifications likewise, whatever version the notifier writes (messagingv2 is the 2.0 envelope elsewhere).
    await new Notifier(serverT, { publisherId: 'p', driver: 'messagingv2', topics: [topic] }).info({ user: 'u1' }, 'ev', { id: 4 });
    const [[, fields]] = await redis.xrange(keys.notificationStream('info'), '-', '+');
    const note = JSON.parse(fields[fields.indexOf('b') + 1]) as Record<string, unknown>;
    expect(note).not.toHaveProperty(['oslo.version']);
    expect(note).toMatchObject({ event_type: 'ev', payload: { id: 4 }, _context_user: 'u1' });
    await server.close();
  });

  it('wait_replicas: a request is followed by WAIT like any write (no replica here: the cast fails, non-retriable)', async () => {
    const { serverT, clientT } = await transportPair(`${URL}&wait_replicas=1&wait_timeout_ms=50`);
    const topic = uniqueName('rw');
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    const server = getRpcServer(serverT, new Target({ topic, server: 's1' }), [{ echo: (_c: unknown, a: unknown) => a }]);
    await server.start();
    // A cast resolves on its write (a call resolves on its reply, which may come before WAIT ends).
    const err = await getRpcClient(clientT, { topic }).cast({}, 'echo', { n: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MessageDeliveryFailure);
    expect((err as Error).message).toMatch(/Only 0 of 1 replicas acknowledged/);
    expect((err as MessageDeliveryFailure).retriable).toBe(false);
    // It is on the master all the same (maybe sent), in the list: the server pops it.
    await waitFor(async () => (await redis.llen(keys.topicList)) === 0, { timeoutMs: 10_000, message: 'the server popped the request' });
    await server.close();
  });
});
