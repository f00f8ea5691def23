// OpenTelemetry on real brokers: one trace from a RabbitMQ client through a RabbitMQ server whose
// endpoint calls a Redis server, and notifier -> listener spans and metrics on RabbitMQ and Redis.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, it } from 'vitest';
import type { Transport } from '../../src/transport.js';
import { RABBIT_URL, REDIS_URL, requireRabbitMQ, requireRedis } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';
import { deleteRedisKeys } from '../support/redis-keys.js';
import { assertNotifyTrace, assertRpcTrace, createOtelHarness, type OtelHarness } from '../support/otel.js';

const PREFIX = `t-otel-${randomUUID().slice(0, 8)}`;
const REDIS = `${REDIS_URL}?key_prefix=${PREFIX}`;
const options = { controlExchange: PREFIX };
const transports: Transport[] = [];
let o: OtelHarness | undefined;

beforeAll(async () => {
  await requireRabbitMQ();
  await requireRedis();
});
afterEach(async () => {
  await Promise.all(transports.splice(0).map((t) => t.cleanup()));
  await o?.shutdown();
  o = undefined;
});
afterAll(async () => {
  await deleteRabbitObjectsWithPrefix('t-otel-');
  await deleteRedisKeys(PREFIX);
});

describe('OpenTelemetry across brokers', () => {
  it('RabbitMQ client -> RabbitMQ server -> nested call -> Redis server: one trace, parent/child at every hop', async () => {
    o = createOtelHarness();
    await assertRpcTrace(o, { a: RABBIT_URL, b: REDIS, systems: ['rabbitmq', 'redis'], options, transports });
  });

  it('Redis client -> Redis server -> nested call -> RabbitMQ server', async () => {
    o = createOtelHarness();
    await assertRpcTrace(o, { a: REDIS, b: RABBIT_URL, systems: ['redis', 'rabbitmq'], options, transports });
  });

  for (const [system, url] of [['rabbitmq', RABBIT_URL], ['redis', REDIS]] as const) {
    it(`notifier -> listener and batch listener on ${system} (two transports)`, async () => {
      o = createOtelHarness();
      await assertNotifyTrace(o, { a: url, b: url, systems: [system, system], options, transports });
    });
  }
});
