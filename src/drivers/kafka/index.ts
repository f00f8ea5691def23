// Entry point of the Kafka driver (`kafka://`), loaded lazily by transport.ts; the client library
// it uses (kafkajs, or @platformatic/kafka with `?client=platformatic`) is loaded on first use.
import type { BaseDriver, DriverInit } from '../../contract/base-driver.js';
import { KafkaDriver } from './kafka-driver.js';

export function createDriver(init: DriverInit): BaseDriver {
  return new KafkaDriver(init);
}

export { KafkaDriver } from './kafka-driver.js';
export type { KafkaDelivery } from './kafka-listener.js';
export { DEFAULTS, QUERY_NAMES, resolveOptions, type KafkaOptions, type ResolvedKafkaOptions, type KeyChoice, type KeyFunction } from './options.js';
export * as topology from './topology.js';
