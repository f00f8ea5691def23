// Headers on RabbitMQ: besides its own `x-tidings-deliveries`/`x-tidings-address` (checked in
// amqp-dead-letters.test.ts: a forged one dead-letters the notification), tidings reads only
// RabbitMQ's `x-delivery-count`, which on a classic queue is whatever the publisher put. Raw
// amqplib publishes with a forged count and headers tidings does not read on AMQP (Kafka's retry
// headers, an `x-death`): the count is not believed, the rest is ignored, the notification is
// handled at once.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IncomingMessage } from '../../src/contract/incoming-message.js';
import { Target } from '../../src/core/target.js';
import { HEADERS } from '../../src/drivers/kafka/topology.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { makeAmqpDriver } from '../support/amqp-driver.js';
import { requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix, publishRawToRabbit } from '../support/rabbit-admin.js';

const PREFIX = uniqueName('t-amqpforged');
const EXCHANGE = `${PREFIX}-x`;
const notification = (id: number) =>
  JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ message_id: randomUUID(), publisher_id: 'p', event_type: 'ev', priority: 'INFO', payload: { id }, timestamp: '2026-11-25 00:00:00.000000', _context: {} }) });

describe('RabbitMQ: forged headers', () => {
  beforeAll(requireRabbitMQ);
  afterAll(() => deleteRabbitObjectsWithPrefix(PREFIX));

  it('a forged x-delivery-count is not believed and tidings-looking headers are ignored', async () => {
    const driver = makeAmqpDriver(EXCHANGE);
    const topic = `${PREFIX}-n`;
    const seen: Array<{ id: number; deliveryCount: number }> = [];
    const listener = await driver.listenForNotifications([[new Target({ topic }), 'info']], {});
    listener.start(async (ms: IncomingMessage[]) => {
      for (const m of ms) {
        const { id } = m.notification.payload as { id: number };
        seen.push({ id, deliveryCount: m.deliveryCount });
        // Each is requeued once: the redelivery's count is what a forged header would change.
        if (m.deliveryCount === 1) await m.requeue();
        else await m.acknowledge();
      }
    });
    try {
      const forged = {
        'x-delivery-count': 1e12,
        [HEADERS.originalTopic]: 'payroll.info',
        [HEADERS.notBefore]: String(Date.now() + 10 * 365 * 86_400_000),
        'x-death': [{ count: 1e9, reason: 'rejected', queue: 'payroll', exchange: 'payroll', 'routing-keys': ['payroll.info'] }],
      };
      await publishRawToRabbit(EXCHANGE, `${topic}.info`, notification(1), undefined, forged);
      await publishRawToRabbit(EXCHANGE, `${topic}.info`, notification(2), undefined, { 'x-delivery-count': -4 });
      await waitFor(() => seen.length === 4, { timeoutMs: 10_000, message: 'both handled twice (a requeue each)' });
      expect(seen.filter((s) => s.id === 1).map((s) => s.deliveryCount)).toEqual([1, 2]);
      expect(seen.filter((s) => s.id === 2).map((s) => s.deliveryCount)).toEqual([1, 2]);
    } finally {
      await listener.stop();
      await listener.cleanup();
      await driver.cleanup();
    }
  });
});
