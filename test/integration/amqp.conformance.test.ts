// The conformance suite against a real RabbitMQ (127.0.0.1:5672 guest/guest). Fails, never
// skips, when RabbitMQ is down. What oslo declares as persistent (topic and notification
// queues, test exchanges) is swept by name prefix; reply queues (x-expires 30 min) by name.
// The suite comes from the package export `tidings/testing` (dist/, built by `npm test`).
import type { Transport } from 'tidings';
import { runConformanceSuite } from 'tidings/testing';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix, deleteRabbitQueues, publishRawToRabbit } from '../support/rabbit-admin.js';

const transports: Transport[] = [];

runConformanceSuite({
  name: 'amqp (RabbitMQ)',
  url: () => RABBIT_URL,
  capabilities: { rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true },
  before: requireRabbitMQ,
  onTransport: (t) => void transports.push(t),
  async after(prefix) {
    await deleteRabbitObjectsWithPrefix(prefix);
    const replyQueues = transports.map((t) => (t.driver as { replyQueue?: string }).replyQueue).filter((q): q is string => !!q);
    await deleteRabbitQueues(replyQueues);
  },
  publishRaw: (_url, exchange, routingKey, body) => publishRawToRabbit(exchange, routingKey, body),
  timeScale: 2,
});
