// Live interop on the Kafka test broker (librdkafka's mock cluster, 3 brokers): Python
// oslo.messaging 14's Kafka notifier -> a tidings listener, and a tidings Notifier -> oslo's
// Kafka listener, plain and pooled, once per Kafka client (TIDINGS_KAFKA_CLIENTS).
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { getNotificationListener, getNotificationTransport, Notifier, PRIORITIES, Target, type Context, type NotificationMetadata, type Transport } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { startKafkaMock, type KafkaTestBroker } from '../support/kafka-broker.js';
import { SHORT_GROUP_QUERY } from '../support/kafka-raw.js';
import { PyClient, PyProcess, requireOsloMessaging, startPy } from './support/python.js';

const CLIENTS = (process.env.TIDINGS_KAFKA_CLIENTS ?? 'kafkajs').split(',');

interface Got {
  ctx: Context;
  publisherId: string | null;
  eventType: string;
  payload: { i: number; text?: string };
  metadata: NotificationMetadata;
}

describe.each(CLIENTS)('oslo.messaging Kafka notifications <-> tidings (client %s)', (client) => {
  let broker: KafkaTestBroker;
  const closers: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    requireOsloMessaging();
    broker = await startKafkaMock({ brokers: 3 });
  });

  // Python processes stop after each test: an oslo listener left in oslo_messaging_consumer would
  // share the group with the next test's tidings listener, and librdkafka and tidings offer
  // different partition assignors (not tested here: whether one group can hold both).
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  });

  afterAll(async () => {
    await broker?.stop();
  });

  /** oslo's transport URL form. */
  const osloUrl = () => `kafka://${broker.brokers.join(',')}/`;
  const tidingsUrl = () => `${broker.url}/?client=${client}&${SHORT_GROUP_QUERY}`;
  const transport = async (): Promise<Transport> => {
    const t = await getNotificationTransport(tidingsUrl());
    closers.push(() => t.cleanup());
    return t;
  };
  const py = async <P extends PyProcess>(p: P, timeoutMs?: number): Promise<P> => {
    const started = await startPy(p, timeoutMs);
    closers.push(() => started.stop());
    return started;
  };

  for (const pool of [undefined, 'pool'] as const) {
    it(`oslo's Kafka notifier -> a tidings listener${pool ? ' (pooled)' : ' (oslo_messaging_consumer group)'}`, { timeout: 120_000 }, async () => {
      const topic = uniqueName('oslo-to-tidings');
      const t = await transport();
      const got: Got[] = [];
      const listener = getNotificationListener(
        t,
        [new Target({ topic })],
        [
          {
            info: (ctx: Context, publisherId: string | null, eventType: string, payload: Got['payload'], metadata: NotificationMetadata) => void got.push({ ctx, publisherId, eventType, payload, metadata }),
            error: (ctx: Context, publisherId: string | null, eventType: string, payload: Got['payload'], metadata: NotificationMetadata) => void got.push({ ctx, publisherId, eventType, payload, metadata }),
          },
        ],
        { pool: pool && `${pool}-${randomUUID()}` },
      );
      await listener.start();
      closers.push(async () => {
        await listener.stop();
        await listener.wait();
      });

      const notifier = await py(new PyClient(osloUrl()));
      const N = 5;
      for (let i = 0; i < N; i++) {
        const reply = await notifier.notify({
          driver: 'messagingv2',
          topics: [topic],
          publisherId: 'compute.host-1',
          priority: i === N - 1 ? 'error' : 'info',
          eventType: 'compute.instance.create',
          payload: { i, text: 'héllo' },
          ctx: { user: 'u1', request_id: `req-${i}` },
        });
        expect(reply.ok, JSON.stringify(reply)).toBe(true);
      }
      await waitFor(() => got.length >= N, { timeoutMs: 60_000, message: `${N} oslo notifications at the tidings listener` });
      expect(got.map((g) => g.payload.i).sort()).toEqual([0, 1, 2, 3, 4]);
      const first = got.find((g) => g.payload.i === 0)!;
      expect(first).toMatchObject({ ctx: { user: 'u1', request_id: 'req-0' }, publisherId: 'compute.host-1', eventType: 'compute.instance.create', payload: { text: 'héllo' } });
      expect(first.metadata.message_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(first.metadata.timestamp).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+$/);
      expect(got.find((g) => g.payload.i === N - 1)!.metadata.priority).toBe('error');
    });

    it(`a tidings Notifier -> oslo's Kafka listener${pool ? ' (pooled)' : ' (oslo_messaging_consumer group)'}`, { timeout: 120_000 }, async () => {
      const topic = uniqueName('tidings-to-oslo');
      // oslo's consumer subscribes before any record exists; librdkafka would not see topics
      // created later until its next metadata refresh (5 min), so create them first.
      for (const p of PRIORITIES) await broker.createTopic({ name: `${topic}.${p}`, partitions: 1 });
      const listener = await py(new PyProcess('notify_listener.py', { url: osloUrl(), topics: [topic], pool: pool && `${pool}-${randomUUID()}`, deadline_s: 120 }), 60_000);
      const t = await transport();
      const notifier = new Notifier(t, { publisherId: 'tidings.js', driver: 'messagingv2', topics: [topic] });
      // oslo's consumer reads from the latest offset once assigned and drops its first poll:
      // probe until one arrives before sending the real ones.
      await waitFor(
        async () => {
          await notifier.debug({}, 'probe', {});
          return listener.events.some((e) => e.event === 'notification' && e.event_type === 'probe');
        },
        { timeoutMs: 60_000, intervalMs: 500, message: "oslo's Kafka listener assigned (a probe received)" },
      );
      const N = 5;
      for (let i = 0; i < N; i++) await notifier.warn({ user: 'u2', request_id: `req-${i}` }, 'tidings.test', { i, text: 'héllo' });
      const received = () => listener.events.filter((e) => e.event === 'notification' && e.event_type === 'tidings.test');
      await waitFor(() => received().length >= N, { timeoutMs: 30_000, message: `${N} notifications at oslo's listener` });
      // Unkeyed records spread over the topic's partitions, so order holds only per partition: each
      // notification arrives once, in any order.
      expect(received().map((e) => e.payload.i).sort()).toEqual([0, 1, 2, 3, 4]);
      expect(received().find((e) => e.payload.i === 0)).toMatchObject({ priority: 'warn', publisher_id: 'tidings.js', ctx: { user: 'u2', request_id: 'req-0' }, payload: { text: 'héllo' } });
      expect(received().find((e) => e.payload.i === 0)!.metadata.message_id).toMatch(/^[0-9a-f-]{36}$/);
    });
  }
});
