// Options of the memory:// driver as a table (src/contract/options.ts): frozen DEFAULTS, validation
// that names the field, and URL query keys (`memory:///vhost?prefetch_count=10`) onto the same fields.
import { defineDriverOptions, intOption, type OptionsOf } from '../../contract/options.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../contract/wire.js';
import type { TransportURL } from '../../core/transport-url.js';

const FIELDS = {
  /**
   * Unacknowledged messages one listener consumer may hold (RabbitMQ `basic.qos` prefetch
   * count); a positive value also caps listener batch sizes. 0 = unlimited.
   * URL query: `prefetch_count`.
   * @default 0
   */
  prefetchCount: intOption({ default: 0, query: 'prefetch_count' }),
  /**
   * Largest message sent or accepted, bytes of its encoded body (`max_message_bytes`); 0 = no limit.
   * A larger send fails with InvalidArgument before anything is sent; a larger received body is
   * rejected as malformed. 16 MiB: RabbitMQ's own default is 128 MiB and oslo sets none. @default 16_777_216
   */
  maxMessageBytes: intOption({ default: DEFAULT_MAX_MESSAGE_BYTES, query: 'max_message_bytes' }),
  /**
   * Deliveries of one notification before a requeue moves it to the dead letters instead
   * (`tidings dead-letters`, `deadLetters()`); 0 = never, as Redis' and Kafka's option.
   * URL query: `max_deliveries`.
   * @default 10
   */
  maxDeliveries: intOption({ default: 10, min: 0, query: 'max_deliveries' }),
  /**
   * How many recent `_unique_id`s each listener remembers to drop duplicates.
   * URL query: `dedup_window`.
   * @default 4096
   */
  dedupWindow: intOption({ default: 4096, min: 1, query: 'dedup_window' }),
};

const OPTIONS = defineDriverOptions(FIELDS);

/** Options of the memory:// driver, as `driverOptions` or URL query keys. */
export type MemoryDriverOptions = OptionsOf<typeof FIELDS>;

/** The defaults, frozen. */
export const MEMORY_DEFAULTS: Readonly<MemoryDriverOptions> = OPTIONS.defaults;

/**
 * Merges MEMORY_DEFAULTS, then the URL query, then `options` (caller options win over the URL).
 * Unknown query keys fail with InvalidTransportURL; unknown option names and invalid values with
 * InvalidArgument naming the field, the expected and the received value.
 */
export function resolveMemoryOptions(url: TransportURL, options: Readonly<Record<string, unknown>> = {}): MemoryDriverOptions {
  return OPTIONS.resolve(url, options);
}
