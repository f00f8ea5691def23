// Publishes the broker nacks, on RabbitMQ (127.0.0.1:5672). A nack only says "not taken this
// time": a quorum queue nacks while it elects a leader after its node died, a full queue with
// `x-overflow: reject-publish` nacks until it has room. The driver republishes a nacked message
// with backoff while `publish_timeout_ms` has not passed since the nack, then fails the send;
// `retry: 0` fails it at once. A queue that is full (x-max-length 1, reject-publish) is bound
// beside the notification queue, so every publish to the topic is nacked until it is purged.
import type { Channel, ChannelModel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { createMemoryLogger, type MemoryLogger } from '../../src/core/logger.js';
import { MessageDeliveryFailure } from '../../src/core/errors.js';
import { getNotificationTransport, Notifier, type Transport } from '../../src/index.js';
import { openRawChannel } from '../support/amqp-driver.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';

const PREFIX = uniqueName('t-amqpnack');

describe('RabbitMQ: a nacked publish is republished until publish_timeout_ms, not failed at once', () => {
  let raw: ChannelModel;
  let ch: Channel;
  const transports: Transport[] = [];

  beforeAll(async () => {
    await requireRabbitMQ();
    ({ raw, ch } = await openRawChannel());
  });

  afterAll(async () => {
    await Promise.all(transports.map((t) => t.cleanup()));
    await raw?.close();
    await deleteRabbitObjectsWithPrefix(PREFIX);
  });

  async function track<T extends Transport>(t: Promise<T>): Promise<T> {
    transports.push(await t);
    return t;
  }

  /** A full queue (one message, `reject-publish`) bound to `exchange` with `routingKey`: every publish routed there is nacked. */
  async function fullQueueOn(exchange: string, exchangeType: 'topic' | 'direct', routingKey: string): Promise<string> {
    const queue = uniqueName(`${PREFIX}-full`);
    await ch.assertExchange(exchange, exchangeType, { durable: false });
    await ch.assertQueue(queue, { durable: false, arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' } });
    await ch.bindQueue(queue, exchange, routingKey);
    ch.sendToQueue(queue, Buffer.from('filler'));
    await waitFor(async () => (await ch.checkQueue(queue)).messageCount === 1, { timeoutMs: 5000, message: `${queue} full` });
    return queue;
  }

  /** The waits of the driver's republishes so far (its "retrying" warnings), ms each, with what failed. */
  const retries = (logger: MemoryLogger) =>
    logger.records.filter((r) => r.msg === 'Publish failed; retrying with the same message').map((r) => ({ delayMs: r.fields.delayMs, err: String((r.fields.err as Error | undefined)?.message) }));

  /**
   * A notifier on its own exchange (its log kept), whose topic's `info` notifications are all
   * nacked: its first send declared the exchange and the topic's queue, then a full queue was bound beside it.
   */
  async function refusingTopic(name: string, query = '') {
    const exchange = `${PREFIX}-${name}`;
    const topic = uniqueName('nack');
    const logger = createMemoryLogger();
    const t = await track(getNotificationTransport(`${RABBIT_URL}${query}`, { controlExchange: exchange, logger }));
    const notifier = new Notifier(t, { publisherId: 'nack.test', driver: 'messagingv2', topics: [topic] });
    await notifier.info({}, 'first', {});
    const full = await fullQueueOn(exchange, 'topic', `${topic}.info`);
    return { exchange, topic, logger, notifier, full };
  }

  it('a notification nacked by a full queue is sent once the queue has room', async () => {
    const { logger, notifier, full } = await refusingTopic('n1');
    let outcome: string | undefined;
    const sending = notifier.info({}, 'nacked.then.taken', {}).then(
      () => (outcome = 'sent'),
      (err: Error) => (outcome = `${err.name}: ${err.message}`),
    );
    // Nacked at least once, and waiting to be republished: still pending, not failed.
    await waitFor(() => retries(logger).length > 0, { timeoutMs: 10_000, message: 'the nacked send is waiting to be republished' });
    expect(retries(logger)[0]).toEqual({ delayMs: 1000, err: 'The broker refused (nacked) the message' });
    expect(outcome, 'pending while the queue refuses').toBeUndefined();
    await ch.purgeQueue(full);
    await sending;
    expect(outcome).toBe('sent');
    expect((await ch.checkQueue(full)).messageCount, 'the republished copy reached the queue that refused it').toBe(1);
  });

  it('retry: 0 fails a nacked notification at once; a queue that keeps refusing fails the send after publish_timeout_ms', async () => {
    const { logger, notifier } = await refusingTopic('n2', '?publish_timeout_ms=2500');

    const once = await notifier.prepare({ retry: 0 }).info({}, 'no.retry', {}).then(() => undefined, (err: unknown) => err);
    expect(once).toBeInstanceOf(MessageDeliveryFailure);
    expect((once as Error).message).toMatch(/nacked/);
    expect(retries(logger), 'no retry: failed at the first nack').toEqual([]);

    const refused = await notifier.info({}, 'keeps.refusing', {}).then(() => undefined, (err: unknown) => err);
    expect(refused).toBeInstanceOf(MessageDeliveryFailure);
    expect((refused as Error).message).toMatch(/nacked/);
    // Republished after 1 s and after 3 s more: nacked again at ~4 s, past the 2.5 s bound, so the send fails there.
    expect(retries(logger).map((r) => r.delayMs)).toEqual([1000, 3000]);
  });

  it('sixteen nacked notifications waiting to be republished at once warn of no listener leak', async () => {
    const { exchange, topic, logger, notifier, full } = await refusingTopic('n3');
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      const sends = Promise.all(Array.from({ length: 16 }, (_, i) => notifier.info({}, 'many.nacked', { i })));
      await waitFor(() => retries(logger).length >= 16, { timeoutMs: 10_000, message: 'all sixteen waiting to be republished' });
      await ch.purgeQueue(full);
      await ch.unbindQueue(full, exchange, `${topic}.info`);
      await sends;
      // Node emits process warnings on a later turn.
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w.includes('MaxListeners'))).toEqual([]);
  });
});
