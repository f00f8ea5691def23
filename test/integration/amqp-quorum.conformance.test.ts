// The conformance suite against a real RabbitMQ with `rabbit_quorum_queue=true` (oslo's name):
// topic, server and notification queues are quorum queues (durable, as oslo forces), reply and
// fanout queues stay classic and transient as in oslo 14.0.3. The topic exchanges are durable
// then, so the run has its own control exchange: the broker's `openstack` exchange, declared
// non-durable by every classic client, would refuse a durable declaration (PRECONDITION_FAILED),
// exactly as it refuses Python oslo.messaging switched to quorum queues.
import { randomUUID } from 'node:crypto';
import { runConformanceSuite } from 'tidings/testing';
import { rabbitConformanceSubject } from '../support/rabbit-conformance.js';

runConformanceSuite(
  rabbitConformanceSubject({
    name: 'amqp (RabbitMQ, quorum queues)',
    query: 'rabbit_quorum_queue=true',
    controlExchange: `tconfq-openstack-${randomUUID().slice(0, 8)}`,
  }),
);
