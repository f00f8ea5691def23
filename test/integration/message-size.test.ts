// max_message_bytes on real brokers (RabbitMQ, Redis): a 20 MiB notification fails at once, typed,
// and nothing is published; an oversized or too-deep raw body is rejected and the listener goes on.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from '../../src/contract/incoming-message.js';
import type { RedisDriver } from '../../src/drivers/redis/index.js';
import { TopicKeys } from '../../src/drivers/redis/topology.js';
import { InvalidArgument } from '../../src/core/errors.js';
import { createMemoryLogger, type MemoryLogger } from '../../src/core/logger.js';
import { Target } from '../../src/core/target.js';
import { getNotificationTransport } from '../../src/transport.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { collectNotifications, makeAmqpDriver, sampleNotification, useAmqpDrivers } from '../support/amqp-driver.js';
import { useRedisTestKeys, xaddRaw } from '../support/redis-keys.js';

const MIB = 1024 * 1024;
const huge = () => ({ ...sampleNotification(0), payload: { blob: 'x'.repeat(20 * MIB) } });
/** A raw enveloped notification body of about `bytes` bytes. */
const rawBody = (bytes: number) => JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ ...sampleNotification(9), payload: { blob: 'y'.repeat(bytes) } }) });
const DEEP = '['.repeat(100_000);
const malformedLines = (logger: MemoryLogger) => logger.records.filter((r) => r.msg.startsWith('Rejecting a malformed'));

async function sendFailsAtOnce(send: () => Promise<void>): Promise<void> {
  const started = Date.now();
  const err = await send().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InvalidArgument);
  expect((err as InvalidArgument).field).toBe('message');
  expect((err as InvalidArgument).message).toMatch(/at most 16777216 bytes.*"209\d{5} bytes"/);
  // Serialising 20 MiB twice (payload, then envelope) takes ~0.5 s alone and 2–3 s on a loaded
  // 2-core machine; before the limit such a send hung for over 60 s.
  expect(Date.now() - started).toBeLessThan(6000);
}

describe('max_message_bytes on RabbitMQ', () => {
  const PREFIX = uniqueName('t-amqpsize');
  const EXCHANGE = `${PREFIX}-x`;
  const amqp = useAmqpDrivers(PREFIX);
  const { drivers, listeners } = amqp;

  it('a 20 MiB notification fails at once with InvalidArgument and nothing is published; oversized and too-deep raw bodies are rejected and the listener goes on', async () => {
    const logger = createMemoryLogger();
    const driver = makeAmqpDriver(EXCHANGE, {}, logger);
    drivers.push(driver);
    const topic = `${PREFIX}-n`;
    const key = `${topic}.info`;
    const { got } = await collectNotifications(driver, topic, listeners);
    await sendFailsAtOnce(() => driver.sendNotification(new Target({ topic: key }), {}, huge()));
    // The queue is FIFO: had the big one been published, it would come (or be rejected) first.
    await driver.sendNotification(new Target({ topic: key }), {}, sampleNotification(1));
    await waitFor(() => got.length === 1, { timeoutMs: 10_000 });
    expect(malformedLines(logger)).toHaveLength(0);

    amqp.ch.publish(EXCHANGE, key, Buffer.from(rawBody(17 * MIB)));
    amqp.ch.publish(EXCHANGE, key, Buffer.from(DEEP));
    await driver.sendNotification(new Target({ topic: key }), {}, sampleNotification(2));
    await waitFor(() => got.length === 2, { timeoutMs: 20_000 });
    expect(got.map((m) => (m.notification.payload as { i: number }).i)).toEqual([1, 2]);
    await waitFor(() => malformedLines(logger).length === 2, { timeoutMs: 5000 });
    expect(malformedLines(logger)[0].fields.reason).toMatch(/over max_message_bytes/);
    expect((await amqp.ch.checkQueue(key)).messageCount).toBe(0);
  });
});

describe('max_message_bytes on Redis', () => {
  const PREFIX = `t-redissize-${randomUUID().slice(0, 8)}`;
  const { redis, transports } = useRedisTestKeys(PREFIX);

  it('a 20 MiB notification fails at once and adds nothing to the stream; oversized and too-deep raw entries are dead-lettered and the listener goes on', async () => {
    const logger = createMemoryLogger();
    const t = await getNotificationTransport(`redis://127.0.0.1:6379/?key_prefix=${PREFIX}`, { logger });
    transports.push(t);
    const driver = t.driver as RedisDriver;
    const topic = uniqueName('size');
    const keys = new TopicKeys(PREFIX, 'openstack', topic);
    const stream = keys.notificationStream('info');
    const listener = await driver.listenForNotifications([[new Target({ topic }), 'info']]);
    const got: IncomingMessage[] = [];
    listener.start(async (msgs) => {
      for (const m of msgs) {
        got.push(m);
        await m.acknowledge();
      }
    });
    try {
      const before = await redis.xlen(stream);
      await sendFailsAtOnce(() => driver.sendNotification(new Target({ topic: `${topic}.info` }), {}, huge()));
      expect(await redis.xlen(stream)).toBe(before);

      await xaddRaw(stream, { b: rawBody(17 * MIB) });
      await xaddRaw(stream, { b: DEEP });
      await driver.sendNotification(new Target({ topic: `${topic}.info` }), {}, sampleNotification(2));
      await waitFor(() => got.length === 1, { timeoutMs: 20_000 });
      expect((got[0].notification.payload as { i: number }).i).toBe(2);
      await waitFor(async () => (await redis.xlen(keys.deadLetters)) === 2, { timeoutMs: 10_000, message: 'two dead letters' });
      expect(malformedLines(logger)[0].fields.reason).toMatch(/over max_message_bytes/);
    } finally {
      await listener.cleanup();
    }
  });
});
