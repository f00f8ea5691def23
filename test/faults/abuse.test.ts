// Issue 28 "Proof": the shared table of hostile messages (test/support/abuse.ts) thrown at an RPC
// server and a notification listener of every driver, each injected with that broker's raw client,
// plus the broker headers each driver reads, forged.
import { randomUUID } from 'node:crypto';
import { getMemoryBroker } from '../../src/testing/memory.js';
import { HEADERS } from '../../src/drivers/kafka/topology.js';
import { DEADLINE_FIELD, replyKey } from '../../src/drivers/redis/topology.js';
import { ABUSE_RUN, runAbuseSuite, type AbuseCase } from '../support/abuse.js';
import { RABBIT_URL, requireRabbitMQ, requireRedis } from '../support/brokers.js';
import { startKafkaMock, type KafkaTestBroker } from '../support/kafka-broker.js';
import { RawKafka, SHORT_GROUP_QUERY } from '../support/kafka-raw.js';
import { deleteRabbitObjectsWithPrefix, publishRawToRabbit } from '../support/rabbit-admin.js';
import { deleteRedisKeys, publishRawToRedis, rawRedis, streamFor, xaddRaw } from '../support/redis-keys.js';

const EXCHANGE = 'openstack';
/** A valid notification in oslo's 2.0 envelope, for the forged-header cases. */
const goodNotification = () =>
  JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ message_id: randomUUID(), publisher_id: 'abuse', event_type: 'ev', priority: 'INFO', payload: {}, timestamp: 't', _unique_id: randomUUID().replaceAll('-', '') }) });
const goodCast = () => JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ method: 'echo', args: {}, _unique_id: randomUUID().replaceAll('-', '') }) });

const vhost = `abuse-${randomUUID()}`;
runAbuseSuite({
  name: 'memory',
  url: () => `memory:///${vhost}`,
  publishRaw: async (routingKey, body) => void getMemoryBroker(vhost).publishRaw(EXCHANGE, routingKey, body),
  untouched: async (address) => getMemoryBroker(vhost).queueDepth(address) === 0,
});

// RabbitMQ reads one header of its own on a redelivery (x-delivery-count); forged on a first delivery it is never obeyed.
const rabbitForged: AbuseCase[] = [
  { name: 'forged x-delivery-count, x-death', to: 'notification', handled: true, warns: 0, send: (_s, address) => publishRawToRabbit(EXCHANGE, address, goodNotification(), undefined, { 'x-delivery-count': 99_999_999, 'x-death': [{ count: 1e9, queue: 'payroll' }] }) },
  { name: 'forged x-delivery-count as a string', to: 'rpc', handled: true, warns: 0, send: (_s, address) => publishRawToRabbit(EXCHANGE, address, goodCast(), undefined, { 'x-delivery-count': 'lots' }) },
];
runAbuseSuite({
  name: 'amqp (RabbitMQ)',
  url: () => RABBIT_URL,
  before: requireRabbitMQ,
  after: async () => void (await deleteRabbitObjectsWithPrefix(ABUSE_RUN)),
  publishRaw: (routingKey, body) => publishRawToRabbit(EXCHANGE, routingKey, body),
  forged: rabbitForged,
});

const PREFIX = `tabuse-${randomUUID().slice(0, 8)}`;
// Redis stream entries carry a body field and, for calls, a deadline field: forged, or without a body.
const redisForged: AbuseCase[] = [
  { name: 'deadline field not a number (dead-lettered, not run)', to: 'rpc', handled: false, warns: 1, send: async (_s, address) => void (await xaddRaw(streamFor(PREFIX, EXCHANGE, address), { b: goodCast(), [DEADLINE_FIELD]: 'never' })) },
  { name: 'an entry without a body field', to: 'rpc', handled: false, warns: 1, send: async (_s, address) => void (await xaddRaw(streamFor(PREFIX, EXCHANGE, address), { [DEADLINE_FIELD]: String(Date.now() + 60_000) })) },
  { name: 'a notification entry without a body field', to: 'notification', handled: false, warns: 1, send: async (_s, address) => void (await xaddRaw(streamFor(PREFIX, EXCHANGE, address), { other: 'x' })) },
];
runAbuseSuite({
  name: 'redis',
  url: () => `redis://127.0.0.1:6379/?key_prefix=${PREFIX}`,
  before: requireRedis,
  after: async () => void (await deleteRedisKeys(PREFIX)),
  publishRaw: (routingKey, body) => publishRawToRedis(PREFIX, EXCHANGE, routingKey, body),
  forged: redisForged,
  async untouched(address) {
    const redis = rawRedis();
    try {
      return (await redis.exists(replyKey(PREFIX, address))) === 0;
    } finally {
      redis.disconnect();
    }
  },
});

let broker: KafkaTestBroker | undefined;
let raw: RawKafka | undefined;
const group = `abuse-g-${randomUUID()}`;
// Kafka: tidings' own retry headers, forged on a first delivery, are dead-lettered with a warning and never obeyed.
const kafkaForged: AbuseCase[] = [
  { name: 'forged delivery count', to: 'notification', handled: false, warns: 1, send: (_s, address) => raw!.publish(address, [{ value: goodNotification(), headers: { [HEADERS.deliveries]: '99999999999999' } }]) },
  { name: 'forged original topic', to: 'notification', handled: false, warns: 1, send: (_s, address) => raw!.publish(address, [{ value: goodNotification(), headers: { [HEADERS.originalTopic]: 'payroll.info' } }]) },
  { name: 'forged far-future due time', to: 'notification', handled: false, warns: 1, send: (_s, address) => raw!.publish(address, [{ value: goodNotification(), headers: { [HEADERS.notBefore]: String(Date.now() + 10 * 365 * 86_400_000) } }]) },
];
runAbuseSuite({
  name: 'kafka (librdkafka mock cluster)',
  url: () => `${broker!.url}/?consumer_group=${group}&${SHORT_GROUP_QUERY}&rpc_max_wait_ms=20`,
  async before() {
    broker = await startKafkaMock({ brokers: 1 });
    raw = new RawKafka(broker.brokers);
  },
  async after() {
    await raw?.close();
    await broker?.stop();
  },
  publishRaw: (routingKey, body) => raw!.publish(routingKey, [{ value: body }]),
  forged: kafkaForged,
  timeoutMs: 120_000,
});

