// The conformance suite against the Kafka test broker (librdkafka's mock cluster, 3 brokers; or
// the cluster KAFKA_BROKERS names), once per client library (kafkajs; TIDINGS_KAFKA_CLIENTS
// lists others once their adapter exists). Each test gets its own default
// consumer group through the URL, so tests never rebalance each other's listeners.
import { randomUUID } from 'node:crypto';
import { runConformanceSuite } from 'tidings/testing';
import { RawKafka, SHORT_GROUP_QUERY } from '../support/kafka-raw.js';
import { startKafkaMock, type KafkaTestBroker } from '../support/kafka-broker.js';

const CLIENTS = (process.env.TIDINGS_KAFKA_CLIENTS ?? 'kafkajs').split(',');

for (const client of CLIENTS) {
  let broker: KafkaTestBroker | undefined;
  let raw: RawKafka | undefined;
  runConformanceSuite({
    name: `kafka (${client}, librdkafka mock cluster)`,
    url: () => `${broker!.url}/?client=${client}&consumer_group=tconf-g-${randomUUID()}&${SHORT_GROUP_QUERY}&rpc_max_wait_ms=20`,
    capabilities: { rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true },
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
  });
}
