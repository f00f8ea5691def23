// The conformance subject of the RabbitMQ driver (127.0.0.1:5672 guest/guest), shared by the
// conformance files that run it with different queue settings (classic, quorum). Fails, never
// skips, when RabbitMQ is down. What oslo declares as persistent (topic and notification queues,
// test exchanges) is swept by name prefix; reply queues (x-expires 30 min) by name.
import type { Transport, TransportOptions } from 'tidings';
import type { ConformanceSubject } from 'tidings/testing';
import { RABBIT_URL, requireRabbitMQ } from './brokers.js';
import { deleteRabbitObjectsWithPrefix, deleteRabbitQueues, publishRawToRabbit } from './rabbit-admin.js';

export interface RabbitSubjectOptions {
  /** Suite title. */
  name: string;
  /** Query appended to RABBIT_URL, e.g. `rabbit_quorum_queue=true`. */
  query?: string;
  /**
   * A control exchange of the run instead of oslo's `openstack` (which the raw publishes of the
   * suite then go to): needed when the options declare exchanges differently from the
   * `openstack` exchange the machine's broker already has (durable under quorum queues).
   * Deleted after the run.
   */
  controlExchange?: string;
}

export function rabbitConformanceSubject(o: RabbitSubjectOptions): ConformanceSubject {
  const transports: Transport[] = [];
  const url = o.query ? `${RABBIT_URL}?${o.query}` : RABBIT_URL;
  const transportOptions: TransportOptions | undefined = o.controlExchange ? { controlExchange: o.controlExchange } : undefined;
  return {
    name: o.name,
    url: () => url,
    capabilities: { rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true, deadLetters: true },
    transportOptions,
    before: requireRabbitMQ,
    onTransport: (t) => void transports.push(t),
    async after(prefix) {
      await deleteRabbitObjectsWithPrefix(prefix);
      if (o.controlExchange) await deleteRabbitObjectsWithPrefix(o.controlExchange);
      const replyQueues = transports.map((t) => (t.driver as { replyQueue?: string }).replyQueue).filter((q): q is string => !!q);
      await deleteRabbitQueues(replyQueues);
    },
    publishRaw: (_url, exchange, routingKey, body) => publishRawToRabbit(exchange === 'openstack' && o.controlExchange ? o.controlExchange : exchange, routingKey, body),
    timeScale: 2,
  };
}
