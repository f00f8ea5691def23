// The Kafka conformance suite, part of it (RPC, reply addresses and malformed messages (and the platformatic known gap)): see
// test/support/kafka-conformance.ts for the broker, the clients and why the suite is split.
import { kafkaConformance } from '../support/kafka-conformance.js';

kafkaConformance(['rpc', 'reply-address', 'malformed']);
