// The memory:// broker's test hooks and its conformance subject: what the suite needs to inject
// raw messages into the embedded broker, and what applications testing on memory:// may use.
import type { DriverCapabilities } from '../contract/capabilities.js';
import { getMemoryBroker as brokerOf, resetMemoryBrokers as resetBrokers } from '../drivers/memory/index.js';
import { TransportURL } from '../core/transport-url.js';
import type { ConformanceSubject } from './harness.js';
import { uniqueName } from './wait.js';

/**
 * The test-facing side of one memory:// broker (one per virtual host). The broker models
 * RabbitMQ: exchanges, named queues, bindings; queues are named as oslo names them
 * (`<topic>`, `<topic>.<server>`, `<topic>.<priority>`, ...).
 */
export interface MemoryBrokerHooks {
  /** The virtual host: `''` for `memory://`, `iso` for `memory:///iso`. */
  readonly vhost: string;
  /**
   * Publishes `body` as-is, bypassing tidings (e.g. a malformed message), to `exchange` under
   * `routingKey`; exchange `''` addresses a queue by name. Returns how many queues took a copy.
   */
  publishRaw(exchange: string, routingKey: string, body: string): number;
  /** Names of the declared queues. */
  queueNames(): string[];
  /** Whether a queue of that name is declared. */
  hasQueue(name: string): boolean;
  /** Messages waiting in a queue, not counting delivered-but-unacknowledged ones; 0 when it does not exist. */
  queueDepth(name: string): number;
  /** Deletes every queue and exchange; consumers of live transports are cancelled. */
  reset(): void;
}

/**
 * The process-global memory:// broker of a virtual host (created on first use): the one every
 * transport on `memory:///<vhost>` talks to. `memory://` and `memory:///` use vhost `''`.
 */
export function getMemoryBroker(vhost = ''): MemoryBrokerHooks {
  return brokerOf(vhost);
}

/** The broker a memory:// URL (of any registered scheme mapped to the memory driver) uses. */
export function memoryBrokerOf(url: string | TransportURL): MemoryBrokerHooks {
  return brokerOf(TransportURL.parse(url).virtualHost ?? '');
}

/** Empties and forgets every memory:// broker, e.g. between tests; live transports' consumers are cancelled. */
export function resetMemoryBrokers(): void {
  resetBrokers();
}

/**
 * What the memory driver MUST declare: every capability of the contract. Written out, not read
 * from the driver, because the suite checks the driver against it.
 */
export const MEMORY_CAPABILITIES: DriverCapabilities = Object.freeze({
  rpc: true,
  fanout: true,
  requeue: true,
  pools: true,
  callMonitor: true,
  durableNotifications: true,
  deadLetters: true,
});

/** Options of {@link memoryConformanceSubject}: any field of the subject, plus the URL scheme. */
export interface MemoryConformanceOptions extends Partial<ConformanceSubject> {
  /** The scheme the memory driver is reached under, e.g. one given to `registerDriver`. @default 'memory' */
  scheme?: string;
}

/**
 * The conformance subject of the memory:// driver: each test gets its own virtual host, and raw
 * messages are published straight into that broker. `runConformanceSuite(memoryConformanceSubject())`
 * is how tidings tests its reference driver.
 */
export function memoryConformanceSubject(options: MemoryConformanceOptions = {}): ConformanceSubject {
  const { scheme = 'memory', ...overrides } = options;
  return {
    name: scheme === 'memory' ? 'memory' : `memory as ${scheme}://`,
    url: () => `${scheme}:///${uniqueName('conf')}`,
    capabilities: MEMORY_CAPABILITIES,
    async publishRaw(url, exchange, routingKey, body) {
      memoryBrokerOf(url).publishRaw(exchange, routingKey, body);
    },
    ...overrides,
  };
}
