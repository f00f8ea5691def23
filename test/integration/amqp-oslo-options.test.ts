// oslo [oslo_messaging_rabbit] options that change declarations or bytes on the wire, against the
// shared RabbitMQ: transient quorum queues, the queue manager's names, kombu compression.
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { deflateSync, inflateSync } from 'node:zlib';
import type { ConsumeMessage } from 'amqplib';
import { describe, expect, it } from 'vitest';
import type { RpcIncomingMessage } from '../../src/contract/incoming-message.js';
import { createMemoryLogger, silentLogger, type Logger } from '../../src/core/logger.js';
import { Target } from '../../src/core/target.js';
import type { AmqpDriver } from '../../src/drivers/amqp/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { collectNotifications, makeAmqpDriver, openRawChannel, sampleNotification, useAmqpDrivers } from '../support/amqp-driver.js';

const run = promisify(execFile);
const PREFIX = uniqueName('t-oslopts');
const EXCHANGE = `${PREFIX}-x`;

interface QueueInfo {
  name: string;
  arguments: Array<[string, string, unknown]> | Record<string, unknown>;
  durable: boolean;
}

/** Durability and declare arguments of the queues whose names start with `prefix`, through rabbitmqctl (AMQP cannot read arguments back). */
async function queueInfo(prefix: string): Promise<Map<string, { durable: boolean; args: Record<string, unknown> }>> {
  const { stdout } = await run('rabbitmqctl', ['-q', 'list_queues', 'name', 'arguments', 'durable', '--formatter', 'json'], { timeout: 60_000 });
  const out = new Map<string, { durable: boolean; args: Record<string, unknown> }>();
  for (const q of JSON.parse(stdout) as QueueInfo[]) {
    if (!q.name.startsWith(prefix)) continue;
    const args = Array.isArray(q.arguments) ? Object.fromEntries(q.arguments.map(([k, , v]) => [k, v])) : q.arguments;
    out.set(q.name, { durable: q.durable, args });
  }
  return out;
}


describe('oslo rabbit options on RabbitMQ', () => {
  const amqp = useAmqpDrivers(PREFIX);
  const { drivers, listeners } = amqp;
  const makeDriver = (options: Record<string, unknown> = {}, logger: Logger = silentLogger): AmqpDriver => {
    const d = makeAmqpDriver(EXCHANGE, options, logger);
    drivers.push(d);
    return d;
  };

  /** An RPC server on `topic` answering every call with `{ echo: args }`. */
  async function echoServer(driver: AmqpDriver, topic: string, seen: string[] = []): Promise<void> {
    const listener = await driver.listen(new Target({ topic, server: 's1' }));
    listeners.push(listener);
    listener.start(async (msgs) => {
      for (const m of msgs as RpcIncomingMessage[]) {
        seen.push(m.request.method);
        if (m.msgId !== undefined) await m.reply({ result: { echo: m.request.args } });
      }
    });
  }

  const call = (driver: AmqpDriver, topic: string, args: Record<string, unknown>) =>
    driver.send(new Target({ topic }), {}, { method: 'echo', args }, { waitForReply: true, timeout: 10_000 });

  it('rabbit_transient_quorum_queue: reply and fanout queues are durable quorum queues with x-expires, the fanout exchange durable; calls and fanout casts flow', async () => {
    const driver = makeDriver({ transientQuorumQueue: true, quorumDeliveryLimit: 7, transientQueuesTtl: 120_000 });
    const topic = `${PREFIX}-tq`;
    const seen: string[] = [];
    await echoServer(driver, topic, seen);
    await expect(call(driver, topic, { a: 1 })).resolves.toEqual({ echo: { a: 1 } });
    await driver.send(new Target({ topic, fanout: true }), {}, { method: 'fan', args: {} });
    await waitFor(() => seen.includes('fan'), { timeoutMs: 10_000, message: 'the fanout cast reached the server' });
    const [info, replies] = await Promise.all([queueInfo(topic), queueInfo(driver.replyQueue!)]);
    const fanoutQueue = [...info.keys()].find((n) => n.startsWith(`${topic}_fanout_`));
    const transient = { durable: true, args: { 'x-queue-type': 'quorum', 'x-delivery-limit': 7, 'x-expires': 120_000 } };
    expect(replies.get(driver.replyQueue!)).toEqual(transient);
    expect(info.get(fanoutQueue!)).toEqual(transient);
    // rabbit_quorum_queue is off: the topic queue stays classic.
    expect(info.get(topic)).toEqual({ durable: false, args: {} });
    // The fanout exchange is durable: oslo's 14.0.3 declaration (non-durable) is refused with 406.
    const { raw, ch } = await openRawChannel();
    try {
      ch.on('error', () => undefined);
      await expect(ch.assertExchange(`${topic}_fanout`, 'fanout', { durable: false, autoDelete: true })).rejects.toThrow(/PRECONDITION_FAILED.*durable/);
    } finally {
      await raw.close().catch(() => undefined);
    }
  });

  it('use_queue_manager: reply and fanout queues are named <hostname>:<processname>:<n>, n unique across transports, and servers reply to them', async () => {
    const host = `${PREFIX}-host`;
    const proc = 'tidings-test';
    const counterFile = `/dev/shm/${host}_${proc}_qmanager`;
    try {
      const a = makeDriver({ useQueueManager: true, hostname: host, processname: proc });
      const b = makeDriver({ useQueueManager: true, hostname: host, processname: proc });
      const topic = `${PREFIX}-qm`;
      await echoServer(a, topic);
      await expect(call(a, topic, { n: 1 })).resolves.toEqual({ echo: { n: 1 } });
      await expect(call(b, topic, { n: 2 })).resolves.toEqual({ echo: { n: 2 } });
      expect([a.replyQueue, b.replyQueue]).toEqual([`reply_${host}:${proc}:2`, `reply_${host}:${proc}:3`]);
      // The server's private fanout queue took the first name (checkQueue fails on a missing queue).
      await expect(amqp.ch.checkQueue(`${topic}_fanout_${host}:${proc}:1`)).resolves.toMatchObject({ consumerCount: 1 });
    } finally {
      rmSync(counterFile, { force: true });
    }
  });

  it('kombu_compression=gzip: bodies deflated with kombu\'s compression header; read back by listeners and callers without the option', async () => {
    const zipped = makeDriver({ kombuCompression: 'gzip' });
    const plain = makeDriver();
    const topic = `${PREFIX}-gz`;
    // The wire: a raw tap on the notification address.
    const { queue: tapQueue } = await amqp.ch.assertQueue(`${PREFIX}-tap`, { exclusive: true });
    await amqp.ch.assertExchange(EXCHANGE, 'topic', { durable: false, autoDelete: false });
    await amqp.ch.bindQueue(tapQueue, EXCHANGE, `${topic}.info`);
    const tapped: ConsumeMessage[] = [];
    await amqp.ch.consume(tapQueue, (m) => m && tapped.push(m), { noAck: true });
    const { got } = await collectNotifications(plain, topic, listeners);
    await zipped.sendNotification(new Target({ topic: `${topic}.info` }), {}, sampleNotification(1));
    await waitFor(() => tapped.length === 1 && got.length === 1, { timeoutMs: 10_000, message: 'the compressed notification tapped and handled' });
    expect(tapped[0].properties.headers).toEqual({ compression: 'application/x-gzip' });
    expect(tapped[0].properties).toMatchObject({ contentType: 'application/json', contentEncoding: 'utf-8' });
    expect(JSON.parse(inflateSync(tapped[0].content).toString('utf8'))).toHaveProperty(['oslo.version'], '2.0');
    expect(got[0].notification.payload).toEqual({ i: 1 });
    // RPC both ways: compressed request to a plain server, compressed reply to a plain caller.
    await echoServer(plain, `${topic}-p`);
    await expect(call(zipped, `${topic}-p`, { x: 'y'.repeat(1000) })).resolves.toEqual({ echo: { x: 'y'.repeat(1000) } });
    await echoServer(zipped, `${topic}-z`);
    await expect(call(plain, `${topic}-z`, { z: 2 })).resolves.toEqual({ echo: { z: 2 } });
  });

  it('rejects as malformed a compressed body inflating past max_message_bytes, an unknown codec or a corrupt one, and goes on', async () => {
    const logger = createMemoryLogger();
    const driver = makeDriver({ maxMessageBytes: 4096 }, logger);
    const topic = `${PREFIX}-bomb`;
    const key = `${topic}.info`;
    const { listener, got } = await collectNotifications(driver, topic, listeners);
    const envelope = (payload: unknown) => Buffer.from(JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ ...sampleNotification(0), payload }) }));
    const gz = { headers: { compression: 'application/x-gzip' } };
    // 1 MiB of padding deflates to about 1 KiB: small on the wire, over the limit inflated.
    amqp.ch.publish(EXCHANGE, key, deflateSync(envelope('p'.repeat(1 << 20))), gz);
    amqp.ch.publish(EXCHANGE, key, deflateSync(envelope(1)), { headers: { compression: 'application/x-bz2' } });
    amqp.ch.publish(EXCHANGE, key, Buffer.from('not deflate'), gz);
    amqp.ch.publish(EXCHANGE, key, deflateSync(envelope('ok')), gz);
    await waitFor(() => got.length === 1, { timeoutMs: 10_000, message: 'the valid compressed notification handled' });
    expect(got[0].notification.payload).toBe('ok');
    const rejected = () => logger.records.filter((r) => r.msg.startsWith('Rejecting a malformed')).map((r) => String(r.fields.reason));
    await waitFor(() => rejected().length === 3, { timeoutMs: 10_000, message: 'three malformed compressed messages rejected' });
    expect(rejected().join('\n')).toMatch(/inflates past max_message_bytes \(4096\)[\s\S]*application\/x-bz2[\s\S]*does not inflate/);
    await listener.stop();
    expect((await amqp.ch.checkQueue(key)).messageCount).toBe(0);
  });
});
