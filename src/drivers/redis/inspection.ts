// Pool inspection on Redis: XINFO GROUPS on the notification streams of an address (every shard)
// lists every pool with its consumers, lag and pending entries; SCAN over the RPC stream keys
// lists the RPC topics. Reads only: nothing is created.
import type { ResolvedPoolQuery } from '../../contract/addressing.js';
import type { Inspection, PoolView } from '../../contract/inspection.js';
import type { RedisClient } from './connection.js';
import { toMessagingError } from './errors.js';
import { DEFAULT_GROUP, poolOfGroup, rpcStreamPattern, rpcTopicOfStream, topicShards } from './topology.js';

/** What Redis tells: every pool (a group), its consumers and lag; RPC topics by SCAN. */
export const REDIS_INSPECTION: Inspection = Object.freeze({ listsTopics: true, listsPools: true, consumers: true, backlog: true });

/** Keys asked for per SCAN call. */
const SCAN_COUNT = 1000;
/** SCAN calls per node at most: a keyspace of ~10 M keys. Past it the list is what was found. */
const SCAN_CALLS_MAX = 10_000;
/** Topics listed at most. */
const TOPICS_MAX = 10_000;

/** One group's counters on one stream. */
interface GroupInfo {
  readonly name: string;
  readonly consumers: number;
  readonly pending: number;
  /** Entries not read by the group yet; undefined where Redis cannot tell (entries deleted in range). */
  readonly lag: number | undefined;
}

/** XINFO GROUPS of `key`, or undefined when the stream does not exist. */
async function groupsOf(cmd: RedisClient, key: string): Promise<GroupInfo[] | undefined> {
  let reply: unknown;
  try {
    reply = await cmd.call('XINFO', 'GROUPS', key);
  } catch (err) {
    if (/no such key/i.test(err instanceof Error ? err.message : String(err))) return undefined;
    throw toMessagingError(err, `Could not inspect the stream ${key}`);
  }
  return (reply as unknown[][]).map((fields) => {
    const get = (name: string): unknown => fields[fields.indexOf(name) + 1];
    const lag = get('lag');
    return { name: String(get('name')), consumers: Number(get('consumers')), pending: Number(get('pending')), lag: lag === null || lag === undefined ? undefined : Number(lag) };
  });
}

/**
 * Every group of each address's notification streams, summed over the topic's shards: the
 * default group (`pool` = its name) and one per pool. `backlog` is the group's lag (entries not
 * delivered to it yet), `unacked` its pending entries. Streams that do not exist are left out.
 */
export async function inspectRedisPools(cmd: RedisClient, query: ResolvedPoolQuery, keyPrefix: string, shards: number): Promise<PoolView[]> {
  const keys = topicShards(keyPrefix, query.exchange, query.topic, shards);
  const perAddress = await Promise.all(
    query.priorities.map(async (priority, i) => {
      const address = query.addresses[i];
      const streams = await Promise.all(keys.map((k) => groupsOf(cmd, k.notificationStream(priority))));
      const byGroup = new Map<string, { consumers: number; pending: number; lag: number | undefined }>();
      for (const groups of streams) {
        for (const g of groups ?? []) {
          if (g.name !== DEFAULT_GROUP && poolOfGroup(g.name) === undefined) continue;
          const sum = byGroup.get(g.name);
          byGroup.set(g.name, sum === undefined ? { ...g } : { consumers: sum.consumers + g.consumers, pending: sum.pending + g.pending, lag: sum.lag === undefined || g.lag === undefined ? undefined : sum.lag + g.lag });
        }
      }
      return [...byGroup].map(([group, g]): PoolView => ({ address, pool: poolOfGroup(group) ?? group, isDefault: group === DEFAULT_GROUP, consumers: g.consumers, ...(g.lag === undefined ? {} : { backlog: g.lag }), unacked: g.pending }));
    }),
  );
  return perAddress.flat();
}

/** The nodes to SCAN: every master of a Cluster, else the client itself. */
function scanNodes(cmd: RedisClient): RedisClient[] {
  return 'nodes' in cmd && typeof cmd.nodes === 'function' && cmd.isCluster ? cmd.nodes('master') : [cmd];
}

/** The RPC topics of `exchange`: the shared RPC streams under the key prefix, by SCAN MATCH with COUNT on every master. */
export async function listRedisRpcTopics(cmd: RedisClient, keyPrefix: string, exchange: string): Promise<string[]> {
  const pattern = rpcStreamPattern(keyPrefix, exchange);
  const topics = new Set<string>();
  try {
    for (const node of scanNodes(cmd)) {
      let cursor = '0';
      for (let calls = 0; calls < SCAN_CALLS_MAX && topics.size < TOPICS_MAX; calls++) {
        const [next, found] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
        for (const key of found) {
          const topic = rpcTopicOfStream(keyPrefix, exchange, key);
          if (topic !== undefined) topics.add(topic);
        }
        cursor = next;
        if (cursor === '0') break;
      }
    }
  } catch (err) {
    throw toMessagingError(err, 'Could not list the RPC topics');
  }
  return [...topics].sort();
}
