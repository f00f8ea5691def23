// What `bench/scale.ts` reads off a process and a broker: memory after a collection, Node's
// active handles and timers, the sizes of the maps and sets reachable from tidings' objects,
// socket writes, and the objects a run left in its broker (queues, keys, topics).
import net from 'node:net';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import type { TransportURL } from '../src/index.js';

setFlagsFromString('--expose-gc');
/** V8's collector, exposed without a command-line flag (a new context sees the flag set above). */
const collect = runInNewContext('gc') as () => void;

const MB = 1024 * 1024;

/** Resident set and JS heap in MB, after a full collection so the heap shows what is live. */
export interface MemorySample {
  rssMb: number;
  heapMb: number;
}

export function memorySample(): MemorySample {
  collect();
  collect();
  const m = process.memoryUsage();
  return { rssMb: round(m.rss / MB, 1), heapMb: round(m.heapUsed / MB, 2) };
}

/** Node's active resources (`process.getActiveResourcesInfo()`) counted by type: Timeout, TCPSocketWrap, ... */
export function activeResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
}

/** Entries a walk looks into per collection or array: enough to reach every kind of value, not every value. */
const WALK_ENTRIES = 8;

/**
 * The size of every Map and Set, and the length of every array, reachable from `roots` within
 * `maxDepth` property steps, keyed by path (`client.pendingReplies.calls`). Values inside a
 * collection share one path (`broker.queues[]`) and add up, so a path names a kind of map, not
 * one instance, and stays the same from one sample to the next. Only the first few entries of
 * a collection are walked into: their kinds repeat.
 */
export function collectionSizes(roots: Readonly<Record<string, unknown>>, maxDepth = 8): Record<string, number> {
  const sizes: Record<string, number> = {};
  const seen = new WeakSet<object>();
  const add = (path: string, n: number) => void (sizes[path] = (sizes[path] ?? 0) + n);
  const walk = (value: unknown, path: string, depth: number): void => {
    if (value === null || typeof value !== 'object' || seen.has(value)) return;
    if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof net.Socket || value instanceof Promise) return;
    seen.add(value);
    if (value instanceof Map) {
      add(path, value.size);
      if (depth < maxDepth) for (const v of take(value.values())) walk(v, `${path}[]`, depth + 1);
      return;
    }
    if (value instanceof Set) {
      add(path, value.size);
      if (depth < maxDepth) for (const v of take(value.values())) walk(v, `${path}[]`, depth + 1);
      return;
    }
    if (Array.isArray(value)) {
      add(path, value.length);
      if (depth < maxDepth) for (const v of value.slice(0, WALK_ENTRIES)) walk(v, `${path}[]`, depth + 1);
      return;
    }
    if (depth >= maxDepth) return;
    for (const key of Object.getOwnPropertyNames(value)) {
      let v: unknown;
      try {
        v = (value as Record<string, unknown>)[key];
      } catch {
        continue;
      }
      if (typeof v === 'object') walk(v, `${path}.${key}`, depth + 1);
    }
  };
  for (const [name, root] of Object.entries(roots)) walk(root, name, 0);
  return sizes;
}

function take<T>(it: Iterable<T>): T[] {
  const out: T[] = [];
  for (const v of it) {
    if (out.length >= WALK_ENTRIES) break;
    out.push(v);
  }
  return out;
}

let socketWrites = 0;
let counting = false;

/**
 * Counts every `socket.write` of the process from now on (amqplib, ioredis and kafkajs all
 * write requests with it): the client side of "requests per second", the same on every broker.
 */
export function countSocketWrites(): () => number {
  if (!counting) {
    counting = true;
    const write = net.Socket.prototype.write as (...args: unknown[]) => boolean;
    net.Socket.prototype.write = function (this: net.Socket, ...args: unknown[]) {
      socketWrites++;
      return write.apply(this, args);
    } as typeof net.Socket.prototype.write;
  }
  return () => socketWrites;
}

/** Objects a run holds in its broker, by kind, counted by name (every name of a run holds its prefix). */
export type BrokerObjects = Record<string, number>;

/**
 * Counts the broker-side objects whose names hold `prefix`: memory:// and RabbitMQ queues
 * (rabbitmqctl), Redis keys under the run's `key_prefix` (SCAN), Kafka topics and consumer groups
 * (admin API; groups only where the broker lists them, which librdkafka's mock does not).
 */
export async function brokerObjects(url: TransportURL, connectUrl: string, prefix: string): Promise<BrokerObjects> {
  switch (url.driver) {
    case 'memory': {
      const { getMemoryBroker } = await import('../src/drivers/memory/memory-broker.js');
      return { queues: getMemoryBroker(url.virtualHost ?? '').queueNames().filter((q) => q.includes(prefix)).length };
    }
    case 'rabbit':
    case 'amqp':
    case 'kombu': {
      const { listRabbitNames } = await import('../test/support/rabbit-admin.js');
      const ctl = await privateRabbitCtl();
      const [queues, exchanges] = await Promise.all([listRabbitNames('queues', prefix, ctl), listRabbitNames('exchanges', prefix, ctl)]);
      return { queues: queues.length, exchanges: exchanges.length };
    }
    case 'redis':
      return { keys: await withRedis(connectUrl, (redis) => countRedisKeys(redis, prefix)) };
    case 'kafka': {
      const admin = await kafkaAdmin(url);
      try {
        const topics = (await admin.listTopics()).filter((t) => t.includes(prefix)).length;
        // librdkafka's mock answers no ListGroups: groups are counted where the broker does.
        const groups = await admin.listGroups().then((g) => g.groups.filter((x) => x.groupId.includes(prefix)).length, () => undefined);
        return groups === undefined ? { topics } : { topics, groups };
      } finally {
        await admin.disconnect();
      }
    }
    default:
      return {};
  }
}

/** Removes what a run left in a shared broker (RabbitMQ queues and exchanges, Redis keys); the others go with their process. */
export async function sweepBroker(url: TransportURL, connectUrl: string, prefix: string): Promise<void> {
  if (url.driver === 'rabbit' || url.driver === 'amqp' || url.driver === 'kombu') {
    const { deleteRabbitObjectsWithPrefix } = await import('../test/support/rabbit-admin.js');
    await deleteRabbitObjectsWithPrefix(prefix, amqpUrl(connectUrl), await privateRabbitCtl());
  } else if (url.driver === 'redis') {
    const { keyPattern } = await import('../src/drivers/redis/topology.js');
    await withRedis(connectUrl, async (redis) => {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', keyPattern(prefix), 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await redis.unlink(...keys);
      } while (cursor !== '0');
    });
  }
}

/** The environment variable naming the private RabbitMQ node of `--rabbit-node` (`<node name> <dir>`) to runs in processes of their own. */
export const RABBIT_NODE_ENV = 'TIDINGS_SCALE_RABBIT_NODE';

/** rabbitmqctl of the private node `--rabbit-node` started, or undefined for the shared one. */
async function privateRabbitCtl(): Promise<import('../test/support/rabbit-admin.js').RabbitCtl | undefined> {
  const spec = process.env[RABBIT_NODE_ENV];
  if (!spec) return undefined;
  const [nodeName, dir] = spec.split(' ');
  const { rabbitNodeCtl } = await import('../test/support/rabbit-node.js');
  return (args) => rabbitNodeCtl(nodeName, dir, args);
}

/** `rabbit://u:p@h:port/vhost?...` as amqplib's `amqp://` URL. */
function amqpUrl(connectUrl: string): string {
  return connectUrl.replace(/^[a-z+]+:/, 'amqp:').replace(/\?.*$/, '');
}

/**
 * Commands the Redis server ran, all clients together (`INFO commandstats`, the INFO itself left
 * out): the shared server counts other clients' commands too, so take it on a quiet server.
 */
export async function redisCommandCounts(connectUrl: string): Promise<Record<string, number>> {
  return withRedis(connectUrl, async (redis) => {
    const info = await redis.info('commandstats');
    const counts: Record<string, number> = {};
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (m[1] !== 'info') counts[m[1]] = Number(m[2]);
    return counts;
  });
}

type RedisClient = import('ioredis').Redis;

async function withRedis<T>(connectUrl: string, body: (redis: RedisClient) => Promise<T>): Promise<T> {
  const { Redis } = await import('ioredis');
  const u = new URL(connectUrl);
  const redis = new Redis({ host: u.hostname, port: Number(u.port || 6379), lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    return await body(redis);
  } finally {
    redis.disconnect();
  }
}

async function countRedisKeys(redis: RedisClient, prefix: string): Promise<number> {
  const { keyPattern } = await import('../src/drivers/redis/topology.js');
  let cursor = '0';
  let n = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', keyPattern(prefix), 'COUNT', 1000);
    cursor = next;
    n += keys.length;
  } while (cursor !== '0');
  return n;
}

async function kafkaAdmin(url: TransportURL) {
  const { Kafka, logLevel } = await import('kafkajs');
  const brokers = url.hosts.map((h) => `${h.hostname}:${h.port ?? 9092}`);
  const admin = new Kafka({ clientId: 'tidings-bench-scale', brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  return admin;
}

export function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
