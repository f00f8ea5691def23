// The notifier's default queue `<topic>.<priority>` on RabbitMQ (127.0.0.1:5672), bounded by
// options: `notification_queue_max_length` (x-max-length), `notification_queue_ttl_ms`
// (x-message-ttl), or not declared at all (`notification_store_and_forward=false`). oslo declares
// that queue without these arguments, so a plain declare of a bounded queue is refused (406).
import type { Channel, ChannelModel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { getNotificationListener, getNotificationTransport, Notifier, Target, type NotificationListener, type Transport } from '../../src/index.js';
import { openRawChannel } from '../support/amqp-driver.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';

const PREFIX = uniqueName('t-amqpbound');

describe('RabbitMQ: the notifier default queue is bounded by options', () => {
  let raw: ChannelModel;
  const transports: Transport[] = [];
  const listeners: NotificationListener[] = [];

  beforeAll(async () => {
    await requireRabbitMQ();
    ({ raw } = await openRawChannel());
  });

  afterAll(async () => {
    for (const l of listeners) {
      await l.stop();
      await l.wait();
    }
    await Promise.all(transports.map((t) => t.cleanup()));
    await raw?.close();
    await deleteRabbitObjectsWithPrefix(PREFIX);
  });

  async function transport(query: string): Promise<Transport> {
    const t = await getNotificationTransport(`${RABBIT_URL}?${query}`);
    transports.push(t);
    return t;
  }

  /** Messages ready in `queue`, or undefined when it does not exist (a channel of its own: a 404 closes it). */
  async function depth(queue: string): Promise<number | undefined> {
    const ch: Channel = await raw.createChannel();
    ch.on('error', () => undefined);
    try {
      return (await ch.checkQueue(queue)).messageCount;
    } catch {
      return undefined;
    } finally {
      await ch.close().catch(() => undefined);
    }
  }

  async function collect(t: Transport, topic: string, pool?: string): Promise<number[]> {
    const ids: number[] = [];
    const l = getNotificationListener(t, [new Target({ topic })], [{ info: (_c: unknown, _p: string, _t: string, payload: { id: number }) => void ids.push(payload.id) }], { pool });
    listeners.push(l);
    await l.start();
    return ids;
  }

  const notifierOf = (t: Transport, topic: string) => new Notifier(t, { publisherId: 'bound', driver: 'messagingv2', topics: [topic] });

  it('notification_queue_max_length: nobody listening, the queue keeps the newest N; a listener started later gets them', async () => {
    const topic = `${PREFIX}-maxlen`;
    const t = await transport('notification_queue_max_length=5');
    const notifier = notifierOf(t, topic);
    for (let id = 0; id < 20; id++) await notifier.info({}, 'bound.test', { id });
    expect(await depth(`${topic}.info`)).toBe(5);
    // oslo's declare (no x-max-length) of the same queue is refused: why a policy is the way next to Python.
    const ch = await raw.createChannel();
    const closed = new Promise<Error>((resolve) => ch.on('error', resolve));
    await expect(ch.assertQueue(`${topic}.info`, { durable: false, autoDelete: false, exclusive: false, arguments: {} })).rejects.toThrow(/PRECONDITION_FAILED/);
    expect(String(await closed)).toMatch(/x-max-length/);
    // tidings' un-pooled listener declares the queue as the notifier did.
    const ids = await collect(t, topic);
    await waitFor(() => ids.length === 5, { timeoutMs: 10_000, message: 'the five kept notifications delivered' });
    expect(ids).toEqual([15, 16, 17, 18, 19]);
  });

  it('notification_queue_ttl_ms: what nobody read within the TTL leaves the queue', async () => {
    const topic = `${PREFIX}-ttl`;
    const t = await transport('notification_queue_ttl_ms=300');
    const notifier = notifierOf(t, topic);
    for (let id = 0; id < 10; id++) await notifier.info({}, 'bound.test', { id });
    await waitFor(async () => (await depth(`${topic}.info`)) === 0, { timeoutMs: 10_000, message: 'the queue emptied by x-message-ttl' });
  });

  it('notification_store_and_forward=false: the notifier declares no default queue; pools still get everything', async () => {
    const topic = `${PREFIX}-nosf`;
    const t = await transport('notification_store_and_forward=false');
    const notifier = notifierOf(t, topic);
    const pooled = await collect(t, topic, `${PREFIX}-pool`);
    for (let id = 0; id < 3; id++) await notifier.info({}, 'bound.test', { id });
    await waitFor(() => pooled.length === 3, { timeoutMs: 10_000, message: 'the pool got all three' });
    expect(await depth(`${topic}.info`)).toBeUndefined();
  });
});
