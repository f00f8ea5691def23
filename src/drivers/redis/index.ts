// Entry point of the Redis driver (`redis://`, `rediss://`, `redis+sentinel://`), loaded lazily
// by transport.ts. Also exports what tests and tools need: options and key names.
import type { BaseDriver, DriverInit } from '../../contract/base-driver.js';
import { RedisDriver } from './redis-driver.js';

export function createDriver(init: DriverInit): BaseDriver {
  return new RedisDriver(init);
}

export { RedisDriver } from './redis-driver.js';
export type { RedisDelivery } from './listener-parts.js';
export { DEFAULTS, QUERY_NAMES, resolveOptions, type RedisOptions, type ResolvedRedisOptions, type RedisHost, type RedisMode } from './options.js';
export * as topology from './topology.js';
