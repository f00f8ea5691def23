// The conformance suite against a real RabbitMQ (127.0.0.1:5672 guest/guest). Fails, never
// skips, when RabbitMQ is down. Queues oslo declares as persistent are swept by name prefix.
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-sweep.js';
import { runConformanceSuite } from '../conformance/suite.js';

runConformanceSuite({
  name: 'amqp (RabbitMQ)',
  url: () => RABBIT_URL,
  capabilities: { rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true },
  before: requireRabbitMQ,
  after: (prefix) => deleteRabbitObjectsWithPrefix(prefix),
  timeScale: 2,
});
