// Entry point of the RabbitMQ driver (`rabbit://`, `amqp://`, `kombu://`, `amqps://`), loaded
// lazily by transport.ts. Also exports what tests and tools need to observe the driver.
import type { BaseDriver, DriverInit } from '../../contract/base-driver.js';
import { AmqpDriver } from './amqp-driver.js';

export function createDriver(init: DriverInit): BaseDriver {
  return new AmqpDriver(init);
}

export { AmqpDriver } from './amqp-driver.js';
export type { AmqpDriverEvents, ConnectionEventInfo, DriverEventEmitter } from './connection.js';
export { DEFAULTS, QUERY_NAMES, resolveOptions, type AmqpOptions, type ResolvedAmqpOptions, type AmqpHost, type FailoverStrategy, type LoginMethod } from './options.js';
export * as topology from './topology.js';
