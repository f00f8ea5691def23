// Options of the Redis driver as a table (src/contract/options.ts): key layout, leases, dead letters,
// GC periods and connection settings, plus what comes from the URL itself (hosts, db, mode, TLS).
import { booleanOption, defineDriverOptions, intOption, msOption, NOTIFICATION_QUEUE_OPTIONS, stringOption, type OptionsOf } from '../../contract/options.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../contract/wire.js';
import { InvalidArgument, InvalidTransportURL } from '../../core/errors.js';
import type { TransportURL } from '../../core/transport-url.js';

/*
 * oslo.messaging has no Redis driver, so the query names are tidings' own, snake_case with the
 * unit in the name (`lease_ms=30000`), e.g. `redis://h:6379/0?key_prefix=app&prefetch_count=32`.
 */
const FIELDS = {
  /** First part of every key this driver writes; transports that should talk MUST share it (`key_prefix`). @default 'tidings' */
  keyPrefix: stringOption({ default: 'tidings', query: 'key_prefix', check: (v) => !/[{}\s]/.test(v), expected: 'a non-empty string without braces or spaces' }),
  /** Entries one `XREADGROUP` reads (requests one `BLMPOP` pops), and the most unsettled notifications a listener holds (`prefetch_count`). Also caps batch sizes. @default 64 */
  prefetchCount: intOption({ default: 64, min: 1, query: 'prefetch_count' }),
  /** How long one blocking read (`XREADGROUP`, `BLMPOP`) waits before it is issued again, ms (`block_ms`); `stop()` ends it at once. @default 5000 */
  blockTimeout: msOption({ default: 5000, min: 1, query: 'block_ms' }),
  /** A delivered notification's lease, ms: unsettled and not extended for this long, another member claims it (`lease_ms`). @default 30_000 */
  leaseMs: msOption({ default: 30_000, min: 10, query: 'lease_ms' }),
  /** Period of the sweep that claims expired leases, trims streams and removes dead consumers, ms (`sweep_interval_ms`). @default 5000 */
  sweepInterval: msOption({ default: 5000, min: 10, query: 'sweep_interval_ms' }),
  /** Deliveries of one notification before it moves to the dead-letter stream; 0 = never (`max_deliveries`). @default 10 */
  maxDeliveries: intOption({ default: 10, min: 0, query: 'max_deliveries' }),
  /**
   * Most dead letters kept per topic shard's `:dead` stream (`dead_letter_max_len`, as on Kafka): past it the
   * oldest are deleted as a new one arrives, logged and counted; 0 keeps all (the stream then grows until someone
   * purges it). @default 10_000
   */
  deadLetterMaxLen: intOption({ default: 10_000, query: 'dead_letter_max_len' }),
  /** Wait before a requeued notification is delivered again, ms (`requeue_backoff_ms`). @default 0 */
  requeueBackoff: msOption({ default: 0, query: 'requeue_backoff_ms' }),
  /** Time to live of a reply list nobody reads, ms (`reply_ttl_ms`). @default 60_000 */
  replyTtl: msOption({ default: 60_000, min: 1, query: 'reply_ttl_ms' }),
  /** An RPC server not seen for this long is dropped from its topic's fanout, with its fanout stream (its own `<topic>.<server>` stream goes `consumerTtl` later), ms (`server_ttl_ms`). @default 60_000 */
  serverTtl: msOption({ default: 60_000, min: 10, query: 'server_ttl_ms' }),
  /** A consumer with nothing pending and idle this long is removed from its group, ms (`consumer_ttl_ms`). @default 600_000 */
  consumerTtl: msOption({ default: 600_000, min: 10, query: 'consumer_ttl_ms' }),
  /** A pool (consumer group) whose members were all gone this long is dropped with its backlog, ms; 0 = never (`pool_ttl_ms`). @default 0 */
  poolTtl: msOption({ default: 0, query: 'pool_ttl_ms' }),
  /**
   * Where a pool that does not exist yet starts reading (`pool_start`): `newest` (only what is sent
   * from now on, as a new RabbitMQ pool queue), `oldest` (everything the streams still hold: a
   * replay), a Unix time in ms (every entry added at or after it), or a stream entry id
   * (`1700000000000-0`: every entry after it). An existing pool keeps its position. @default 'newest'
   */
  poolStart: stringOption({ default: 'newest', query: 'pool_start', check: (v) => /^(newest|oldest|\d+(-\d+)?)$/.test(v), expected: "'newest', 'oldest', a time in ms or a stream entry id" }),
  /*
   * The default group's backlog (`notification_store_and_forward`, `notification_queue_max_length`,
   * `notification_queue_ttl_ms`): without the first, notifiers write only to streams a listener
   * created (XADD NOMKSTREAM) and create no default group; the bounds cut the default group's
   * backlog in the sweeps (listeners', and the notifier's own once per `sweep_interval_ms`),
   * never entries a pool has not acknowledged.
   */
  ...NOTIFICATION_QUEUE_OPTIONS,
  /** Streams each topic is spread over, each with its own hash tag (`shards`). MUST be the same on every transport of a topic. @default 1 */
  shards: intOption({ default: 1, min: 1, max: 1024, query: 'shards' }),
  /** A send resolves only once this many replicas acknowledged it (`WAIT`); 0 = when the master has it (`wait_replicas`). @default 0 */
  waitReplicas: intOption({ default: 0, min: 0, query: 'wait_replicas' }),
  /** Bound on `WAIT` for `waitReplicas`, ms (`wait_timeout_ms`). @default 1000 */
  waitTimeout: msOption({ default: 1000, min: 1, query: 'wait_timeout_ms' }),
  /** Connect to a Redis Cluster; the URL's hosts are seeds (`cluster`). @default false */
  cluster: booleanOption({ default: false, query: 'cluster' }),
  /** Sentinel master name: the URL's hosts are sentinels (`sentinel`; implied name `mymaster` for `redis+sentinel://`). @default undefined */
  sentinel: stringOption({ default: undefined, query: 'sentinel' }),
  /** Password of the sentinels themselves, when they need one (`sentinel_password`). @default undefined */
  sentinelPassword: stringOption({ default: undefined, query: 'sentinel_password' }),
  /** Use TLS; implied by `rediss://` (`ssl`). @default false */
  ssl: booleanOption({ default: false, query: 'ssl' }),
  /** CA bundle path for TLS (`ssl_ca_file`). @default undefined */
  sslCaFile: stringOption({ default: undefined, query: 'ssl_ca_file', expected: 'a non-empty path string' }),
  /** Reject servers whose certificate does not verify (`ssl_verify_peer`). @default true */
  sslVerifyPeer: booleanOption({ default: true, query: 'ssl_verify_peer' }),
  /**
   * Check that the server's certificate names the host connected to, by DNS name or IP SAN
   * (`ssl_enforce_hostname_verification`, the RabbitMQ driver's name); off only for a server whose
   * certificate names another host on purpose. @default true
   */
  sslEnforceHostnameVerification: booleanOption({ default: true, query: 'ssl_enforce_hostname_verification' }),
  /** TCP + handshake timeout per connection attempt, ms (`connect_timeout_ms`). @default 10_000 */
  connectTimeout: msOption({ default: 10_000, min: 1, query: 'connect_timeout_ms' }),
  /** First reconnect/retry wait, ms (`retry_interval_ms`). @default 100 */
  retryInterval: msOption({ default: 100, min: 1, query: 'retry_interval_ms' }),
  /** Upper bound of one reconnect/retry wait, ms (`retry_max_ms`). @default 5000 */
  intervalMax: msOption({ default: 5000, min: 1, query: 'retry_max_ms' }),
  /** How many `_unique_id`s each listener remembers for duplicate suppression (`dedup_window`). @default 4096 */
  /**
   * Largest message sent or accepted, bytes of its encoded body (`max_message_bytes`); 0 = no limit.
   * A larger send fails with InvalidArgument before anything is sent; a larger received body is
   * rejected as malformed. 16 MiB: RabbitMQ's own default is 128 MiB and oslo sets none. @default 16_777_216
   */
  maxMessageBytes: intOption({ default: DEFAULT_MAX_MESSAGE_BYTES, query: 'max_message_bytes' }),
  dedupWindow: intOption({ default: 4096, min: 1, query: 'dedup_window' }),
  /** How long cleanup waits for running handlers to settle, ms (`shutdown_timeout_ms`). @default 10_000 */
  shutdownTimeout: msOption({ default: 10_000, query: 'shutdown_timeout_ms' }),
};

const OPTIONS = defineDriverOptions(FIELDS);

/**
 * Driver options, given as `driverOptions` (camelCase, ms) or as URL query parameters
 * (snake_case). `driverOptions` win over the URL query. Unknown query keys fail with InvalidTransportURL.
 */
export type RedisOptions = OptionsOf<typeof FIELDS>;

/** The defaults, frozen. */
export const DEFAULTS: Readonly<RedisOptions> = OPTIONS.defaults;

/** The query name of each field. */
export const QUERY_NAMES: Readonly<Record<string, string>> = OPTIONS.queryNames;

/** One Redis (or sentinel, or cluster seed) endpoint. */
export interface RedisHost {
  readonly host: string;
  readonly port: number;
}

/** How the driver reaches Redis. */
export type RedisMode = 'single' | 'sentinel' | 'cluster';

/** Options plus what comes from the URL. The password is non-enumerable: logging this object never shows it. */
export type ResolvedRedisOptions = RedisOptions & {
  readonly mode: RedisMode;
  readonly hosts: readonly RedisHost[];
  readonly db: number;
  readonly username?: string;
  readonly password?: string;
  readonly tls: boolean;
};

/**
 * Merges DEFAULTS, the URL query and `driverOptions`, and reads hosts, credentials, db and mode
 * from the URL: `redis://[user:pass@]h:p[,h2:p2]/[db]`, `rediss://` for TLS, `redis+sentinel://`
 * or `?sentinel=<master>` for Sentinel, `?cluster=true` for Cluster.
 */
export function resolveOptions(url: TransportURL, driverOptions: Readonly<Record<string, unknown>> = {}): ResolvedRedisOptions {
  const opts = OPTIONS.resolve(url, driverOptions);
  const sentinelScheme = url.scheme === 'redis+sentinel' || url.scheme === 'rediss+sentinel';
  const sentinel = opts.sentinel ?? (sentinelScheme ? 'mymaster' : undefined);
  if (sentinel !== undefined && opts.cluster) throw new InvalidArgument('cluster', 'not combined with sentinel', true);
  const mode: RedisMode = opts.cluster ? 'cluster' : sentinel !== undefined ? 'sentinel' : 'single';
  const tls = opts.ssl || url.scheme.startsWith('rediss');
  const defaultPort = mode === 'sentinel' ? 26379 : 6379;
  const hosts = url.hosts.map((h) => Object.freeze({ host: h.hostname ?? '127.0.0.1', port: h.port ?? defaultPort }));
  if (hosts.length === 0) hosts.push(Object.freeze({ host: '127.0.0.1', port: defaultPort }));
  const withUser = url.hosts.find((h) => h.username !== undefined || h.password !== undefined);
  const dbText = url.virtualHost ?? '';
  if (dbText !== '' && !/^\d+$/.test(dbText)) throw new InvalidTransportURL(`The path of ${url.toString()} must be a database number (e.g. /0)`);
  const db = dbText === '' ? 0 : Number(dbText);
  if (mode === 'cluster' && db !== 0) throw new InvalidArgument('db', 'database 0 (Redis Cluster has only one)', db);
  const resolved = { ...opts, sentinel, mode, hosts: Object.freeze(hosts), db, tls } as ResolvedRedisOptions & { username?: string };
  if (withUser?.username) resolved.username = withUser.username;
  if (withUser?.password !== undefined) Object.defineProperty(resolved, 'password', { value: withUser.password, enumerable: false });
  return Object.freeze(resolved);
}
