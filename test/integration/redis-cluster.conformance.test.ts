// The conformance suite against a throwaway 3-master + 3-replica Redis Cluster on loopback ports
// (test/support/redis-servers.ts), then a hot topic with `?shards=3` spread over every master.
// The suite comes from the package export `tidings/testing` (dist/, built by `npm test`).
import { randomUUID } from 'node:crypto';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';

import { runConformanceSuite } from 'tidings/testing';

import { replyKey } from '../../src/drivers/redis/topology.js';
import { streamFor } from '../support/redis-keys.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-servers.js';

const PREFIX = `tconf-rcluster-${randomUUID().slice(0, 8)}`;
let cluster: RedisCluster | undefined;

/** A raw ioredis Cluster client on the test cluster; the caller disconnects it. */
function rawCluster(c: RedisCluster): Cluster {
  const client = new Cluster(c.startupNodes, { lazyConnect: true });
  client.on('error', () => {});
  return client;
}

// One cluster for the whole file: the suite and the sharding test below share it.
beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1 });
}, 90_000);
afterAll(async () => {
  await cluster?.stop();
});

runConformanceSuite({
  name: 'redis (Redis Cluster, 3 masters + 3 replicas)',
  url: () => `${cluster!.url}&key_prefix=${PREFIX}`,
  capabilities: { rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true },
  before: async () => {
    if (!cluster) throw new Error('the test Redis Cluster did not start (see beforeAll)');
  },
  publishRaw: async (_url, exchange, routingKey, body) => {
    const client = rawCluster(cluster!);
    try {
      if (exchange === '' && routingKey.startsWith('reply_')) await client.rpush(replyKey(PREFIX, routingKey), body);
      else await client.xadd(streamFor(PREFIX, exchange, routingKey), '*', 'b', body);
    } finally {
      client.disconnect();
    }
  },
  timeScale: 3,
});
