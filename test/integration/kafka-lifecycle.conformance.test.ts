// The Kafka conformance suite, part of it (batch listeners, lifecycle, the driver contract, handler timeouts, dead letters): see
// test/support/kafka-conformance.ts for the broker, the clients and why the suite is split.
import { kafkaConformance } from '../support/kafka-conformance.js';

kafkaConformance(['batch', 'lifecycle', 'contract', 'handler-timeout', 'dead-letters']);
