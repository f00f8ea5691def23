// Self-test of test/support/redis-servers.ts: the throwaway standalone, Cluster and Sentinel
// topologies that the Redis driver's tests run on behave as those tests assume.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../src/testing/wait.js';
import {
  hashTagsOnEveryMaster,
  keyslot,
  redisCommand,
  redisCommands,
  redisInfo,
  RedisReplyError,
  startRedisCluster,
  startRedisSentinel,
  startRedisServer,
  type RedisCluster,
  type RedisSentinelGroup,
  type RedisServer,
} from '../support/redis-servers.js';
import { generateTlsMaterial } from '../support/tls.js';

function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** An ioredis client that does not print "Unhandled error event" while a test kills its server. */
function quiet<T extends Redis | Cluster>(client: T): T {
  client.on('error', () => {});
  return client;
}

describe('test Redis servers: standalone', () => {
  const servers: RedisServer[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  it('appendonly+always keeps data across restart() and a SIGKILL; stop() ends the process and removes the dir', async () => {
    const server = await startRedisServer({ appendonly: true, appendfsync: 'always' });
    servers.push(server);
    expect(server.port).not.toBe(6379);
    expect(server.url).toBe(`redis://127.0.0.1:${server.port}/`);
    const key = `t-${randomUUID()}`;
    const client = quiet(new Redis(server.url, { lazyConnect: true }));
    try {
      await client.set(key, 'before-restart');
      const firstPid = server.pid;
      await server.restart();
      expect(server.pid).not.toBe(firstPid);
      expect(alive(firstPid)).toBe(false);
      expect(await redisCommand(server.port, ['GET', key])).toBe('before-restart');

      await client.set(key, 'before-kill');
      await server.kill('SIGKILL');
      expect(server.running).toBe(false);
      await server.restart();
      expect(await redisCommand(server.port, ['GET', key])).toBe('before-kill');
    } finally {
      client.disconnect();
    }

    const { pid, dir } = server;
    expect(existsSync(`${dir}/redis.log`)).toBe(true);
    await server.stop();
    expect(alive(pid)).toBe(false);
    expect(existsSync(dir)).toBe(false);
  });

  it('password and ACL user: the URL carries them, an unauthenticated client is refused', async () => {
    const server = await startRedisServer({ password: 'p@ss word', user: { name: 'alice', password: 'alice-pw' }, maxmemory: '8mb', maxmemoryPolicy: 'noeviction' });
    servers.push(server);
    expect(server.url).toBe(`redis://alice:alice-pw@127.0.0.1:${server.port}/`);
    const [reply] = await redisCommands(server.port, [['PING']]);
    expect(reply).toBeInstanceOf(RedisReplyError);
    expect(String((reply as Error).message)).toMatch(/NOAUTH/);
    const client = quiet(new Redis(server.url, { lazyConnect: true }));
    try {
      expect(await client.call('ACL', 'WHOAMI')).toBe('alice');
      expect(await client.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    } finally {
      client.disconnect();
    }
    await server.stop();
  });

  it('tls: rediss:// URL, a client certificate required when authClients', async () => {
    const certs = mkdtempSync(join(tmpdir(), 'tidings-redis-tls-'));
    try {
      const m = generateTlsMaterial(certs);
      const server = await startRedisServer({ tls: { ...m, authClients: true } });
      servers.push(server);
      expect(server.url).toBe(`rediss://127.0.0.1:${server.port}/`);
      const client = quiet(new Redis(server.url, { lazyConnect: true, tls: { ca: readFileSync(m.caCert), cert: readFileSync(m.clientCert), key: readFileSync(m.clientKey) } }));
      try {
        expect(await client.ping()).toBe('PONG');
      } finally {
        client.disconnect();
      }
      await expect(redisCommand({ port: server.port, tls: { ca: m.caCert } }, ['PING'])).rejects.toThrow(/certificate required|closed the connection/);
      await server.stop();
    } finally {
      rmSync(certs, { recursive: true, force: true });
    }
  });

  it('a server that cannot start fails with its log and how to install Redis, and leaves nothing behind', async () => {
    const err = await startRedisServer({ maxmemoryPolicy: 'no-such-policy' }).then(() => undefined, (e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err!.message).toMatch(/did not start/);
    expect(err!.message).toMatch(/apt-get install -y redis-server redis-tools/);
    expect(err!.message).toMatch(/maxmemory-policy/);
    const dir = /log \((.+?)\):/.exec(err!.message)?.[1];
    expect(dir).toBeDefined();
    expect(existsSync(dir!)).toBe(false);
  });
});

describe('test Redis servers: cluster', () => {
  let cluster: RedisCluster;
  let client: Cluster;
  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1 });
    client = quiet(new Cluster(cluster.startupNodes));
  });
  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
  });

  it('three masters with one replica each, cluster_state ok and every slot covered on every node', async () => {
    expect(cluster.nodes).toHaveLength(6);
    const masters = await cluster.masters();
    expect(masters).toHaveLength(3);
    for (const m of masters) expect(m.replicaPorts).toHaveLength(1);
    expect(masters.flatMap((m) => m.slots).reduce((n, [a, b]) => n + b - a + 1, 0)).toBe(16384);
    for (const node of cluster.nodes) {
      const info = String(await redisCommand(node.port, ['CLUSTER', 'INFO']));
      expect(info).toContain('cluster_state:ok');
      expect(info).toContain('cluster_slots_ok:16384');
    }
    const masterPorts = cluster.nodes.filter((n) => n.role === 'master').map((n) => `127.0.0.1:${n.port}`);
    expect(cluster.url).toBe(`redis://${masterPorts.join(',')}/?cluster=true`);
  });

  it('hashTagsOnEveryMaster: one tag per master; each key lands on the master CLUSTER KEYSLOT names', async () => {
    const prefix = `t-${randomUUID().slice(0, 8)}`;
    const tags = await hashTagsOnEveryMaster(cluster, prefix);
    expect(new Set(tags.map((t) => t.port)).size).toBe(3);
    const masters = await cluster.masters();
    for (const { tag, port, slot } of tags) {
      const key = `{${tag}}:k`;
      await client.set(key, tag);
      const serverSlot = await redisCommand(cluster.nodes[0].port, ['CLUSTER', 'KEYSLOT', key]);
      expect(serverSlot).toBe(slot);
      expect(keyslot(key)).toBe(slot);
      const owner = masters.find((m) => m.slots.some(([a, b]) => slot >= a && slot <= b));
      expect(owner?.port).toBe(port);
      expect(await cluster.masterPortForKey(key)).toBe(port);
      expect(await redisCommand(port, ['GET', key])).toBe(tag);
    }
    const counts = await cluster.countKeysPerMaster(`{${prefix}-*`);
    expect([...counts.values()]).toEqual([1, 1, 1]);
    await Promise.all(tags.map(({ tag }) => client.del(`{${tag}}:k`)));
  });

  it('keyslot() agrees with CLUSTER KEYSLOT on plain keys, empty and odd hash tags', async () => {
    const keys = ['foo', '123456789', '{user1000}.following', 'foo{}{bar}', 'foo{{bar}}zap', '{}', 'ü-ñ', ''];
    for (const key of keys) expect(keyslot(key)).toBe(await redisCommand(cluster.nodes[1].port, ['CLUSTER', 'KEYSLOT', key]));
  });
});

describe('test Redis servers: sentinel', () => {
  let group: RedisSentinelGroup;
  beforeAll(async () => {
    group = await startRedisSentinel({ replicas: 1, sentinels: 3, masterName: 'mymaster' });
  });
  afterAll(async () => {
    await group?.stop();
  });

  it('killMaster + waitForFailover promote the replica, and ioredis with sentinels follows it', async () => {
    expect(group.url).toBe(`redis+sentinel://${group.sentinels.map((p) => `127.0.0.1:${p}`).join(',')}/?sentinel=mymaster`);
    expect(await group.currentMasterPort()).toBe(group.master.port);
    const client = quiet(new Redis({ ...group.ioredisOptions, lazyConnect: true }));
    try {
      const key = `t-${randomUUID()}`;
      await client.set(key, 'v');
      expect(String(await client.info('server'))).toContain(`tcp_port:${group.master.port}`);
      expect((await redisInfo(group.replica.port, 'replication')).role).toBe('slave');
      // The replica has the key before the master dies.
      expect(await redisCommand(group.master.port, ['WAIT', 1, 5000], 6000)).toBe(1);

      expect(await group.killMaster()).toBe(group.master.port);
      const promoted = await group.waitForFailover(20_000);
      expect(promoted).toBe(group.replica.port);

      const port = await waitFor(async () => {
        const info = String(await client.info('server'));
        return /tcp_port:(\d+)/.exec(info)?.[1];
      }, { timeoutMs: 15_000, message: 'ioredis reconnecting through the sentinels' });
      expect(Number(port)).toBe(promoted);
      expect(await client.get(key)).toBe('v');
      await client.del(key);
    } finally {
      client.disconnect();
    }
  });
});
