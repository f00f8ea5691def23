// Options of the memory:// driver: one frozen DEFAULTS object, validation that names the field,
// and the mapping of URL query keys (`memory:///vhost?prefetch_count=10`) onto the same fields.
import { InvalidArgument, InvalidTransportURL } from '../../errors.js';
import type { TransportURL } from '../../transport-url.js';

export interface MemoryDriverOptions {
  /**
   * Unacknowledged messages one listener consumer may hold (RabbitMQ `basic.qos` prefetch
   * count); a positive value also caps listener batch sizes. 0 = unlimited.
   * URL query: `prefetch_count`.
   * @default 0
   */
  readonly prefetchCount: number;
  /**
   * How many recent `_unique_id`s each listener remembers to drop duplicates.
   * URL query: `dedup_window`.
   * @default 4096
   */
  readonly dedupWindow: number;
}

export const MEMORY_DEFAULTS: Readonly<MemoryDriverOptions> = Object.freeze({
  prefetchCount: 0,
  dedupWindow: 4096,
});

/** URL query key -> option name. */
const QUERY_KEYS: Readonly<Record<string, keyof MemoryDriverOptions>> = Object.freeze({
  prefetch_count: 'prefetchCount',
  dedup_window: 'dedupWindow',
});

type Check = (field: string, value: unknown) => number;

const nonNegativeInt: Check = (field, value) => {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw new InvalidArgument(field, 'a non-negative integer', value);
  return value;
};

const positiveInt: Check = (field, value) => {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw new InvalidArgument(field, 'a positive integer', value);
  return value;
};

const CHECKS: Readonly<Record<keyof MemoryDriverOptions, Check>> = Object.freeze({
  prefetchCount: nonNegativeInt,
  dedupWindow: positiveInt,
});

/**
 * Merges DEFAULTS, then the URL query, then `options` (caller options win over the URL).
 * Unknown query keys fail with InvalidTransportURL; unknown or invalid option values with
 * InvalidArgument naming the field, the expected and the received value.
 */
export function resolveMemoryOptions(url: TransportURL, options: Readonly<Record<string, unknown>> = {}): MemoryDriverOptions {
  const out: Record<keyof MemoryDriverOptions, number> = { ...MEMORY_DEFAULTS };
  for (const [key, text] of Object.entries(url.query)) {
    const name = QUERY_KEYS[key];
    if (!name) {
      throw new InvalidTransportURL(`Unknown memory:// URL option ${JSON.stringify(key)}; known options: ${Object.keys(QUERY_KEYS).join(', ')}`);
    }
    const value = /^\s*-?\d+\s*$/.test(text) ? Number(text) : text;
    try {
      out[name] = CHECKS[name](key, value);
    } catch (err) {
      throw new InvalidTransportURL(`Invalid memory:// URL option ${key}: ${(err as Error).message}`, { cause: err });
    }
  }
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue;
    if (!(key in CHECKS)) throw new InvalidArgument(`driverOptions.${key}`, `one of ${Object.keys(CHECKS).join(', ')}`, key);
    const name = key as keyof MemoryDriverOptions;
    out[name] = CHECKS[name](`driverOptions.${key}`, value);
  }
  return Object.freeze(out);
}
