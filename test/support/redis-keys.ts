// Raw Redis access for integration tests: delete a run's keys by prefix (SCAN MATCH + UNLINK,
// never FLUSHDB on the shared server) and write raw stream entries that bypass tidings.
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import type { Transport } from '../../src/transport.js';
import { requireRedis } from './brokers.js';
import type { IncomingMessage } from '../../src/contract/incoming-message.js';
import type { Listener } from '../../src/contract/listener.js';
import type { BaseDriver } from '../../src/contract/base-driver.js';
import { isPriority } from '../../src/contract/types.js';
import { Target } from '../../src/core/target.js';
import { keyPattern, replyKey, TopicKeys } from '../../src/drivers/redis/topology.js';

/** A plain client on the test Redis (127.0.0.1:6379); the caller quits it. */
export function rawRedis(): Redis {
  return new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
}

/** Deletes every key under `prefix` (a test's own `key_prefix`). Returns how many. */
export async function deleteRedisKeys(prefix: string): Promise<number> {
  const redis = rawRedis();
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', keyPattern(prefix), 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) deleted += await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}

/**
 * The stream a raw body for (exchange, routing key) goes to: `<topic>.<priority>` is a
 * notification stream, anything else a topic's shared RPC stream.
 */
export function streamFor(prefix: string, exchange: string, routingKey: string): string {
  const cut = routingKey.lastIndexOf('.');
  if (cut > 0 && isPriority(routingKey.slice(cut + 1))) return new TopicKeys(prefix, exchange, routingKey.slice(0, cut)).notificationStream(routingKey.slice(cut + 1));
  return new TopicKeys(prefix, exchange, routingKey).topicStream;
}

/** XADDs `fields` as they are to `stream`. */
export async function xaddRaw(stream: string, fields: Record<string, string>): Promise<string> {
  const redis = rawRedis();
  try {
    return (await redis.xadd(stream, '*', ...Object.entries(fields).flat())) as string;
  } finally {
    redis.disconnect();
  }
}

/**
 * The conformance suite's `publishRaw` on Redis: a body to the default exchange under a reply
 * address goes to that reply list (as a server's reply does), anything else to its stream.
 */
export async function publishRawToRedis(prefix: string, exchange: string, routingKey: string, body: string): Promise<void> {
  if (exchange === '' && routingKey.startsWith('reply_')) {
    const redis = rawRedis();
    try {
      await redis.rpush(replyKey(prefix, routingKey), body);
    } finally {
      redis.disconnect();
    }
    return;
  }
  await xaddRaw(streamFor(prefix, exchange, routingKey), { b: body });
}

/** The `id` of a test notification's payload (`{ id }`). */
export const idOf = (m: IncomingMessage): number => (m as unknown as { notification: { payload: { id: number } } }).notification.payload.id;

/** An un-pooled listener of `<topic>.info` that acknowledges everything and counts deliveries per payload id. */
export async function countDeliveries(driver: BaseDriver, topic: string): Promise<{ listener: Listener<IncomingMessage>; counts: Map<number, number> }> {
  const counts = new Map<number, number>();
  const listener = await driver.listenForNotifications([[new Target({ topic }), 'info']], {});
  listener.start(async (ms) => {
    for (const m of ms) {
      const id = idOf(m);
      counts.set(id, (counts.get(id) ?? 0) + 1);
      await m.acknowledge();
    }
  });
  return { listener, counts };
}

/**
 * A test file's hold on the shared Redis: fails the file when Redis is down, and afterwards cleans
 * up the transports it pushed, closes the raw client and deletes every key under `prefix`.
 */
export function useRedisTestKeys(prefix: string): { redis: Redis; transports: Transport[] } {
  const redis = rawRedis();
  const transports: Transport[] = [];
  beforeAll(async () => {
    await requireRedis();
  });
  afterAll(async () => {
    await Promise.all(transports.map((t) => t.cleanup()));
    redis.disconnect();
    await deleteRedisKeys(prefix);
  });
  return { redis, transports };
}
