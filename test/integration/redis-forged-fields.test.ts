// Stream entries and hashes carrying forged tidings fields, written with raw XADD / HSET on the
// Redis at 127.0.0.1:6379: each entry is dead-lettered with the reason, logged once and counted
// as malformed, never handled nor obeyed; the listener and the server keep serving; a forged
// dead letter is listed as malformed and never replayed; forged fanout registrations touch nothing.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { BaseDriver } from '../../src/contract/base-driver.js';
import { createMemoryLogger } from '../../src/core/logger.js';
import { Target } from '../../src/core/target.js';
import { TopicKeys } from '../../src/drivers/redis/topology.js';
import { getNotificationListener, getNotificationTransport, getRpcTransport, type Context } from '../../src/index.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcServer } from '../../src/rpc/server.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { useRedisTestKeys } from '../support/redis-keys.js';

const PREFIX = `t-redisforged-${randomUUID().slice(0, 8)}`;
const URL = `redis://127.0.0.1:6379/?key_prefix=${PREFIX}&lease_ms=300&sweep_interval_ms=100&max_deliveries=3`;
const { redis, transports } = useRedisTestKeys(PREFIX);
const TEN_YEARS = 10 * 365 * 86_400_000;
const FORGED_LINE = 'Dead-lettering a stream entry with malformed tidings fields (not handled)';

const notification = (id: number) =>
  JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ message_id: randomUUID(), publisher_id: 'p', event_type: 'ev', priority: 'INFO', payload: { id }, timestamp: '2026-11-25 00:00:00.000000', _context: {} }) });
const cast = (id: number) => JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ method: 'record', args: { id }, namespace: null, version: '1.0', _unique_id: randomUUID().replaceAll('-', '') }) });

/** The dead-letter stream's entries as [x-error, payload id, fields]. */
async function deadLetters(keys: TopicKeys): Promise<Array<{ error: string; fields: string[] }>> {
  const entries = (await redis.xrange(keys.deadLetters, '-', '+')) as [string, string[]][];
  return entries.map(([, fields]) => ({ error: fields[fields.lastIndexOf('x-error') + 1], fields }));
}

describe('Redis: forged tidings fields', () => {
  it('notification entries with fields tidings never writes are dead-lettered, logged once and counted, never handled', { timeout: 30_000 }, async () => {
    const logger = createMemoryLogger();
    const t = await getNotificationTransport(URL, { logger });
    transports.push(t);
    const topic = uniqueName('nf');
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    const stream = keys.notificationStream('info');
    const handled: number[] = [];
    const l = getNotificationListener(t, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: number }) => void handled.push(payload.id) }], { pool: 'p', allowRequeue: true });
    await l.start();
    // A dead letter's metadata smuggled in front, a deadline on a notification, a second body, no body.
    await redis.xadd(stream, '*', 'b', notification(1), 'x-stream', `${PREFIX}-elsewhere`, 'x-deliveries', '1');
    await redis.xadd(stream, '*', 'b', notification(2), 'x', String(Date.now() + 60_000));
    await redis.xadd(stream, '*', 'b', notification(3), 'b', notification(33));
    await redis.xadd(stream, '*', 'payload', notification(4));
    await redis.xadd(stream, '*', 'b', notification(5));
    await waitFor(async () => handled.includes(5) && (await redis.xlen(keys.deadLetters)) === 4, { timeoutMs: 10_000, message: 'the genuine entry handled and the forged ones dead-lettered' });
    expect(handled).toEqual([5]);
    const letters = await deadLetters(keys);
    expect(letters.map((d) => d.error)).toEqual([
      'malformed fields: unexpected field "x-stream"',
      'malformed fields: unexpected field "x"',
      'malformed fields: unexpected field "b"',
      'malformed fields: unexpected field "payload"',
    ]);
    // Each logged once, counted as malformed on its address and pool.
    expect(logger.records.filter((r) => r.msg === FORGED_LINE)).toHaveLength(4);
    const stats = (t.driver as BaseDriver).deliveryStats.snapshot().find((c) => c.address === `${topic}.info` && c.pool === 'p');
    expect(stats?.malformed).toBe(4);

    // The smuggled x-stream is original content: listed under the real address, replayed to the real stream.
    const store = (t.driver as BaseDriver).deadLetters!();
    const listed = await store.list({ address: `${topic}.info` });
    expect(listed).toHaveLength(4);
    expect(listed[0].address).toBe(`${topic}.info`);
    expect(await store.replay({ address: `${topic}.info`, ids: [listed[0].id] })).toBe(1);
    expect(await redis.exists(`${PREFIX}-elsewhere`)).toBe(0);
    // Replayed with the forged field, it is malformed again: dead-lettered, not handled.
    await waitFor(async () => (await redis.xlen(keys.deadLetters)) === 4 && logger.records.filter((r) => r.msg === FORGED_LINE).length === 5, { timeoutMs: 10_000, message: 'the replayed entry dead-lettered again' });
    expect(handled).toEqual([5]);
    await l.stop();
    await l.wait();
  });

  it('RPC requests with a forged deadline are dead-lettered, never run; the server keeps serving', { timeout: 30_000 }, async () => {
    const logger = createMemoryLogger();
    const serverT = await getRpcTransport(URL, { logger });
    const clientT = await getRpcTransport(URL);
    transports.push(serverT, clientT);
    const topic = uniqueName('rf');
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    const ran: number[] = [];
    const server = getRpcServer(serverT, new Target({ topic, server: 's1' }), [{ record: (_c: unknown, args: { id: number }) => (ran.push(args.id), args.id) }]);
    await server.start();
    // Not a number, negative, ten years ahead (more than any timer can wait), twice.
    await redis.xadd(keys.topicStream, '*', 'b', cast(1), 'x', 'soon');
    await redis.xadd(keys.topicStream, '*', 'b', cast(2), 'x', '-5');
    await redis.xadd(keys.topicStream, '*', 'b', cast(3), 'x', String(Date.now() + TEN_YEARS));
    await redis.xadd(keys.topicStream, '*', 'b', cast(4), 'x', String(Date.now() + 60_000), 'x', String(Date.now() + 60_000));
    await redis.xadd(keys.topicStream, '*', 'b', cast(5), 'x', String(Date.now() + 60_000));
    const client = getRpcClient(clientT, { topic }, { timeout: 10_000 });
    await expect(client.call({}, 'record', { id: 6 })).resolves.toBe(6);
    await waitFor(async () => ran.includes(5) && (await redis.xlen(keys.deadLetters)) === 4, { timeoutMs: 10_000, message: 'the genuine request run and the forged ones dead-lettered' });
    expect(ran.sort()).toEqual([5, 6]);
    const errors = (await deadLetters(keys)).map((d) => d.error);
    expect(errors[0]).toBe('malformed fields: field x is not a deadline: "soon"');
    expect(errors[1]).toBe('malformed fields: field x is not a deadline: "-5"');
    expect(errors[2]).toMatch(/^malformed fields: field x is \d+ ms ahead, more than any call timeout$/);
    expect(errors[3]).toBe('malformed fields: unexpected field "x"');
    expect(logger.records.filter((r) => r.msg === FORGED_LINE)).toHaveLength(4);
    expect((serverT.driver as BaseDriver).deliveryStats.snapshot().find((c) => c.address === topic)?.malformed).toBe(4);
    await server.stop();
    await server.wait();
  });

  it('a dead letter with a forged count or time is listed as malformed and never replayed', async () => {
    const t = await getNotificationTransport(URL);
    transports.push(t);
    const topic = uniqueName('dl');
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    const stream = keys.notificationStream('info');
    const meta = (deliveries: string, time: string) => ['x-stream', stream, 'x-group', 'pool:p', 'x-id', '1-1', 'x-consumer', 'c', 'x-deliveries', deliveries, 'x-error', 'boom', 'x-time', time];
    await redis.xadd(keys.deadLetters, '*', 'b', notification(1), ...meta('3', '99999999999999999999'));
    await redis.xadd(keys.deadLetters, '*', 'b', notification(2), ...meta('NaN', String(Date.now())));
    await redis.xadd(keys.deadLetters, '*', 'b', notification(3), ...meta('3', String(Date.now())));
    const store = (t.driver as BaseDriver).deadLetters!();
    const listed = await store.list({ address: `${topic}.info` });
    expect(listed.map((l) => [l.error, l.deliveries])).toEqual([
      ['malformed dead letter: x-time is not a time: "99999999999999999999"', 3],
      ['malformed dead letter: x-deliveries is not a count: "NaN"', 0],
      ['boom', 3],
    ]);
    expect(listed[0].deadAt).toBe(new Date(0).toISOString());
    expect(await store.replay({ address: `${topic}.info` })).toBe(1);
    expect(await redis.xlen(stream)).toBe(1);
    expect(await redis.xlen(keys.deadLetters)).toBe(2);
  });

  it('forged fanout registrations (no expiry, a key outside the topic) are forgotten and the keys they name untouched', async () => {
    const serverT = await getRpcTransport(URL);
    const clientT = await getRpcTransport(URL);
    transports.push(serverT, clientT);
    const topic = uniqueName('ff');
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    const victim = `${PREFIX}-victim`;
    await redis.xadd(victim, '*', 'b', 'keep me');
    const ran: number[] = [];
    const server = getRpcServer(serverT, new Target({ topic, server: 's1' }), [{ record: (_c: unknown, args: { id: number }) => void ran.push(args.id) }]);
    await server.start();
    await redis.hset(keys.servers, victim, '0', keys.inbox('forged'), 'tomorrow');
    await redis.hset(keys.serverStreams, victim, '0', keys.serverStream('forged'), 'never');
    try {
      await getRpcClient(clientT, { topic, fanout: true }).cast({}, 'record', { id: 1 });
      await waitFor(() => ran.includes(1), { timeoutMs: 10_000, message: 'the fanout cast handled' });
      await waitFor(async () => (await redis.hlen(keys.serverStreams)) === 1, { timeoutMs: 10_000, message: 'the sweep dropped the forged named-server fields' });
      expect(await redis.hkeys(keys.servers)).not.toContain(victim);
      expect(await redis.hkeys(keys.servers)).not.toContain(keys.inbox('forged'));
      expect(await redis.xlen(victim)).toBe(1);
    } finally {
      await redis.unlink(victim);
    }
    await server.stop();
    await server.wait();
  });
});
