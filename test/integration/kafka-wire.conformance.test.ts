// The Kafka conformance suite, part of it (health and discovery, wire features, the delivery contract): see
// test/support/kafka-conformance.ts for the broker, the clients and why the suite is split.
import { kafkaConformance } from '../support/kafka-conformance.js';

kafkaConformance(['health', 'wire', 'delivery']);
