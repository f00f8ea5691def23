// The conformance suite against the Redis at 127.0.0.1:6379. Fails, never skips, when Redis is
// down. Every key of the run is under one key prefix, deleted afterwards with SCAN + UNLINK.
// The suite comes from the package export `tidings/testing` (dist/, built by `npm test`).
import { randomUUID } from 'node:crypto';
import { runConformanceSuite } from 'tidings/testing';
import { requireRedis } from '../support/brokers.js';
import { deleteRedisKeys, publishRawToRedis } from '../support/redis-keys.js';

const PREFIX = `tconf-redis-${randomUUID().slice(0, 8)}`;
const URL = `redis://127.0.0.1:6379/?key_prefix=${PREFIX}`;

runConformanceSuite({
  name: 'redis (Redis Streams)',
  url: () => URL,
  capabilities: { rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true, deadLetters: true },
  before: requireRedis,
  after: () => deleteRedisKeys(PREFIX),
  publishRaw: (_url, exchange, routingKey, body) => publishRawToRedis(PREFIX, exchange, routingKey, body),
  timeScale: 2,
});
