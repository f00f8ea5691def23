// Quorum queues count deliveries: RabbitMQ sets `x-delivery-count` on a requeued message of a
// quorum queue, and the driver hands it on as `deliveryCount` (classic queues only flag a
// redelivery, reported as 2 every time; the conformance suite checks that much on both).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import amqp from 'amqplib';
import { getNotificationListener, getNotificationTransport, InvalidArgument, Notifier, NotificationResult, Target, type NotificationMetadata, type Transport } from '../../src/index.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix, listRabbitQueues } from '../support/rabbit-admin.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';

const PREFIX = uniqueName('t-amqpquorum');

describe('amqp driver on quorum queues (RabbitMQ)', () => {
  let transport: Transport;

  beforeAll(async () => {
    await requireRabbitMQ();
    // Quorum makes the exchange durable: one of this file's, not the broker's non-durable `openstack`.
    transport = await getNotificationTransport(`${RABBIT_URL}?rabbit_quorum_queue=true`, { controlExchange: `${PREFIX}-x` });
  });

  afterAll(async () => {
    await transport?.cleanup();
    await deleteRabbitObjectsWithPrefix(PREFIX);
  });

  it('a notification requeued twice is seen with deliveryCount 1, 2, 3 and redelivered false, true, true', async () => {
    const topic = `${PREFIX}-requeue`;
    const seen: Array<{ deliveryCount: number; redelivered: boolean }> = [];
    const listener = getNotificationListener(
      transport,
      [new Target({ topic })],
      [
        {
          info(_ctx: unknown, _publisher: string, _eventType: string, _payload: unknown, metadata: NotificationMetadata) {
            seen.push({ deliveryCount: metadata.deliveryCount, redelivered: metadata.redelivered });
            return seen.length < 3 ? NotificationResult.REQUEUE : NotificationResult.HANDLED;
          },
        },
      ],
      { allowRequeue: true },
    );
    await listener.start();
    try {
      expect((await listRabbitQueues((n) => n === `${topic}.info`)).get(`${topic}.info`)?.type).toBe('quorum');
      await new Notifier(transport, { publisherId: 'p', driver: 'messagingv2', topics: [topic] }).info({}, 'ev', { id: 1 });
      await waitFor(() => seen.length >= 3, { timeoutMs: 15_000, message: 'the notification was delivered three times' });
      expect(seen).toEqual([
        { deliveryCount: 1, redelivered: false },
        { deliveryCount: 2, redelivered: true },
        { deliveryCount: 3, redelivered: true },
      ]);
    } finally {
      await listener.stop();
      await listener.wait();
    }
  });

  it("a quorum transport on an exchange declared non-durable (oslo's default openstack) fails naming durable and the option that forces it", async () => {
    const exchange = `${PREFIX}-classic-x`;
    const conn = await amqp.connect('amqp://guest:guest@127.0.0.1:5672/');
    try {
      const ch = await conn.createChannel();
      await ch.assertExchange(exchange, 'topic', { durable: false, autoDelete: false });
    } finally {
      await conn.close();
    }
    const quorum = await getNotificationTransport(`${RABBIT_URL}?rabbit_quorum_queue=true`, { controlExchange: exchange });
    try {
      const listener = getNotificationListener(quorum, [new Target({ topic: `${PREFIX}-onclassic` })], [{ info: () => NotificationResult.HANDLED }]);
      const error = await listener.start().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(InvalidArgument);
      expect(String((error as Error).message)).toMatch(/exchange ".*-classic-x" argument durable: .*align amqp_durable_queues \(rabbit_quorum_queue forces it\)/);
    } finally {
      await quorum.cleanup();
    }
  });
});
