// The Kafka conformance suite, part of it (notifications: priorities, pools, store and forward, requeue, stopping): see
// test/support/kafka-conformance.ts for the broker, the clients and why the suite is split.
import { kafkaConformance } from '../support/kafka-conformance.js';

kafkaConformance(['notify']);
