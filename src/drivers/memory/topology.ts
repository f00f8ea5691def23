// The exchanges, queues and bindings memory:// declares: oslo's rabbit topology (oslo-wire.md
// §1.2) on the in-process broker, so memory:// routes exactly like rabbit://.
import { fanoutAddress, newFanoutQueueName, notificationQueueName, serverAddress, topicAddress } from '../../contract/addressing.js';
import type { MemoryBroker } from './memory-broker.js';

/** What a listener consumes, and which of those queues are its own (deleted on its cleanup). */
export interface ListenerQueues {
  readonly queues: readonly string[];
  readonly privateQueues: readonly string[];
}

/** Declares `queue` and binds it to `exchange` under `key`. */
function declareBound(broker: MemoryBroker, queue: string, exchange: string, key: string, type: 'topic' | 'fanout' = 'topic'): void {
  broker.declareExchange(exchange, type);
  broker.declareQueue(queue);
  broker.bindQueue(queue, exchange, key);
}

/** An RPC server: `<topic>` (and `<topic>.<server>`) on `exchange`, and a private `<topic>_fanout_<hex>` on `<topic>_fanout`. */
export function declareRpcServer(broker: MemoryBroker, exchange: string, topic: string, server: string | undefined): ListenerQueues {
  const shared = server === undefined ? [topicAddress(topic)] : [topicAddress(topic), serverAddress(topic, server)];
  for (const key of shared) declareBound(broker, key, exchange, key);
  const fanout = newFanoutQueueName(topic);
  declareBound(broker, fanout, fanoutAddress(topic), topic, 'fanout');
  return { queues: [...shared, fanout], privateQueues: [fanout] };
}

/**
 * A notification listener on `[exchange, address]` pairs: the shared queue of each address, or
 * with a pool the one queue named like the pool, bound to every address.
 */
export function declareNotificationQueues(broker: MemoryBroker, bindings: ReadonlyArray<readonly [string, string]>, pool: string | undefined): ListenerQueues {
  const queues = new Set<string>();
  for (const [exchange, address] of bindings) {
    const queue = notificationQueueName(address, pool);
    declareBound(broker, queue, exchange, address);
    queues.add(queue);
  }
  return { queues: [...queues], privateQueues: [] };
}

/** What a notifier declares before publishing: the shared queue of `address`, so notifications wait for a listener. */
export function declareNotificationTarget(broker: MemoryBroker, exchange: string, address: string): void {
  declareBound(broker, notificationQueueName(address, undefined), exchange, address);
}

/** Where a request goes: the topic exchange, or the fanout exchange of a fanout cast. */
export function declareRequestExchange(broker: MemoryBroker, exchange: string, fanout: boolean): void {
  broker.declareExchange(exchange, fanout ? 'fanout' : 'topic');
}
