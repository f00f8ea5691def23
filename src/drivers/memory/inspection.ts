// Pool inspection on the in-process broker: it sees every binding, queue and message, so it
// tells everything (topics, every pool, consumers, per-address backlog), and creates nothing.
import { fanoutAddress, notificationQueueName } from '../../contract/addressing.js';
import type { ResolvedPoolQuery } from '../../contract/addressing.js';
import type { Inspection, PoolView } from '../../contract/inspection.js';
import type { MemoryBroker } from './memory-broker.js';

/** What memory:// can tell: everything. */
export const MEMORY_INSPECTION: Inspection = Object.freeze({ listsTopics: true, listsPools: true, consumers: true, backlog: true });

/**
 * Every queue bound to each address of the query: the default queue (named like the address) and
 * pool queues (named like the pool). Counts are of the messages published to that address only,
 * so a pool queue bound to several addresses is split exactly.
 */
export function inspectMemoryPools(broker: MemoryBroker, query: ResolvedPoolQuery): PoolView[] {
  const views: PoolView[] = [];
  for (const address of query.addresses) {
    const defaultQueue = notificationQueueName(address, undefined);
    const bound = broker.boundQueues(query.exchange, address).sort((a, b) => (a === defaultQueue ? -1 : b === defaultQueue ? 1 : a.localeCompare(b)));
    for (const queue of bound) {
      const counts = broker.queueCountsFor(queue, address);
      if (!counts) continue;
      views.push({ address, pool: queue, isDefault: queue === defaultQueue, consumers: counts.consumers, backlog: counts.ready, unacked: counts.unacked });
    }
  }
  return views;
}

/** The RPC topics of `exchange`: routing keys whose queue of the same name is bound and whose `<topic>_fanout` exchange exists. */
export function listMemoryRpcTopics(broker: MemoryBroker, exchange: string): string[] {
  const topics = broker.routingKeys(exchange).filter((key) => broker.hasExchange(fanoutAddress(key)) && broker.boundQueues(exchange, key).includes(key));
  return [...new Set(topics)].sort();
}
