// Pool inspection on Kafka: a pool is a consumer group, its backlog the high watermarks minus its
// committed offsets. Groups are not listed (ListGroups/DescribeGroups are optional for a broker and
// librdkafka's mock cluster has neither): the default group and the query's pools are looked up by
// name, and consumers cannot be told. Reads only: no topic is created, no group joined.
import type { ResolvedPoolQuery } from '../../contract/addressing.js';
import type { Inspection, PoolView } from '../../contract/inspection.js';
import type { KafkaClientAdapter } from './client/adapter.js';
import { fanoutTopic, notificationTopic, requestTopic } from './topology.js';

/** What Kafka tells here: topics and each named group's backlog; neither the groups nor their members. */
export const KAFKA_INSPECTION: Inspection = Object.freeze({ listsTopics: true, listsPools: false, consumers: false, backlog: true });

/**
 * The default group (`consumerGroup`) and each group of `query.pools` on each address's topic, where
 * the topic exists and the group has committed an offset on it (a group that never committed is
 * not known to exist). `backlog` is the sum over partitions of the high watermark minus the
 * committed offset (the low watermark on a partition without one): records not delivered yet or
 * delivered and not committed yet.
 */
export async function inspectKafkaPools(client: KafkaClientAdapter, query: ResolvedPoolQuery, options: { vhost: string; consumerGroup: string }): Promise<PoolView[]> {
  const topics = query.priorities.map((p) => notificationTopic(query.topic, p, options.vhost));
  const existing = new Set(await client.listTopics());
  const present = topics.filter((t) => existing.has(t));
  if (present.length === 0) return [];
  const groups = [options.consumerGroup, ...query.pools.filter((p) => p !== options.consumerGroup)];
  const backlogs = await Promise.all(groups.map((g) => client.groupBacklog(g, present)));
  const views: PoolView[] = [];
  topics.forEach((topic, i) => {
    groups.forEach((group, k) => {
      const backlog = backlogs[k].get(topic);
      if (backlog !== undefined) views.push({ address: query.addresses[i], pool: group, isDefault: group === options.consumerGroup, backlog });
    });
  });
  return views;
}

/**
 * The RPC topics: topics `T` (without the vhost suffix) whose request topic and fanout topic
 * (`T_fanout`) both exist, which an RPC server of `T` makes. Kafka has no exchanges: servers of
 * every exchange share the topics, so there is no exchange to filter on.
 */
export async function listKafkaRpcTopics(client: KafkaClientAdapter, vhost: string): Promise<string[]> {
  const existing = new Set(await client.listTopics());
  const suffix = fanoutTopic('', vhost);
  const topics = new Set<string>();
  for (const name of existing) {
    if (!name.endsWith(suffix) || name.length === suffix.length) continue;
    const topic = name.slice(0, -suffix.length);
    if (existing.has(requestTopic(topic, undefined, vhost)) && fanoutTopic(topic, vhost) === name) topics.add(topic);
  }
  return [...topics].sort();
}
