// Redeliveries, dead letters and consumer lag on real brokers, as a handler (`metadata.redelivered`,
// `deliveryCount`) and OpenTelemetry (`tidings.consumer.*`) see them: dead letters after
// `maxDeliveries` on RabbitMQ, Redis and Kafka, and lag from the broker on Redis and Kafka
// (RabbitMQ tells none).
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, it } from 'vitest';
import type { Transport } from '../../src/transport.js';
import { RABBIT_URL, REDIS_URL, requireRabbitMQ, requireRedis } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';
import { deleteRedisKeys } from '../support/redis-keys.js';
import { createOtelHarness, type OtelHarness } from '../support/otel.js';
import { assertDeliveryMetrics } from '../support/delivery-metrics.js';
import { SHORT_GROUP_QUERY } from '../support/kafka-raw.js';
import { startKafkaMock, type KafkaTestBroker } from '../support/kafka-broker.js';

const PREFIX = `t-dm-${randomUUID().slice(0, 8)}`;
const transports: Transport[] = [];
let o: OtelHarness | undefined;
let kafka: KafkaTestBroker | undefined;

beforeAll(async () => {
  await requireRabbitMQ();
  await requireRedis();
  kafka = await startKafkaMock({ brokers: 1 });
});
afterEach(async () => {
  await Promise.all(transports.splice(0).map((t) => t.cleanup()));
  await o?.shutdown();
  o = undefined;
});
afterAll(async () => {
  await kafka?.stop();
  await deleteRabbitObjectsWithPrefix('tdmetrics');
  await deleteRedisKeys(PREFIX);
});

describe('delivery metrics on real brokers', () => {
  it('RabbitMQ: a requeued notification comes back redelivered and is counted, the poison one dead-lettered after max_deliveries=3; no lag reported', async () => {
    o = createOtelHarness();
    await assertDeliveryMetrics(o, { url: `${RABBIT_URL}?max_deliveries=3`, options: { controlExchange: PREFIX }, transports, maxDeliveries: 3 });
  });

  it('Redis: redelivery counted, the poison notification dead-lettered after max_deliveries=3, the blocked pool\'s lag reported', async () => {
    o = createOtelHarness();
    const url = `${REDIS_URL}?key_prefix=${PREFIX}&max_deliveries=3&sweep_interval_ms=100`;
    await assertDeliveryMetrics(o, { url, lagUrl: `${url}&prefetch_count=1`, transports, maxDeliveries: 3 });
  });

  it('Kafka (kafkajs, mock cluster): redelivery through the retry topic counted, dead letter after max_deliveries=3, lag from the watermarks', async () => {
    o = createOtelHarness();
    const url = `${kafka!.url}/?${SHORT_GROUP_QUERY}&max_deliveries=3`;
    await assertDeliveryMetrics(o, { url, lagUrl: url, transports, maxDeliveries: 3, timeScale: 2 });
  });
});
