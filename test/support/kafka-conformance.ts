// The conformance suite against the Kafka test broker (librdkafka's mock cluster, 3 brokers; or
// the cluster KAFKA_BROKERS names), once per client library (TIDINGS_KAFKA_CLIENTS, default
// both). Each test gets its own default consumer group through the URL, so tests never
// rebalance each other's listeners. A group join takes ~3 s on the mock, so the whole suite takes
// ~9 minutes: it runs as four files (kafka-*.conformance.test.ts), each with some parts of the
// suite and a mock cluster of its own, side by side.
//
// Known gap: @platformatic/kafka 1.35 speaks only the API versions of Kafka 3.5+ (ApiVersions v3,
// Metadata v9, Fetch v12, JoinGroup v6, OffsetCommit v8, FindCoordinator v4, ...), and the mock of
// Debian's librdkafka 2.0.2 answers at most ApiVersions v2, Metadata v2, Fetch v11, JoinGroup v5:
// the two share no version of most APIs, so no case can run with client=platformatic on the mock.
// There the suite is replaced by a test asserting exactly that refusal (in the file running the
// `rpc` part); with KAFKA_BROKERS (a real cluster) both clients run the whole suite.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { getNotificationListener, getNotificationTransport, NotSupportedError, Notifier, Target } from 'tidings';
import { runConformanceSuite, type ConformancePart } from 'tidings/testing';
import { RawKafka, SHORT_GROUP_QUERY } from './kafka-raw.js';
import { externalKafkaBrokers, startKafkaMock, type KafkaTestBroker } from './kafka-broker.js';

const CLIENTS = (process.env.TIDINGS_KAFKA_CLIENTS ?? 'kafkajs,platformatic').split(',');

/** Registers `parts` of the conformance suite for each Kafka client library, on a mock cluster of their own. */
export function kafkaConformance(parts: readonly ConformancePart[]): void {
  for (const client of CLIENTS) {
    if (client === 'platformatic' && externalKafkaBrokers() === undefined) {
      if (!parts.includes('rpc')) continue;
      describe('kafka (platformatic, librdkafka mock cluster): known gap', () => {
        it('refuses at once with NotSupportedError naming the API versions it needs; nothing is sent', async () => {
          const broker = await startKafkaMock({ brokers: 1 });
          const transport = await getNotificationTransport(`${broker.url}/?client=platformatic&${SHORT_GROUP_QUERY}`);
          try {
            const send = new Notifier(transport, { publisherId: 'p', driver: 'messagingv2', topics: [`t-${randomUUID()}`] }).info({}, 'ev', {});
            await expect(send).rejects.toThrow(NotSupportedError);
            await expect(send).rejects.toThrow(/does not support the Kafka API versions @platformatic\/kafka needs \(Kafka 3\.5 or later\)/);
            const listener = getNotificationListener(transport, [new Target({ topic: `t-${randomUUID()}` })], [{ info() {} }]);
            await expect(listener.start()).rejects.toThrow(NotSupportedError);
          } finally {
            await transport.cleanup();
            await broker.stop();
          }
        });
      });
      continue;
    }
    let broker: KafkaTestBroker | undefined;
    let raw: RawKafka | undefined;
    runConformanceSuite({
      name: `kafka (${client}, ${externalKafkaBrokers() ? 'KAFKA_BROKERS' : 'librdkafka mock cluster'}): ${parts.join(', ')}`,
      parts,
      url: () => `${broker!.url}/?client=${client}&consumer_group=tconf-g-${randomUUID()}&${SHORT_GROUP_QUERY}&rpc_max_wait_ms=20`,
      capabilities: { rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true, stopHandsOver: false, deadLetters: true },
      async before() {
        broker = await startKafkaMock({ brokers: 3 });
        raw = new RawKafka(broker.brokers);
      },
      async after() {
        await raw?.close();
        await broker?.stop();
      },
      // Kafka has no exchanges (oslo ignores them): the routing key is the topic.
      publishRaw: (_url, _exchange, routingKey, body) => raw!.publish(routingKey, [{ value: body }]),
      // A group join takes about 3 s on the mock, a rebalance about 5 s. The mock answers a fetch
      // only after its whole max wait (a real broker answers when a record arrives): rpc_max_wait_ms=20
      // keeps RPC round trips short.
      timeScale: 3,
      // A listener cleaned up while a group is rebalancing waits for the rebalance to end before it
      // leaves (kafkajs), once seen past 20 s on top of the case's own waits: 150 s, not 90.
      testTimeout: 150_000,
    });
  }
}
