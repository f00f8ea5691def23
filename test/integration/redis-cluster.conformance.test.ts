// The conformance suite against a throwaway 3-master + 3-replica Redis Cluster on loopback ports
// (test/support/redis-servers.ts), then a hot topic with `?shards=3` spread over every master.
// The suite comes from the package export `tidings/testing` (dist/, built by `npm test`).
import { randomUUID } from 'node:crypto';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { runConformanceSuite } from 'tidings/testing';

import type { RedisDriver } from '../../src/drivers/redis/index.js';
import { replyKey, topicShards, TopicKeys } from '../../src/drivers/redis/topology.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcServer } from '../../src/rpc/server.js';
import { Target } from '../../src/core/target.js';
import { getNotificationTransport, getRpcTransport, type Transport } from '../../src/transport.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { countDeliveries, streamFor } from '../support/redis-keys.js';
import { keyslot, redisCommand, redisCommands, startRedisCluster, type RedisCluster } from '../support/redis-servers.js';

const body = (id: number) => ({ message_id: `m${id}`, publisher_id: 'p', event_type: 'ev', priority: 'INFO', timestamp: 't', payload: { id } });

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
  capabilities: { rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true, deadLetters: true },
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

describe('redis cluster: ?shards=3 spreads a hot topic over every master', () => {
  const transports: Transport[] = [];
  afterAll(async () => {
    await Promise.all(transports.map((t) => t.cleanup()));
  });

  it('each shard stream lives on a different master, holds a third of the entries, and a listener gets every notification once', async () => {
    const prefix = `${PREFIX}-sh`;
    const url = `${cluster!.url}&key_prefix=${prefix}&shards=3`;
    const topic = uniqueName('hot');
    const total = 600;
    const notifier = await getNotificationTransport(url);
    transports.push(notifier);
    const d = notifier.driver as RedisDriver;
    // Sent before any listener: the default group on every shard keeps them (store-and-forward).
    await Promise.all(Array.from({ length: total }, (_, i) => d.sendNotification(new Target({ topic: `${topic}.info` }), {}, body(i))));

    const streams = topicShards(prefix, 'openstack', topic, 3).map((k) => k.notificationStream('info'));
    const ports: number[] = [];
    for (const key of streams) {
      const port = await cluster!.masterPortForKey(key);
      // The server agrees with the slot the test computes, and the entries really are on that master.
      expect(await redisCommand(port, ['CLUSTER', 'KEYSLOT', key])).toBe(keyslot(key));
      expect(await redisCommand(port, ['XLEN', key])).toBe(total / 3);
      ports.push(port);
    }
    expect(new Set(ports).size).toBe(3);
    const masters = (await cluster!.masters()).map((m) => m.port);
    expect([...ports].sort()).toEqual([...masters].sort());
    const perMaster = await cluster!.countKeysPerMaster(`${prefix}:*`);
    for (const port of masters) expect(perMaster.get(port)).toBeGreaterThan(0);
    // Pool inspection sums the default group over the three shards (XINFO GROUPS on each master).
    expect(await d.inspectPools({ topic, priorities: ['info', 'error'] })).toEqual([{ address: `${topic}.info`, pool: 'default', isDefault: true, consumers: 0, backlog: total, unacked: 0 }]);

    const listenerT = await getNotificationTransport(url);
    transports.push(listenerT);
    const { listener: l, counts: seen } = await countDeliveries(listenerT.driver, topic);
    await waitFor(() => seen.size === total, { timeoutMs: 30_000, message: `all ${total} notifications from three shards` });
    // A little longer for a duplicate to show up, bounded by the acknowledgements reaching Redis.
    await waitFor(async () => {
      for (const key of streams) if (Number((((await redisCommand(await cluster!.masterPortForKey(key), ['XPENDING', key, 'default'])) as unknown[])[0])) !== 0) return false;
      return true;
    }, { timeoutMs: 10_000, message: 'every shard acknowledged' });
    expect([...seen.values()].filter((n) => n !== 1)).toEqual([]);
    expect(await d.inspectPools({ topic, priorities: ['info'] })).toEqual([{ address: `${topic}.info`, pool: 'default', isDefault: true, consumers: expect.any(Number), backlog: 0, unacked: 0 }]);
    await l.cleanup();
  });

  it('RPC calls round-robin over three shards on three masters and all succeed', async () => {
    const url = `${cluster!.url}&key_prefix=${PREFIX}-shrpc&shards=3`;
    const topic = uniqueName('rpc');
    const serverT = await getRpcTransport(url);
    const clientT = await getRpcTransport(url);
    transports.push(serverT, clientT);
    const server = getRpcServer(serverT, new Target({ topic, server: 's1' }), [{ echo: (_c: unknown, a: unknown) => a }]);
    await server.start();
    const client = getRpcClient(clientT, { topic }, { timeout: 10_000 });
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => client.call({}, 'echo', { i })));
    expect(results).toEqual(Array.from({ length: 30 }, (_, i) => ({ i })));
    // The topic's three shard streams are on three masters: SCAN on every master finds it, once.
    expect((await clientT.driver.listRpcTopics())?.filter((t) => t === topic)).toEqual([topic]);
    expect(await clientT.driver.listRpcTopics('other-exchange')).toEqual([]);
    await server.stop();
    await server.wait();
  });

  it('listRpcTopics finds topics on every master (a SCAN on each), once each', async () => {
    const prefix = `${PREFIX}-scan`;
    const url = `${cluster!.url}&key_prefix=${prefix}`;
    // One topic whose RPC stream lives on each master.
    const byMaster = new Map<number, string>();
    for (let i = 0; i < 200 && byMaster.size < 3; i++) {
      const topic = uniqueName('scan');
      const port = await cluster!.masterPortForKey(new TopicKeys(prefix, 'openstack', topic).topicStream);
      if (!byMaster.has(port)) byMaster.set(port, topic);
    }
    expect(byMaster.size).toBe(3);
    const t = await getRpcTransport(url);
    transports.push(t);
    const servers = [...byMaster.values()].map((topic) => getRpcServer(t, new Target({ topic, server: 's1' }), [{}]));
    for (const s of servers) await s.start();
    expect(await t.driver.listRpcTopics()).toEqual([...byMaster.values()].sort());
    for (const s of servers) await s.stop().then(() => s.wait());
  });

  it('wait_replicas=1 on the cluster: each send waits for its master\'s replica, and they all arrive', async () => {
    const url = `${cluster!.url}&key_prefix=${PREFIX}-wait&shards=3&wait_replicas=1&wait_timeout_ms=5000`;
    const topic = uniqueName('wait');
    const t = await getNotificationTransport(url);
    transports.push(t);
    const d = t.driver as RedisDriver;
    await Promise.all(Array.from({ length: 60 }, (_, i) => d.sendNotification(new Target({ topic: `${topic}.info` }), {}, body(i))));
    const streams = topicShards(`${PREFIX}-wait`, 'openstack', topic, 3).map((k) => k.notificationStream('info'));
    for (const key of streams) {
      const master = await cluster!.masterPortForKey(key);
      const [replica] = (await cluster!.masters()).find((m) => m.port === master)!.replicaPorts;
      // WAIT returned only once the replica had them: they are there without waiting here.
      // READONLY: a cluster replica answers reads of its master's slots instead of redirecting.
      expect((await redisCommands(replica, [['READONLY'], ['XLEN', key]]))[1]).toBe(20);
    }
  });
});
