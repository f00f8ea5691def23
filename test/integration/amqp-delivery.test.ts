// Driver-level delivery behaviour on a real RabbitMQ: concurrent confirmed publishes, duplicate
// suppression on `_unique_id`, prefetch, malformed bodies, requeue and redelivery.
import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from '../../src/contract/incoming-message.js';
import type { AmqpDriver } from '../../src/drivers/amqp/index.js';
import { createMemoryLogger, type MemoryLogger } from '../../src/core/logger.js';
import { Target } from '../../src/core/target.js';
import { collectNotifications, makeAmqpDriver, sampleNotification, useAmqpDrivers } from '../support/amqp-driver.js';
import { deferred, uniqueName, waitFor } from '../../src/testing/wait.js';

const PREFIX = uniqueName('t-amqpdel');
const EXCHANGE = `${PREFIX}-x`;

const makeDriver = (options: Record<string, unknown> = {}, logger: MemoryLogger = createMemoryLogger()): AmqpDriver => makeAmqpDriver(EXCHANGE, options, logger);
const notification = sampleNotification;

describe('amqp driver delivery (RabbitMQ)', () => {
  const amqp = useAmqpDrivers(PREFIX);
  const { drivers, listeners } = amqp;

  it('2000 concurrent casts all resolve after confirms and all arrive', async () => {
    const driver = makeDriver();
    drivers.push(driver);
    const topic = `${PREFIX}-many`;
    const listener = await driver.listen(new Target({ topic, server: 's' }), { batchSize: 50, batchTimeout: 20 });
    listeners.push(listener);
    const seen = new Set<number>();
    listener.start((msgs) => {
      for (const m of msgs) seen.add((m.request.args as { i: number }).i);
    });
    const N = 2000;
    await Promise.all(Array.from({ length: N }, (_, i) => driver.send(new Target({ topic }), {}, { method: 'm', args: { i } })));
    await waitFor(() => seen.size === N, { timeoutMs: 20_000, message: `all ${N} casts received` });
  });

  it('drops a re-published message with the same _unique_id (RPC and notifications)', async () => {
    const driver = makeDriver();
    drivers.push(driver);
    const topic = `${PREFIX}-dup`;
    const rpc = await driver.listen(new Target({ topic, server: 's' }));
    listeners.push(rpc);
    const rpcGot: string[] = [];
    rpc.start((msgs) => {
      for (const m of msgs) rpcGot.push(m.request.method as string);
    });
    const ntopic = `${PREFIX}-ndup`;
    const notif = await driver.listenForNotifications([[new Target({ topic: ntopic }), 'info']]);
    listeners.push(notif);
    const nGot: IncomingMessage[] = [];
    notif.start(async (msgs) => {
      for (const m of msgs) {
        nGot.push(m);
        await m.acknowledge();
      }
    });
    const env = (m: object) => Buffer.from(JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify(m) }));
    const rpcBody = env({ method: 'once', args: {}, _unique_id: 'f'.repeat(32) });
    amqp.ch.publish(EXCHANGE, topic, rpcBody);
    amqp.ch.publish(EXCHANGE, topic, rpcBody);
    amqp.ch.publish(EXCHANGE, topic, env({ method: 'after', args: {}, _unique_id: 'e'.repeat(32) }));
    const nBody = env({ ...notification(1), _unique_id: 'd'.repeat(32) });
    amqp.ch.publish(EXCHANGE, `${ntopic}.info`, nBody);
    amqp.ch.publish(EXCHANGE, `${ntopic}.info`, nBody);
    amqp.ch.publish(EXCHANGE, `${ntopic}.info`, env({ ...notification(2), _unique_id: 'c'.repeat(32) }));
    // Without _unique_id (oslo's Kafka records have none) the notification's message_id identifies it.
    amqp.ch.publish(EXCHANGE, `${ntopic}.info`, env(notification(3)));
    amqp.ch.publish(EXCHANGE, `${ntopic}.info`, env(notification(3)));
    amqp.ch.publish(EXCHANGE, `${ntopic}.info`, env(notification(4)));
    await waitFor(() => rpcGot.includes('after') && nGot.some((m) => m.msgId === 'm-4'));
    expect(rpcGot).toEqual(['once', 'after']);
    expect(nGot.map((m) => m.msgId)).toEqual(['m-1', 'm-2', 'm-3', 'm-4']);
  });

  it('rejects malformed bodies without requeue, logs without payload, and keeps consuming', async () => {
    const logger = createMemoryLogger();
    const driver = makeDriver({}, logger);
    drivers.push(driver);
    const topic = `${PREFIX}-bad`;
    const { listener, got } = await collectNotifications(driver, topic, listeners);
    const key = `${topic}.info`;
    amqp.ch.publish(EXCHANGE, key, Buffer.from('not json SECRET-PAYLOAD'));
    amqp.ch.publish(EXCHANGE, key, Buffer.from(JSON.stringify({ 'oslo.version': '3.0', 'oslo.message': '{}' })));
    amqp.ch.publish(EXCHANGE, key, Buffer.from(JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ payload: 1 }) })));
    amqp.ch.publish(EXCHANGE, key, Buffer.from(JSON.stringify(notification(7))));
    await waitFor(() => got.length === 1);
    expect(got[0].notification.payload).toEqual({ i: 7 });
    await waitFor(() => logger.records.filter((r) => r.msg.startsWith('Rejecting a malformed')).length === 3);
    expect(JSON.stringify(logger.records)).not.toContain('SECRET-PAYLOAD');
    await listener.stop();
    // Rejected without requeue: nothing left in the queue.
    expect((await amqp.ch.checkQueue(key)).messageCount).toBe(0);
  });

  it('applies prefetch on listener channels and caps batches', async () => {
    const driver = makeDriver({ prefetchCount: 5 });
    drivers.push(driver);
    expect(driver.options.prefetchCount).toBe(5);
    const topic = `${PREFIX}-pf`;
    for (let i = 0; i < 20; i++) await driver.sendNotification(new Target({ topic: `${topic}.info` }), {}, notification(i));
    const listener = await driver.listenForNotifications([[new Target({ topic }), 'info']], { batchSize: 50, batchTimeout: 200 });
    listeners.push(listener);
    const release = deferred();
    const batches: IncomingMessage[][] = [];
    listener.start(async (msgs) => {
      batches.push(msgs);
      if (batches.length === 1) await release.promise;
      for (const m of msgs) await m.acknowledge();
    });
    await waitFor(() => batches.length === 1);
    // While the first batch is held unacked, the broker may not push more than the prefetch.
    await new Promise((r) => setTimeout(r, 300));
    expect(batches[0].length).toBeLessThanOrEqual(5);
    expect((await amqp.ch.checkQueue(`${topic}.info`)).messageCount).toBe(15);
    release.resolve();
    await waitFor(() => batches.flat().length === 20, { timeoutMs: 10_000 });
    for (const b of batches) expect(b.length).toBeLessThanOrEqual(5);
  });

  it('requeued notifications come back; unacked ones go to another pool member when a listener dies', async () => {
    const driver = makeDriver({ shutdownTimeout: 300 });
    drivers.push(driver);
    const topic = `${PREFIX}-pool`;
    const pool = `${PREFIX}-billing`;
    const a = await driver.listenForNotifications([[new Target({ topic }), 'info']], { pool });
    const held: IncomingMessage[] = [];
    a.start((msgs) => {
      held.push(...msgs);
    });
    let requeued = false;
    for (let i = 0; i < 3; i++) await driver.sendNotification(new Target({ topic: `${topic}.info` }), {}, notification(i));
    await waitFor(() => held.length === 3);
    // Requeue one: it comes back (to this listener, the only member).
    await held[0].requeue();
    requeued = true;
    await waitFor(() => held.length === 4);
    expect(requeued && held[3].msgId).toBe(held[0].msgId);
    // A second member joins; the first dies holding 3 unacked messages: they move over.
    const other = makeDriver();
    drivers.push(other);
    const b = await other.listenForNotifications([[new Target({ topic }), 'info']], { pool });
    listeners.push(b);
    const gotB: string[] = [];
    b.start(async (msgs) => {
      for (const m of msgs) {
        gotB.push(m.msgId!);
        await m.acknowledge();
      }
    });
    await driver.cleanup(); // closes a's connection without acking
    await waitFor(() => gotB.length === 3, { timeoutMs: 15_000 });
    expect(gotB.sort()).toEqual(['m-0', 'm-1', 'm-2']);
  });

  it('retries a reply to a missing reply queue every 250 ms in the background, then drops it and remembers the queue as obsolete', async () => {
    const logger = createMemoryLogger();
    const driver = makeDriver({ missingConsumerRetryTimeout: 700 }, logger);
    drivers.push(driver);
    const topic = `${PREFIX}-noreplyq`;
    const listener = await driver.listen(new Target({ topic, server: 's' }));
    listeners.push(listener);
    let replied = 0;
    listener.start(async (msgs) => {
      for (const m of msgs as any[]) {
        await m.reply({ result: 1 });
        replied++;
      }
    });
    const env = (m: object) => Buffer.from(JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify(m) }));
    const gone = `reply_${'0'.repeat(32)}`;
    const started = Date.now();
    amqp.ch.publish(EXCHANGE, topic, env({ method: 'm', args: {}, _msg_id: '1'.repeat(32), _reply_q: gone, _timeout: null, _unique_id: '2'.repeat(32) }));
    const goneWarnings = () => logger.records.filter((r) => r.msg === 'The reply queue is gone; dropping the reply').length;
    // reply() resolves after the first attempt; the retries go on in the background.
    await waitFor(() => replied === 1, { timeoutMs: 10_000 });
    expect(Date.now() - started).toBeLessThan(600);
    expect(goneWarnings()).toBe(0);
    await waitFor(() => goneWarnings() === 1, { timeoutMs: 10_000 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(600);
    amqp.ch.publish(EXCHANGE, topic, env({ method: 'm', args: {}, _msg_id: '3'.repeat(32), _reply_q: gone, _timeout: null, _unique_id: '4'.repeat(32) }));
    await waitFor(() => replied === 2, { timeoutMs: 10_000 });
    // Dropped at once as obsolete: no second round of retries ending in another "gone" warning.
    expect(logger.records.some((r) => r.msg === 'Dropping a reply to an obsolete reply queue')).toBe(true);
    expect(goneWarnings()).toBe(1);
  });
});
