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
  /**
   * A private broker instead of the machine's (e.g. a test cluster): the transport URL without
   * its query, and the AMQP URL raw publishes go to, read when the suite runs. Nothing is swept
   * afterwards: the broker goes away with its data.
   */
  broker?: { url: () => string; rawUrl: () => string; before?: () => Promise<void> };
  parts?: ConformanceSubject['parts'];
}

export function rabbitConformanceSubject(o: RabbitSubjectOptions): ConformanceSubject {
  const transports: Transport[] = [];
  const base = o.broker?.url ?? (() => RABBIT_URL);
  const url = () => (o.query ? `${base()}?${o.query}` : base());
  const transportOptions: TransportOptions | undefined = o.controlExchange ? { controlExchange: o.controlExchange } : undefined;
  const exchangeOf = (exchange: string) => (exchange === 'openstack' && o.controlExchange ? o.controlExchange : exchange);
  return {
    name: o.name,
    url,
    capabilities: { rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true, deadLetters: true },
    transportOptions,
    before: o.broker?.before ?? requireRabbitMQ,
    onTransport: (t) => void transports.push(t),
    async after(prefix) {
      if (o.broker) return;
      await deleteRabbitObjectsWithPrefix(prefix);
      if (o.controlExchange) await deleteRabbitObjectsWithPrefix(o.controlExchange);
      const replyQueues = transports.map((t) => (t.driver as { replyQueue?: string }).replyQueue).filter((q): q is string => !!q);
      await deleteRabbitQueues(replyQueues);
    },
    publishRaw: (_url, exchange, routingKey, body) => publishRawToRabbit(exchangeOf(exchange), routingKey, body, o.broker?.rawUrl()),
    timeScale: 2,
    parts: o.parts,
  };
}
