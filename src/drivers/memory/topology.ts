// The exchanges, queues and bindings memory:// declares: oslo's rabbit topology (oslo-wire.md
// §1.2) on the in-process broker, so memory:// routes exactly like rabbit://.
import { fanoutAddress, newFanoutQueueName, notificationQueueName, serverAddress, topicAddress } from '../../driver/addressing.js';
import type { MemoryBroker } from './memory-broker.js';

/** What an RPC server consumes: the shared and server queues, and its private fanout queue. */
export interface RpcServerQueues {
  readonly shared: readonly string[];
  /** `<topic>_fanout_<hex>`: deleted when the server's listener is cleaned up. */
  readonly fanout: string;
}

/** `<topic>` (and `<topic>.<server>`) on `exchange`, and a private queue on `<topic>_fanout`. */
export function declareRpcServer(broker: MemoryBroker, exchange: string, topic: string, server: string | undefined): RpcServerQueues {
  broker.declareExchange(exchange, 'topic');
  const shared = server === undefined ? [topicAddress(topic)] : [topicAddress(topic), serverAddress(topic, server)];
  for (const key of shared) {
    broker.declareQueue(key);
    broker.bindQueue(key, exchange, key);
  }
  const fanoutExchange = fanoutAddress(topic);
  const fanout = newFanoutQueueName(topic);
  broker.declareExchange(fanoutExchange, 'fanout');
  broker.declareQueue(fanout);
  broker.bindQueue(fanout, fanoutExchange, topic);
  return { shared, fanout };
}

/**
 * The queues a notification listener consumes for its `[exchange, address]` pairs: the shared
 * queue of each address, or with a pool the one queue named like the pool, bound to every address.
 */
export function declareNotificationQueues(broker: MemoryBroker, bindings: ReadonlyArray<readonly [string, string]>, pool: string | undefined): string[] {
  const queues = new Set<string>();
  for (const [exchange, address] of bindings) {
    const queue = notificationQueueName(address, pool);
    broker.declareExchange(exchange, 'topic');
    broker.declareQueue(queue);
    broker.bindQueue(queue, exchange, address);
    queues.add(queue);
  }
  return [...queues];
}

/** What a notifier declares before publishing: the shared queue of `address`, so notifications wait for a listener. */
export function declareNotificationTarget(broker: MemoryBroker, exchange: string, address: string): void {
  broker.declareExchange(exchange, 'topic');
  const queue = notificationQueueName(address, undefined);
  broker.declareQueue(queue);
  broker.bindQueue(queue, exchange, address);
}

/** Where a request goes: the topic exchange, or the fanout exchange of a fanout cast. */
export function declareRequestExchange(broker: MemoryBroker, exchange: string, fanout: boolean): void {
  broker.declareExchange(exchange, fanout ? 'fanout' : 'topic');
}
