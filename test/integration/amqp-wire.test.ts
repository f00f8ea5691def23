// Driver-level wire checks against a real RabbitMQ: declare arguments per oslo-wire.md §1.2,
// message properties (§1.4) and bodies (§1.5-1.7, §1.10), read back with a raw amqplib consumer.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import type { Channel, ConsumeMessage } from 'amqplib';
import { describe, expect, it } from 'vitest';
import type { RpcIncomingMessage } from '../../src/contract/incoming-message.js';
import type { AmqpDriver } from '../../src/drivers/amqp/index.js';
import { silentLogger } from '../../src/core/logger.js';
import { Target } from '../../src/core/target.js';
import { makeAmqpDriver, useAmqpDrivers } from '../support/amqp-driver.js';
import { listRabbitQueues, queueArgs } from '../support/rabbit-admin.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';

const run = promisify(execFile);
const PREFIX = uniqueName('t-amqpwire');

const makeDriver = (options: Record<string, unknown> = {}, exchange = `${PREFIX}-x`): AmqpDriver => makeAmqpDriver(exchange, options, silentLogger);

const listQueues = () => listRabbitQueues((name) => name.startsWith(PREFIX) || name.startsWith('reply_'));

async function listExchanges(): Promise<Map<string, { name: string; type: string; durable: boolean; auto_delete: boolean }>> {
  const { stdout } = await run('rabbitmqctl', ['-q', 'list_exchanges', 'name', 'type', 'durable', 'auto_delete', '--formatter', 'json'], { timeout: 60_000 });
  return new Map((JSON.parse(stdout) as Array<{ name: string; type: string; durable: boolean; auto_delete: boolean }>).filter((x) => x.name.startsWith(PREFIX)).map((x) => [x.name, x]));
}

const args = queueArgs;

/** A raw consumer on a fresh queue bound to `exchange` with `key`. */
async function tap(ch: Channel, exchange: string, type: 'topic' | 'fanout', key: string, exchangeOptions: { durable: boolean; autoDelete: boolean }): Promise<ConsumeMessage[]> {
  await ch.assertExchange(exchange, type, exchangeOptions);
  const { queue } = await ch.assertQueue(`${PREFIX}-tap-${Math.random().toString(16).slice(2)}`, { exclusive: true });
  await ch.bindQueue(queue, exchange, key);
  const got: ConsumeMessage[] = [];
  await ch.consume(queue, (m) => m && got.push(m), { noAck: true });
  return got;
}

const inner = (m: { content: Buffer }) => {
  const body = JSON.parse(m.content.toString('utf8'));
  expect(Object.keys(body).sort()).toEqual(['oslo.message', 'oslo.version']);
  expect(body['oslo.version']).toBe('2.0');
  return JSON.parse(body['oslo.message']);
};

describe('amqp driver wire format (RabbitMQ)', () => {
  const amqp = useAmqpDrivers(PREFIX);
  const { drivers, listeners } = amqp;

  it('declares the RPC server topology exactly as oslo (default options)', async () => {
    const driver = makeDriver();
    drivers.push(driver);
    const topic = `${PREFIX}-rpc`;
    const listener = await driver.listen(new Target({ topic, server: 's1' }));
    listeners.push(listener);
    listener.start(() => {});
    await driver.send(new Target({ topic }), {}, { method: 'noop', args: {} }, { waitForReply: true, timeout: 300 }).catch(() => undefined);
    const queues = await listQueues();
    const exchanges = await listExchanges();
    expect(exchanges.get(`${PREFIX}-x`)).toMatchObject({ type: 'topic', durable: false, auto_delete: false });
    expect(exchanges.get(`${topic}_fanout`)).toMatchObject({ type: 'fanout', durable: false, auto_delete: true });
    for (const name of [topic, `${topic}.s1`]) {
      expect(queues.get(name)).toMatchObject({ durable: false, auto_delete: false });
      expect(args(queues.get(name))).toEqual({});
    }
    const fanoutQueue = [...queues.keys()].find((n) => n.startsWith(`${topic}_fanout_`));
    expect(fanoutQueue).toMatch(/_fanout_[0-9a-f]{32}$/);
    expect(queues.get(fanoutQueue!)).toMatchObject({ durable: false, auto_delete: false });
    expect(args(queues.get(fanoutQueue!))).toEqual({ 'x-expires': 1_800_000 });
    const reply = queues.get(driver.replyQueue!);
    expect(driver.replyQueue).toMatch(/^reply_[0-9a-f]{32}$/);
    expect(reply).toMatchObject({ durable: false, auto_delete: false });
    expect(args(reply)).toEqual({ 'x-expires': 1_800_000 });
    await listener.cleanup();
    // oslo deletes its private fanout queue on a clean close.
    expect((await listQueues()).has(fanoutQueue!)).toBe(false);
  });

  it('declares durable / quorum / ttl variants when the options say so', async () => {
    const exchange = `${PREFIX}-qx`;
    const driver = makeDriver({ quorumQueue: true, quorumDeliveryLimit: 5, transientQueuesTtl: 60_000 }, exchange);
    drivers.push(driver);
    const topic = `${PREFIX}-quorum`;
    const listener = await driver.listen(new Target({ topic, server: 's1' }));
    listeners.push(listener);
    await driver.sendNotification(new Target({ topic: `${PREFIX}-qn.info` }), {}, { event_type: 'e', priority: 'INFO', payload: 1 });
    const queues = await listQueues();
    expect(queues.get(topic)).toMatchObject({ durable: true });
    expect(args(queues.get(topic))).toEqual({ 'x-queue-type': 'quorum', 'x-delivery-limit': 5 });
    expect(args(queues.get(`${PREFIX}-qn.info`))).toEqual({ 'x-queue-type': 'quorum', 'x-delivery-limit': 5 });
    const fanoutQueue = [...queues.keys()].find((n) => n.startsWith(`${topic}_fanout_`));
    expect(args(queues.get(fanoutQueue!))).toEqual({ 'x-expires': 60_000 });
    expect((await listExchanges()).get(exchange)).toMatchObject({ durable: true });
    await listener.cleanup();
  });

  it('fails with InvalidArgument naming the queue and argument on a declare mismatch', async () => {
    const topic = `${PREFIX}-mismatch`;
    await amqp.ch.assertQueue(topic, { durable: true });
    const driver = makeDriver();
    drivers.push(driver);
    const err = await driver.listen(new Target({ topic, server: 's1' })).catch((e) => e);
    expect(err).toMatchObject({ name: 'InvalidArgument' });
    expect(err.message).toContain(topic);
    expect(err.message).toMatch(/durable/);
  });

  it('publishes call requests, casts and fanouts with oslo properties and bodies', async () => {
    const driver = makeDriver();
    drivers.push(driver);
    const topic = `${PREFIX}-props`;
    const onTopic = await tap(amqp.ch, `${PREFIX}-x`, 'topic', `${topic}.#`, { durable: false, autoDelete: false });
    const onTopic2 = await tap(amqp.ch, `${PREFIX}-x`, 'topic', topic, { durable: false, autoDelete: false });
    const onFanout = await tap(amqp.ch, `${topic}_fanout`, 'fanout', '', { durable: false, autoDelete: true });
    const ctx = { user_id: 'u1', request_id: 'req-1' };
    const call = driver.send(new Target({ topic, version: '1.2' }), ctx, { method: 'echo', args: { x: [1, 'a'] }, version: '1.2' }, { waitForReply: true, timeout: 5000, callMonitorTimeout: 4000 });
    await driver.send(new Target({ topic, server: 's1' }), ctx, { method: 'cast1', args: {} });
    await driver.send(new Target({ topic, fanout: true }), ctx, { method: 'fan', args: {} });
    await waitFor(() => onTopic2.length >= 1 && onTopic.length >= 1 && onFanout.length >= 1);

    const req = onTopic2[0];
    expect(req.fields).toMatchObject({ exchange: `${PREFIX}-x`, routingKey: topic });
    expect(req.properties).toMatchObject({ contentType: 'application/json', contentEncoding: 'utf-8', deliveryMode: 2, priority: 0, expiration: '5000' });
    expect(req.properties.headers).toEqual({});
    expect(req.properties.replyTo).toBeUndefined();
    expect(req.properties.correlationId).toBeUndefined();
    const r = inner(req);
    expect(Object.keys(r)).toEqual(['method', 'args', 'version', '_msg_id', '_reply_q', '_timeout', '_unique_id', '_context_user_id', '_context_request_id']);
    expect(r).toMatchObject({ method: 'echo', args: { x: [1, 'a'] }, version: '1.2', _reply_q: driver.replyQueue, _timeout: 4, _context_user_id: 'u1' });
    expect(r._msg_id).toMatch(/^[0-9a-f]{32}$/);
    expect(r._unique_id).toMatch(/^[0-9a-f]{32}$/);

    const cast = onTopic.find((m) => m.fields.routingKey === `${topic}.s1`)!;
    expect(cast.properties.expiration).toBeUndefined();
    expect(cast.properties.deliveryMode).toBe(2);
    const c = inner(cast);
    expect(c).not.toHaveProperty('_msg_id');
    expect(c).not.toHaveProperty('_reply_q');
    expect(c).not.toHaveProperty('_timeout');
    expect(c._unique_id).toMatch(/^[0-9a-f]{32}$/);

    const fan = onFanout[0];
    expect(fan.fields).toMatchObject({ exchange: `${topic}_fanout`, routingKey: '' });
    expect(fan.properties.expiration).toBeUndefined();
    expect(inner(fan).method).toBe('fan');

    // Answer the call as a Python server would, through the default exchange.
    amqp.ch.publish('', r._reply_q, Buffer.from(JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ result: { ok: 1 }, failure: null, ending: true, _msg_id: r._msg_id, _unique_id: 'ab' }) })), {
      contentType: 'application/json',
    });
    await expect(call).resolves.toEqual({ ok: 1 });
  });

  it('replies with result, failure (JSON string), ending, _msg_id, _unique_id; mandatory to the default exchange', async () => {
    const driver = makeDriver();
    drivers.push(driver);
    const topic = `${PREFIX}-reply`;
    const listener = await driver.listen(new Target({ topic, server: 's1' }));
    listeners.push(listener);
    listener.start(async (msgs) => {
      for (const m of msgs as RpcIncomingMessage[]) {
        if (m.request.method === 'boom') await m.reply({ failure: new TypeError('bad thing') });
        else {
          await m.heartbeat();
          await m.reply({ result: { ctx: m.ctx, cm: m.callMonitorTimeout } });
        }
      }
    });
    // Shaped as reply queues are (reply_<32 hex>): a server replies to nothing else.
    const { queue } = await amqp.ch.assertQueue(`reply_${randomUUID().replace(/-/g, '')}`, { exclusive: true });
    const replies: ConsumeMessage[] = [];
    await amqp.ch.consume(queue, (m) => m && replies.push(m), { noAck: true });
    const request = (method: string, id: string) =>
      Buffer.from(JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ method, args: {}, _msg_id: id, _reply_q: queue, _timeout: 6, _unique_id: id, _context_user: 'u' }) }));
    amqp.ch.publish(`${PREFIX}-x`, topic, request('ok', 'a'.repeat(32)), { contentType: 'application/json' });
    amqp.ch.publish(`${PREFIX}-x`, topic, request('boom', 'b'.repeat(32)), { contentType: 'application/json' });
    await waitFor(() => replies.length >= 3);
    const bodies = replies.map(inner);
    for (const m of replies) {
      expect(m.fields.exchange).toBe('');
      expect(m.properties).toMatchObject({ contentType: 'application/json', contentEncoding: 'utf-8', deliveryMode: 2, priority: 0 });
      expect(m.properties.expiration).toBeUndefined();
    }
    for (const b of bodies) expect(Object.keys(b).sort()).toEqual(['_msg_id', '_unique_id', 'ending', 'failure', 'result']);
    expect(bodies[0]).toMatchObject({ result: null, failure: null, ending: false, _msg_id: 'a'.repeat(32) });
    expect(bodies[1]).toMatchObject({ result: { ctx: { user: 'u', client_timeout: 6 }, cm: 6000 }, failure: null, ending: true });
    expect(bodies[2]).toMatchObject({ result: null, ending: true, _msg_id: 'b'.repeat(32) });
    expect(typeof bodies[2].failure).toBe('string');
    expect(JSON.parse(bodies[2].failure)).toMatchObject({ class: 'TypeError', module: 'builtins', message: 'bad thing', args: ['bad thing'], kwargs: {} });
  });

  it('publishes notifications to <topic>.<priority>, declares the default queue, v2 enveloped and v1 raw', async () => {
    const driver = makeDriver();
    drivers.push(driver);
    const topic = `${PREFIX}-notif.info`;
    const n = { message_id: 'aadd32fb-a4cc-4c1b-9f58-111111111111', publisher_id: 'pub.host', event_type: 'thing.create', priority: 'INFO', payload: { k: 'v' }, timestamp: '2026-01-01 00:00:00.000001' };
    await driver.sendNotification(new Target({ topic }), { user_id: 'u' }, n, { version: 2.0 });
    await driver.sendNotification(new Target({ topic }), { user_id: 'u' }, n, { version: 1.0 });
    const queues = await listQueues();
    expect(queues.get(topic)).toMatchObject({ durable: false, auto_delete: false });
    expect(args(queues.get(topic))).toEqual({});
    const m1 = await amqp.ch.get(topic, { noAck: true });
    const m2 = await amqp.ch.get(topic, { noAck: true });
    expect(m1 && m2).toBeTruthy();
    if (!m1 || !m2) return;
    expect(m1.fields).toMatchObject({ exchange: `${PREFIX}-x`, routingKey: topic });
    expect(m1.properties).toMatchObject({ contentType: 'application/json', contentEncoding: 'utf-8', deliveryMode: 2 });
    expect(m1.properties.expiration).toBeUndefined();
    const v2 = inner(m1);
    expect(v2).toMatchObject({ ...n, _context_user_id: 'u' });
    expect(v2._unique_id).toMatch(/^[0-9a-f]{32}$/);
    const v1 = JSON.parse(m2.content.toString());
    expect(v1).not.toHaveProperty('oslo.version');
    expect(v1).toMatchObject({ ...n, _context_user_id: 'u' });
  });
});
