// The conformance suite against a real RabbitMQ with oslo's default (classic, non-durable) queues.
// The suite comes from the package export `tidings/testing` (dist/, built by `npm test`).
import { runConformanceSuite } from 'tidings/testing';
import { rabbitConformanceSubject } from '../support/rabbit-conformance.js';

runConformanceSuite(rabbitConformanceSubject({ name: 'amqp (RabbitMQ)' }));
