// The conformance suite against a real RabbitMQ with `rabbit_stream_fanout=true` (and
// `rabbit_transient_quorum_queue=true`, which oslo requires with it): every topic's fanout casts
// go through one shared stream `<topic>_fanout` read by each server from its own offset, reply
// queues are durable quorum queues. The streams are swept with the run's prefix. The parts that
// use fanout (casts and calls to all servers, discovery's ping, servers stopping and starting):
// notifications do not touch the streams, and the one-node files run those parts already.
import { runConformanceSuite } from 'tidings/testing';
import { rabbitConformanceSubject } from '../support/rabbit-conformance.js';

runConformanceSuite(
  rabbitConformanceSubject({
    name: 'amqp (RabbitMQ, streams)',
    query: 'rabbit_stream_fanout=true&rabbit_transient_quorum_queue=true',
    parts: ['rpc', 'health', 'lifecycle'],
  }),
);
