// oslo.messaging 14's Kafka notifier and listener (confluent-kafka on librdkafka) against the
// Kafka test broker, with raw kafkajs on the other side: pins the record format a tidings Kafka
// driver must read and write (oslo-wire.md section 2) before that driver exists.
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, type Consumer, type IHeaders, type Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRIORITIES } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { startKafkaMock, type KafkaTestBroker } from '../support/kafka-broker.js';
import { PyClient, PyProcess, requireOsloMessaging, startPy } from './support/python.js';

interface RawRecord {
  topic: string;
  partition: number;
  key: Buffer | null;
  value: string;
  headers: IHeaders;
  timestamp: string;
}

/** The topics oslo's Kafka listener subscribes to for `topic`: one per priority. */
const priorityTopics = (topic: string) => PRIORITIES.map((p) => `${topic}.${p}`);

describe('oslo.messaging Kafka notifications <-> kafkajs on the Kafka test broker', () => {
  let broker: KafkaTestBroker;
  let kafka: Kafka;
  const consumers: Consumer[] = [];
  const producers: Producer[] = [];
  const py: PyProcess[] = [];

  beforeAll(async () => {
    requireOsloMessaging();
    broker = await startKafkaMock({ brokers: 3 });
    kafka = new Kafka({ brokers: broker.brokers, clientId: 'tidings-kafka-interop', logLevel: logLevel.NOTHING });
  });

  afterAll(async () => {
    await Promise.all(py.map((p) => p.stop()));
    await Promise.all(consumers.map((c) => c.disconnect().catch(() => undefined)));
    await Promise.all(producers.map((p) => p.disconnect().catch(() => undefined)));
    await broker?.stop();
  });

  /** oslo's transport URL form; the driver ignores the (empty) virtual host here. */
  const osloUrl = () => `kafka://${broker.brokers.join(',')}/`;

  it("reads what oslo's Kafka notifier writes: topic <topic>.<priority>, no key, no headers, the 2.0 envelope with a nested _context", async () => {
    const topic = uniqueName('tidings-oslo');
    const kafkaTopic = `${topic}.info`;
    await broker.createTopic({ name: kafkaTopic, partitions: 1 });
    const records: RawRecord[] = [];
    const c = kafka.consumer({ groupId: uniqueName('g'), sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10_000, maxWaitTimeInMs: 200 });
    consumers.push(c);
    await c.connect();
    // From the beginning: no need to wait for the join before Python publishes.
    await c.subscribe({ topic: kafkaTopic, fromBeginning: true });
    await c.run({
      eachMessage: async ({ topic: t, partition, message }) => {
        records.push({ topic: t, partition, key: message.key, value: message.value?.toString() ?? '', headers: message.headers ?? {}, timestamp: message.timestamp });
      },
    });

    const client = await startPy(new PyClient(osloUrl()));
    py.push(client);
    const N = 5;
    for (let i = 0; i < N; i++) {
      const reply = await client.notify({
        driver: 'messagingv2',
        topics: [topic],
        publisherId: 'compute.host-1',
        priority: 'info',
        eventType: 'tidings.test',
        payload: { i, text: 'héllo' },
        ctx: { user: 'u1', request_id: `req-${i}` },
      });
      expect(reply.ok, JSON.stringify(reply)).toBe(true);
    }
    await waitFor(() => records.length >= N, { timeoutMs: 20_000, message: `${N} oslo notifications read by kafkajs` });

    // Printed on purpose: the exact bytes oslo wrote, for the Kafka driver's author.
    console.info('oslo Kafka notifier record:', JSON.stringify({ ...records[0], key: records[0].key?.toString() ?? null }, null, 2));

    expect(records.map((r) => r.topic)).toEqual(Array(N).fill(kafkaTopic));
    for (const r of records) {
      expect(r.key).toBeNull();
      expect(r.headers).toEqual({});
      const envelope = JSON.parse(r.value);
      expect(Object.keys(envelope).sort()).toEqual(['oslo.message', 'oslo.version']);
      expect(envelope['oslo.version']).toBe('2.0');
      expect(typeof envelope['oslo.message']).toBe('string');
    }
    const inner = records.map((r) => JSON.parse(JSON.parse(r.value)['oslo.message']));
    expect(inner.map((m) => m.payload.i)).toEqual([0, 1, 2, 3, 4]);
    const first = inner[0];
    expect(Object.keys(first).sort()).toEqual(['_context', 'event_type', 'message_id', 'payload', 'priority', 'publisher_id', 'timestamp']);
    expect(first._context).toEqual({ user: 'u1', request_id: 'req-0' });
    expect(first).toMatchObject({ event_type: 'tidings.test', priority: 'INFO', publisher_id: 'compute.host-1', payload: { i: 0, text: 'héllo' } });
    expect(first.message_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(first.timestamp).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+$/);
  });

  /** What oslo's listener takes: the notification dict plus `_context`, in the 2.0 envelope, no key, no headers. */
  const osloRecord = (fields: { priority: string; eventType: string; payload: unknown; ctx: Record<string, unknown>; publisherId: string; messageId?: string }) => ({
    value: JSON.stringify({
      'oslo.version': '2.0',
      'oslo.message': JSON.stringify({
        message_id: fields.messageId ?? randomUUID(),
        publisher_id: fields.publisherId,
        event_type: fields.eventType,
        priority: fields.priority.toUpperCase(),
        payload: fields.payload,
        timestamp: new Date().toISOString().replace('T', ' ').replace('Z', ''),
        _context: fields.ctx,
      }),
    }),
  });

  for (const pool of [undefined, 'tidings-pool'] as const) {
    it(`oslo's Kafka listener${pool ? ' (pooled)' : ''} receives records kafkajs wrote in oslo's format`, async () => {
      const topic = uniqueName('tidings-oslo');
      // oslo's consumer subscribes before any record exists; librdkafka would not see topics
      // created later until its next metadata refresh (5 min), so create them first.
      for (const t of priorityTopics(topic)) await broker.createTopic({ name: t, partitions: 1 });
      const listener = await startPy(new PyProcess('notify_listener.py', { url: osloUrl(), topics: [topic], pool: pool && `${pool}-${randomUUID()}`, deadline_s: 120 }), 60_000);
      py.push(listener);
      const p = kafka.producer({ idempotent: true });
      producers.push(p);
      await p.connect();

      // oslo's consumer reads from the latest offset once it is assigned (and drops what its
      // first poll returns), so probe until one record arrives before sending the real ones.
      await waitFor(
        async () => {
          await p.send({ topic: `${topic}.debug`, acks: -1, messages: [osloRecord({ priority: 'debug', eventType: 'probe', payload: {}, ctx: {}, publisherId: 'probe' })] });
          return listener.events.some((e) => e.event === 'notification' && e.event_type === 'probe');
        },
        { timeoutMs: 40_000, intervalMs: 500, message: "oslo's Kafka listener assigned (a probe record received)" },
      );

      const N = 5;
      const ids = Array.from({ length: N }, () => randomUUID());
      await p.send({
        topic: `${topic}.warn`,
        acks: -1,
        messages: ids.map((id, i) => osloRecord({ priority: 'warn', eventType: 'tidings.test', payload: { i }, ctx: { user: 'u2', request_id: `req-${i}` }, publisherId: 'tidings.js', messageId: id })),
      });
      const got = () => listener.events.filter((e) => e.event === 'notification' && e.event_type === 'tidings.test');
      await waitFor(() => got().length >= N, { timeoutMs: 20_000, message: `${N} notifications at oslo's listener` });
      // oslo's listener runs handlers on a thread pool (executor="threading"): they may report in any order.
      const received = [...got()].sort((a, b) => a.payload.i - b.payload.i);
      expect(received.map((e) => e.payload.i)).toEqual([0, 1, 2, 3, 4]);
      expect(received[0]).toMatchObject({ priority: 'warn', publisher_id: 'tidings.js', ctx: { user: 'u2', request_id: 'req-0' } });
      expect(received.map((e) => e.metadata.message_id)).toEqual(ids);
    });
  }
});
