// Options of the Kafka driver as a table (src/contract/options.ts): oslo.messaging 14's
// `[oslo_messaging_kafka]` names where oslo has one, plus what tidings adds (client, acks, commits).
import { booleanOption, customOption, defineDriverOptions, enumOption, intOption, msOption, secondsOption, stringOption, type OptionsOf } from '../../contract/options.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../contract/wire.js';
import type { DriverMessage } from '../../contract/types.js';
import type { TransportURL } from '../../core/transport-url.js';

/** A function choosing a notification's record key (per-key order); undefined = no key. */
export type KeyFunction = (notification: DriverMessage, topic: string) => string | undefined;

/** How notifications are keyed: `none` (oslo), `publisher` (publisher_id), `event` (event_type) or a function. */
export type KeyChoice = 'none' | 'publisher' | 'event' | KeyFunction;

const KEY_WORDS = new Set(['none', 'publisher', 'event']);

/*
 * `driverOptions` are camelCase with durations in ms; the URL query uses oslo's names (seconds
 * where oslo's config has seconds) or, for tidings' own options, names ending in `_ms`:
 * `kafka://h1:9092,h2:9092/?consumer_group=billing&compression_codec=gzip&key=publisher`.
 */
const FIELDS = {
  /** Which Kafka client library talks to the brokers, loaded on first use (`client`): `kafkajs`, or `platformatic` (@platformatic/kafka, Kafka 3.5+ brokers only). @default 'kafkajs' */
  client: enumOption(['kafkajs', 'platformatic'], { default: 'kafkajs', query: 'client' }),
  /** Consumer group of listeners without a pool; every pool is its own group (`consumer_group`). @default 'oslo_messaging_consumer' */
  consumerGroup: stringOption({ default: 'oslo_messaging_consumer', query: 'consumer_group' }),
  /** Producer compression (`compression_codec`); with client=kafkajs `gzip` only (its other codecs need extra packages and are refused), client=platformatic has all. @default 'none' */
  compression: enumOption(['none', 'gzip', 'snappy', 'lz4', 'zstd'], { default: 'none', query: 'compression_codec' }),
  /** How long a produced record waits for others to share its request, ms (`producer_batch_timeout`, seconds). @default 0 */
  linger: secondsOption({ default: 0, query: 'producer_batch_timeout' }),
  /** Most records in one produce request (`producer_batch_size`). @default 16384 */
  producerBatchSize: intOption({ default: 16_384, min: 1, query: 'producer_batch_size' }),
  /** Acknowledgements a send waits for: `all` in-sync replicas, the `leader`, or `none` (`acks`). @default 'all' */
  acks: enumOption(['all', 'leader', 'none'], { default: 'all', query: 'acks' }),
  /** Idempotent producer (no duplicates from producer retries); only with `acks: all`, ignored otherwise (`idempotent`). @default true */
  idempotent: booleanOption({ default: true, query: 'idempotent' }),
  /** How notifications are keyed; the URL takes `none`, `publisher` or `event` (`key`). @default 'none' */
  key: customOption<KeyChoice>({
    default: 'none',
    query: 'key',
    expected: '"none", "publisher", "event" or a function (notification, topic) => string | undefined',
    accepts: (v: unknown): v is KeyChoice => typeof v === 'function' || (typeof v === 'string' && KEY_WORDS.has(v)),
  }),
  /** When a listener's offsets are committed: `after-handle` (at-least-once) or `before-dispatch` (oslo: at-most-once) (`commit_mode`). @default 'after-handle' */
  commitMode: enumOption(['after-handle', 'before-dispatch'], { default: 'after-handle', query: 'commit_mode' }),
  /** Settled offsets are committed together at most this often, ms (`commit_interval_ms`). @default 100 */
  commitInterval: msOption({ default: 100, query: 'commit_interval_ms' }),
  /** Where a group without a committed offset starts: `earliest` keeps notifications sent before the first listener; oslo uses `latest` (`auto_offset_reset`). @default 'earliest' */
  offsetReset: enumOption(['earliest', 'latest'], { default: 'earliest', query: 'auto_offset_reset' }),
  /** Deliveries of one notification (first plus requeues) before it goes to `<topic>.dlq` (`max_deliveries`). @default 5 */
  maxDeliveries: intOption({ default: 5, min: 1, query: 'max_deliveries' }),
  /** Most live dead letters kept per `<topic>.dlq` (`dead_letter_max_len`): after a listener dead-letters, the oldest beyond are removed with a marker and logged (their records stay until the topic's retention drops them); 0 keeps all. @default 0 */
  deadLetterMaxLen: intOption({ default: 0, min: 0, query: 'dead_letter_max_len' }),
  /** Wait before a requeued notification is delivered again, ms (`requeue_backoff_ms`): its retry copy carries the time it is due, and the retry reader holds it (and what follows it on its retry partition, due later) until then. @default 0 */
  requeueBackoff: msOption({ default: 0, query: 'requeue_backoff_ms' }),
  /** Records a listener holds unsettled before it stops fetching (`max_poll_records`). @default 500 */
  maxPollRecords: intOption({ default: 500, min: 1, query: 'max_poll_records' }),
  /** Most bytes fetched per partition and request (`kafka_max_fetch_bytes`). @default 1_048_576 */
  maxFetchBytes: intOption({ default: 1_048_576, min: 1, query: 'kafka_max_fetch_bytes' }),
  /** Longest a fetch waits for records, ms (`kafka_consumer_timeout`, seconds). @default 1000 */
  maxWaitTime: secondsOption({ default: 1000, query: 'kafka_consumer_timeout' }),
  /** Longest a fetch of RPC requests, replies and fanout casts waits for records, ms (`rpc_max_wait_ms`). A real broker answers a fetch as soon as a record arrives, so this bounds idle polling, not latency; librdkafka's mock cluster always waits it out, so tests on it set it low. @default 500 */
  rpcMaxWait: msOption({ default: 500, min: 1, query: 'rpc_max_wait_ms' }),
  /** Group session timeout, ms (`session_timeout_ms`). @default 30_000 */
  sessionTimeout: msOption({ default: 30_000, min: 1, query: 'session_timeout_ms' }),
  /** Group heartbeat interval, ms (`heartbeat_interval_ms`). @default 3000 */
  heartbeatInterval: msOption({ default: 3000, min: 1, query: 'heartbeat_interval_ms' }),
  /** How long a rebalance waits for members to rejoin, ms (`rebalance_timeout_ms`). @default 60_000 */
  rebalanceTimeout: msOption({ default: 60_000, min: 1, query: 'rebalance_timeout_ms' }),
  /** How many notification ids each listener remembers for duplicate suppression (`dedup_window`). @default 4096 */
  /**
   * Largest message sent or accepted, bytes of its encoded body (`max_message_bytes`); 0 = no limit.
   * A larger send fails with InvalidArgument before anything is sent; a larger received body is
   * rejected as malformed. 16 MiB: RabbitMQ's own default is 128 MiB and oslo sets none. @default 16_777_216
   */
  maxMessageBytes: intOption({ default: DEFAULT_MAX_MESSAGE_BYTES, query: 'max_message_bytes' }),
  dedupWindow: intOption({ default: 4096, min: 1, query: 'dedup_window' }),
  /** TCP connect timeout per broker, ms (`connect_timeout_ms`). @default 10_000 */
  connectTimeout: msOption({ default: 10_000, min: 1, query: 'connect_timeout_ms' }),
  /** Timeout of one broker request, ms (`request_timeout_ms`). @default 30_000 */
  requestTimeout: msOption({ default: 30_000, min: 1, query: 'request_timeout_ms' }),
  /** How long cleanup waits for running handlers, the last commit and the replies still being produced, ms (`shutdown_timeout_ms`). @default 10_000 */
  shutdownTimeout: msOption({ default: 10_000, query: 'shutdown_timeout_ms' }),
  /** `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT` or `SASL_SSL` (`security_protocol`). @default 'PLAINTEXT' */
  securityProtocol: enumOption(['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'], { default: 'PLAINTEXT', query: 'security_protocol' }),
  /** SASL mechanism; user and password come from the URL's first host (`sasl_mechanism`). @default 'PLAIN' */
  saslMechanism: enumOption(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'], { default: 'PLAIN', query: 'sasl_mechanism' }),
  /** Check that a broker's certificate names the host connected to (DNS name or IP SAN), as the other drivers do; `false` turns only that check off, the chain is still verified (`ssl_enforce_hostname_verification`). @default true */
  sslEnforceHostnameVerification: booleanOption({ default: true, query: 'ssl_enforce_hostname_verification' }),
  /** CA bundle path for SSL (`ssl_cafile`). @default undefined */
  sslCaFile: stringOption({ default: undefined, query: 'ssl_cafile', expected: 'a non-empty path string' }),
};

const OPTIONS = defineDriverOptions(FIELDS, {
  // Valid oslo names with no effect here: commits are the driver's (commit_mode), pools are Python's.
  ignoredQueryKeys: ['enable_auto_commit', 'pool_size', 'conn_pool_min_size', 'conn_pool_ttl'],
});

/**
 * Driver options, given as `driverOptions` (camelCase, durations in ms) or as URL query
 * parameters. `driverOptions` win over the URL query. Unknown query keys fail with
 * InvalidTransportURL.
 */
export type KafkaOptions = OptionsOf<typeof FIELDS>;

/** The defaults, frozen. */
export const DEFAULTS: Readonly<KafkaOptions> = OPTIONS.defaults;

/** The query name of each field, for error messages about URL values. */
export const QUERY_NAMES: Readonly<Record<string, string>> = OPTIONS.queryNames;

/** Options plus what comes from the URL itself. */
export type ResolvedKafkaOptions = KafkaOptions & {
  /** `host:port` of every broker in the URL (9092 when a port is missing). */
  readonly brokers: readonly string[];
  /** The URL's virtual host, '' when none: oslo appends `.<vhost>` to the topics it produces to. */
  readonly vhost: string;
  /** SASL user of the first host, when the URL has one. */
  readonly username?: string;
  /** SASL password of the first host (non-enumerable: logging the options never shows it). */
  readonly password?: string;
};

/**
 * Merges DEFAULTS, the URL query and `driverOptions`, validates every field, and resolves the
 * brokers, the virtual host and the SASL credentials from the URL.
 */
export function resolveOptions(url: TransportURL, driverOptions: Readonly<Record<string, unknown>> = {}): ResolvedKafkaOptions {
  const opts = OPTIONS.resolve(url, driverOptions);
  const brokers = url.hosts.map((h) => `${h.hostname ?? 'localhost'}:${h.port ?? 9092}`);
  if (brokers.length === 0) brokers.push('localhost:9092');
  const first = url.hosts[0];
  const resolved: Record<string, unknown> = { ...opts, brokers: Object.freeze(brokers), vhost: url.virtualHost ?? '' };
  if (first?.username !== undefined) resolved.username = first.username;
  Object.defineProperty(resolved, 'password', { value: first?.password, enumerable: false });
  return Object.freeze(resolved) as ResolvedKafkaOptions;
}
