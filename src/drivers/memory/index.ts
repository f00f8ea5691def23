// Entry point of the memory:// driver, loaded lazily by src/transport.ts. Tests reach the
// in-process broker through getMemoryBroker() / resetMemoryBrokers() from this module.
import type { BaseDriver, DriverInit } from '../../contract/base-driver.js';
import { MemoryDriver } from './memory-driver.js';

/** The DriverModule factory `transport.ts` calls for `memory://` URLs. */
export function createDriver(init: DriverInit): BaseDriver {
  return new MemoryDriver(init);
}

export { MemoryDriver } from './memory-driver.js';
export { MemoryBroker, MemoryConsumer, getMemoryBroker, resetMemoryBrokers, type MemoryDelivery, type QueueStats } from './memory-broker.js';
export { MemoryListener } from './memory-listener.js';
export { MEMORY_DEFAULTS, resolveMemoryOptions, type MemoryDriverOptions } from './options.js';
