// Options of the RabbitMQ driver as a table (src/contract/options.ts): oslo.messaging 14 defaults and
// oslo's `[oslo_messaging_rabbit]` query names, plus what only RabbitMQ needs (hosts, vhost, amqps).
import { booleanOption, customOption, defineDriverOptions, enumOption, intOption, msOption, NOTIFICATION_QUEUE_OPTIONS, secondsOption, stringOption, type OptionsOf } from '../../contract/options.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../contract/wire.js';
import { getFips } from 'node:crypto';
import { InvalidArgument, InvalidTransportURL } from '../../core/errors.js';
import type { TransportURL } from '../../core/transport-url.js';

const isPem = (v: unknown): v is string | Buffer => typeof v === 'string' || Buffer.isBuffer(v);

/*
 * `driverOptions` are camelCase with durations in ms; the URL query uses oslo's names with
 * durations in seconds, as in oslo's config, e.g.
 * `rabbit://h/?heartbeat_timeout_threshold=30&rabbit_qos_prefetch_count=10`.
 */
const FIELDS = {
  /** Durable topic exchanges and topic/notification queues (`amqp_durable_queues`). MUST match the Python side. @default false */
  durableQueues: booleanOption({ default: false, query: 'amqp_durable_queues' }),
  /** Auto-delete topic exchanges and queues (`amqp_auto_delete`). @default false */
  autoDelete: booleanOption({ default: false, query: 'amqp_auto_delete' }),
  /**
   * Adds `x-ha-policy: all` to queues (`rabbit_ha_queues`), as oslo does, so both sides declare
   * the same arguments. RabbitMQ ignores `x-ha-policy` since 3.0 (mirroring came from policies)
   * and removed classic mirroring in 4.0: this replicates nothing; use quorum queues. @default false
   */
  haQueues: booleanOption({ default: false, query: 'rabbit_ha_queues' }),
  /** `x-queue-type: quorum` on topic/notification queues; forces durable; not with haQueues or autoDelete (`rabbit_quorum_queue`). @default false */
  quorumQueue: booleanOption({ default: false, query: 'rabbit_quorum_queue' }),
  /**
   * Reply and fanout queues as quorum queues (durable, `x-queue-type: quorum`, still `x-expires`)
   * and a durable `<topic>_fanout` exchange (`rabbit_transient_quorum_queue`, oslo 14.7+). MUST
   * match the Python side: a fanout exchange declared with another durability is refused. @default false
   */
  transientQuorumQueue: booleanOption({ default: false, query: 'rabbit_transient_quorum_queue' }),
  /** `x-delivery-limit` of quorum queues, 0 = unset (`rabbit_quorum_delivery_limit`). @default 0 */
  quorumDeliveryLimit: intOption({ default: 0, query: 'rabbit_quorum_delivery_limit' }),
  /** `x-max-in-memory-length` of quorum queues, 0 = unset (`rabbit_quroum_max_memory_length`, oslo's spelling). @default 0 */
  quorumMaxMemoryLength: intOption({ default: 0, query: ['rabbit_quroum_max_memory_length', 'rabbit_quorum_max_memory_length'] }),
  /** `x-max-in-memory-bytes` of quorum queues, 0 = unset (`rabbit_quroum_max_memory_bytes`, oslo's spelling). @default 0 */
  quorumMaxMemoryBytes: intOption({ default: 0, query: ['rabbit_quroum_max_memory_bytes', 'rabbit_quorum_max_memory_bytes'] }),
  /*
   * The notifier's default queue `<topic>.<priority>` (`notification_store_and_forward`,
   * `notification_queue_max_length` -> `x-max-length`, `notification_queue_ttl_ms` ->
   * `x-message-ttl`). Python oslo declares that queue without these arguments: a queue declared
   * with them by one side is refused to the other (PRECONDITION_FAILED), so next to Python
   * notifiers or listeners bound it with a RabbitMQ policy instead (README, Security and limits).
   */
  ...NOTIFICATION_QUEUE_OPTIONS,
  /**
   * A pooled notification listener consumes one queue per `<topic>.<priority>`, named
   * `<pool>:<topic>.<priority>`, instead of oslo's one queue named after the pool alone and bound
   * to every topic the pool listens on (`pool_queue_per_topic`). One pool name on two topics is
   * then two queues, as on Redis and Kafka; Python oslo listeners of that pool consume the pool's
   * queue instead, so every member of a pool MUST agree on it. @default false
   */
  poolQueuePerTopic: booleanOption({ default: false, query: 'pool_queue_per_topic' }),
  /**
   * `x-expires` of each RPC server's own `<topic>.<server>` queue, ms; 0 = never, oslo's
   * behaviour (`server_queue_expires_ms`). RabbitMQ deletes the queue, with anything still in it,
   * once it has had no consumer for that long: the queues of servers that are gone for good (one
   * per pod name) go. Only for non-durable queues (not with `durableQueues` or `quorumQueue`).
   * Python oslo declares that queue without it: a Python server of the same topic and server
   * name would be refused (PRECONDITION_FAILED). @default 0
   */
  serverQueueExpires: msOption({ default: 0, query: 'server_queue_expires_ms' }),
  /**
   * Deliveries of one notification (first plus requeues) before it moves to the dead-letter
   * queue `<address>.dlq` (`max_deliveries`, as on Redis); 0 = never, a requeue is a plain
   * `basic.nack` (the behaviour before). Counted by the driver on classic and quorum queues
   * alike: a requeue re-publishes the body to the queue it came from with the count in
   * `x-tidings-deliveries`, and acknowledges the original once the broker confirmed the copy.
   * @default 10
   */
  maxDeliveries: intOption({ default: 10, min: 0, max: 100_000, query: 'max_deliveries' }),
  /**
   * `x-max-length` of each dead-letter queue `<address>.dlq` (`dead_letter_max_len`, as on
   * Redis): past it RabbitMQ drops the oldest (drop-head) without telling tidings; 0 keeps all.
   * Every tidings process of a vhost MUST use the same value (RabbitMQ refuses a queue declared
   * with other arguments). @default 10_000
   */
  deadLetterMaxLen: intOption({ default: 10_000, min: 0, query: 'dead_letter_max_len' }),
  /** `x-expires` of reply and fanout queues, ms (`rabbit_transient_queues_ttl`, seconds). @default 1_800_000 */
  transientQueuesTtl: secondsOption({ default: 1_800_000, query: 'rabbit_transient_queues_ttl' }),
  /**
   * `basic.qos` prefetch count on listener channels; 0 = unlimited, oslo's default
   * (`rabbit_qos_prefetch_count`). Also caps batch sizes. Unset, a listener takes the façade's
   * hint, 2 x executorSize x batchSize (128 for a default server or listener): unlike oslo, a slow
   * handler then never makes the process hold the whole queue. @default undefined
   */
  prefetchCount: intOption({ default: undefined, query: 'rabbit_qos_prefetch_count' }),
  /** AMQP heartbeat timeout, ms, rounded up to whole seconds; 0 disables (`heartbeat_timeout_threshold`, seconds). @default 60_000 */
  heartbeatTimeout: secondsOption({ default: 60_000, query: 'heartbeat_timeout_threshold' }),
  /** First reconnect/retry wait, ms, at least 1 (`rabbit_retry_interval`, seconds). @default 1000 */
  retryInterval: secondsOption({ default: 1000, min: 1, query: 'rabbit_retry_interval' }),
  /** Added to the wait per attempt, ms (`rabbit_retry_backoff`, seconds). @default 2000 */
  retryBackoff: secondsOption({ default: 2000, query: 'rabbit_retry_backoff' }),
  /** Upper bound of one wait, ms, at least 1 (`rabbit_interval_max`, seconds). @default 30_000 */
  intervalMax: secondsOption({ default: 30_000, min: 1, query: 'rabbit_interval_max' }),
  /** Extra wait before reconnecting after a lost connection, ms (`kombu_reconnect_delay`, seconds). @default 1000 */
  reconnectDelay: secondsOption({ default: 1000, query: 'kombu_reconnect_delay' }),
  /** Up to this much random wait added to `reconnectDelay` before a cancelled consumer subscribes again, ms (`kombu_reconnect_splay`, seconds, oslo 16.1+). @default 0 */
  reconnectSplay: secondsOption({ default: 0, query: 'kombu_reconnect_splay' }),
  /**
   * Compress every published body as kombu does (`kombu_compression`): `gzip` and `zlib` (kombu's
   * aliases of `application/x-gzip`: zlib-wrapped deflate) with a `compression` header.
   * Compressed messages are read whatever this says. `bz2`/`lzma` are refused (Node has no codec).
   * @default undefined
   */
  kombuCompression: stringOption({ default: undefined, query: 'kombu_compression', expected: 'a non-empty compression name' }),
  /** How hosts of a multi-host URL are tried (`kombu_failover_strategy`). @default 'round-robin' */
  failoverStrategy: enumOption(['round-robin', 'shuffle'], { default: 'round-robin', query: 'kombu_failover_strategy' }),
  /** How long a server retries a reply whose queue is missing, ms (`kombu_missing_consumer_retry_timeout`, seconds). @default 60_000 */
  missingConsumerRetryTimeout: secondsOption({ default: 60_000, query: ['kombu_missing_consumer_retry_timeout', 'kombu_reconnect_timeout'] }),
  /** Replies are published `mandatory` so a missing reply queue is noticed (`direct_mandatory_flag`). @default true */
  directMandatoryFlag: booleanOption({ default: true, query: 'direct_mandatory_flag' }),
  /** Consumer argument `x-cancel-on-ha-failover` (`enable_cancel_on_failover`). @default false */
  enableCancelOnFailover: booleanOption({ default: false, query: 'enable_cancel_on_failover' }),
  /**
   * Name reply and fanout queues as oslo's queue manager does, `reply_<hostname>:<processname>:<n>`
   * and `<topic>_fanout_<hostname>:<processname>:<n>`, so a restarted process reuses its queues
   * (`use_queue_manager`, oslo 14.7+). `n` counts per hostname and process name in a file
   * under /dev/shm, as oslo's QManager does. @default false
   */
  useQueueManager: booleanOption({ default: false, query: 'use_queue_manager' }),
  /** The queue manager's host name (`hostname`); unset: `os.hostname()`. @default undefined */
  hostname: stringOption({ default: undefined, query: 'hostname' }),
  /** The queue manager's process name (`processname`); unset: the script's file name, as oslo's basename(argv[0]). @default undefined */
  processname: stringOption({ default: undefined, query: 'processname' }),
  /**
   * Each topic's fanout queue is one shared durable stream, `<topic>_fanout` (`x-queue-type:
   * stream`, `x-max-age` = transientQueuesTtl in whole seconds), as oslo 14.7+ declares it, that
   * every server reads from its own offset (`rabbit_stream_fanout`). Needs transientQuorumQueue
   * (oslo's rule: the fanout exchange is durable) and a prefetch (RabbitMQ refuses a stream
   * consumer without one): prefetchCount 0 is refused. RabbitMQ 3.9+. @default false
   */
  streamFanout: booleanOption({ default: false, query: 'rabbit_stream_fanout' }),
  /** How many `_unique_id`s each listener remembers for duplicate suppression (oslo: 16). @default 4096 */
  /**
   * Largest message sent or accepted, bytes of its encoded body (`max_message_bytes`); 0 = no limit.
   * A larger send fails with InvalidArgument before anything is sent; a larger received body is
   * rejected as malformed. 16 MiB: RabbitMQ's own default is 128 MiB and oslo sets none. @default 16_777_216
   */
  maxMessageBytes: intOption({ default: DEFAULT_MAX_MESSAGE_BYTES, query: 'max_message_bytes' }),
  dedupWindow: intOption({ default: 4096, min: 1, query: 'dedup_window' }),
  /** Bound on waiting for a publisher confirm or for an unblocked connection, ms; 0 = none (`publish_timeout_ms`). @default 60_000 */
  publishTimeout: msOption({ default: 60_000, query: 'publish_timeout_ms' }),
  /** TCP + AMQP handshake timeout per connection attempt, ms (`connect_timeout_ms`). @default 10_000 */
  connectTimeout: msOption({ default: 10_000, query: 'connect_timeout_ms' }),
  /**
   * How long cleanup waits for in-flight confirms and unacknowledged notifications, ms; also, per
   * connection, how long closing waits for a broker that stopped answering before it drops the
   * socket (`shutdown_timeout_ms`). @default 10_000
   */
  shutdownTimeout: msOption({ default: 10_000, query: 'shutdown_timeout_ms' }),
  /** SASL mechanism (`rabbit_login_method`). @default 'AMQPLAIN' */
  loginMethod: enumOption(['PLAIN', 'AMQPLAIN', 'EXTERNAL', 'RABBIT-CR-DEMO'], { default: 'AMQPLAIN', query: 'rabbit_login_method' }),
  /** Use TLS; implied by the `amqps://` scheme (`ssl`, `rabbit_use_ssl` before oslo 16). @default false */
  ssl: booleanOption({ default: false, query: ['ssl', 'rabbit_use_ssl'] }),
  /**
   * Pins the TLS version (`ssl_version`): `TLSv1`, `TLSv1_1`, `TLSv1_2`, `TLSv1_3`; `SSLv23` or
   * unset negotiates the highest both sides speak. `SSLv2`/`SSLv3` are refused (Node has neither).
   * @default undefined
   */
  sslVersion: stringOption({ default: undefined, query: ['ssl_version', 'kombu_ssl_version'], expected: 'a TLS version name' }),
  /** Requires Node to run in FIPS mode (`ssl_enforce_fips_mode`): true fails unless `crypto.getFips()` (start node with `--enable-fips`). @default false */
  sslEnforceFipsMode: booleanOption({ default: false, query: 'ssl_enforce_fips_mode' }),
  /** CA bundle path; when set the server certificate is verified against it (`ssl_ca_file`). @default undefined */
  sslCaFile: stringOption({ default: undefined, query: ['ssl_ca_file', 'kombu_ssl_ca_certs'], expected: 'a non-empty path string' }),
  /** Client certificate path (`ssl_cert_file`). @default undefined */
  sslCertFile: stringOption({ default: undefined, query: ['ssl_cert_file', 'kombu_ssl_certfile'], expected: 'a non-empty path string' }),
  /** Client key path (`ssl_key_file`). @default undefined */
  sslKeyFile: stringOption({ default: undefined, query: ['ssl_key_file', 'kombu_ssl_keyfile'], expected: 'a non-empty path string' }),
  /** CA bundle contents (options object only); wins over `sslCaFile`. @default undefined */
  sslCa: customOption<string | Buffer | undefined>({ default: undefined, expected: 'a string or a Buffer', accepts: isPem }),
  /** Client certificate contents (options object only). @default undefined */
  sslCert: customOption<string | Buffer | undefined>({ default: undefined, expected: 'a string or a Buffer', accepts: isPem }),
  /** Client key contents (options object only). @default undefined */
  sslKey: customOption<string | Buffer | undefined>({ default: undefined, expected: 'a string or a Buffer', accepts: isPem }),
  /**
   * Check that the server's certificate names the host connected to, by DNS name or IP SAN
   * (`ssl_enforce_hostname_verification`). On by default, unlike oslo 14.0.3 (false): a man in the
   * middle holding any certificate the CA trusts would otherwise read the credentials.
   * @default true
   */
  sslEnforceHostnameVerification: booleanOption({ default: true, query: 'ssl_enforce_hostname_verification' }),
  /** Reject servers whose certificate does not verify (against `sslCa*` or the system CAs). @default true */
  sslVerifyPeer: booleanOption({ default: true, query: 'ssl_verify_peer' }),
};

const OPTIONS = defineDriverOptions(FIELDS, {
  // Valid oslo names with no effect here (docs/drivers.md says why for each): amqplib runs its own
  // heartbeat timer; connection pools and green threads are Python concerns.
  ignoredQueryKeys: ['heartbeat_rate', 'heartbeat_in_pthread', 'rpc_conn_pool_size', 'conn_pool_min_size', 'conn_pool_ttl'],
});

/**
 * Driver options, given as `driverOptions` (camelCase, durations in ms) or as URL query
 * parameters under oslo's names (durations in seconds, as in oslo's config).
 * `driverOptions` win over the URL query. Unknown query keys fail with InvalidTransportURL.
 */
export type AmqpOptions = OptionsOf<typeof FIELDS>;
/** How hosts of a multi-host URL are tried. */
export type FailoverStrategy = AmqpOptions['failoverStrategy'];
/** The SASL mechanism. */
export type LoginMethod = AmqpOptions['loginMethod'];

/** oslo.messaging 14 defaults, frozen. */
export const DEFAULTS: Readonly<AmqpOptions> = OPTIONS.defaults;

/** The oslo query name of each field, for error messages about URL values. */
export const QUERY_NAMES: Readonly<Record<string, string>> = OPTIONS.queryNames;

/** One broker endpoint with its credentials. */
export interface AmqpHost {
  hostname: string;
  port: number;
  username: string;
  password: string;
}

/** Options plus what comes from the URL itself. */
export type ResolvedAmqpOptions = AmqpOptions & {
  readonly hosts: readonly AmqpHost[];
  readonly vhost: string;
};

/**
 * Merges DEFAULTS, the URL query (oslo names) and `driverOptions` (camelCase), validates every
 * field, and resolves hosts and vhost from the URL. Throws InvalidTransportURL for an unknown
 * query key and InvalidArgument (naming field, expected, received) for a bad value.
 */
export function resolveOptions(url: TransportURL, driverOptions: Readonly<Record<string, unknown>> = {}): ResolvedAmqpOptions {
  const opts = OPTIONS.resolve(url, driverOptions);
  const ssl = opts.ssl || url.scheme === 'amqps';
  if (opts.haQueues && opts.quorumQueue) {
    throw new InvalidArgument('quorumQueue', 'not combined with haQueues (rabbit_ha_queues and rabbit_quorum_queue conflict)', true);
  }
  // oslo lets the broker refuse it at the first declare (406 "invalid property 'auto-delete'").
  if (opts.autoDelete && opts.quorumQueue) {
    throw new InvalidArgument('quorumQueue', 'not combined with autoDelete (RabbitMQ refuses auto-delete quorum queues; amqp_auto_delete and rabbit_quorum_queue conflict)', true);
  }
  if (opts.haQueues && opts.transientQuorumQueue) {
    throw new InvalidArgument('transientQuorumQueue', 'not combined with haQueues (rabbit_ha_queues and rabbit_transient_quorum_queue conflict)', true);
  }
  refuseUnsupported(opts, url);
  // oslo's two rules (impl_rabbit Connection): its publishers declare `<topic>_fanout` durable only
  // with rabbit_transient_quorum_queue, and RabbitMQ refuses a stream consumer without a prefetch.
  if (opts.streamFanout && !opts.transientQuorumQueue) {
    throw new InvalidArgument('streamFanout', 'transientQuorumQueue as well (rabbit_stream_fanout needs rabbit_transient_quorum_queue=true: the fanout exchange is durable)', true);
  }
  if (opts.streamFanout && opts.prefetchCount === 0) {
    throw new InvalidArgument('prefetchCount', 'a positive count with streamFanout (rabbit_stream_fanout needs rabbit_qos_prefetch_count > 0: RabbitMQ refuses a stream consumer without a prefetch)', 0);
  }
  if (opts.serverQueueExpires > 0 && (opts.durableQueues || opts.quorumQueue)) {
    throw new InvalidArgument('serverQueueExpires', '0 with durableQueues or quorumQueue (only non-durable server queues expire)', opts.serverQueueExpires);
  }
  const defaultPort = ssl ? 5671 : 5672;
  const hosts: AmqpHost[] = url.hosts.map((h) => hostWithHiddenPassword(h.hostname ?? 'localhost', h.port ?? defaultPort, h.username ?? 'guest', h.password ?? (h.username === undefined ? 'guest' : '')));
  if (hosts.length === 0) hosts.push(hostWithHiddenPassword('localhost', defaultPort, 'guest', 'guest'));
  // oslo: `…:5672/` gives '' (broker default vhost '/'), `…:5672//` gives '/'.
  const vhost = url.virtualHost ? url.virtualHost : '/';
  return Object.freeze({ ...opts, ssl, hosts: Object.freeze(hosts), vhost });
}

/** kombu's names of the one codec tidings has, zlib-wrapped deflate, and its `compression` header value. */
export const KOMBU_GZIP = 'application/x-gzip';
const GZIP_NAMES = new Set(['gzip', 'zlib', KOMBU_GZIP]);
/** oslo `ssl_version` -> the TLS version Node pins; `SSLv23`: negotiate. */
const TLS_VERSIONS: Readonly<Record<string, 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3' | undefined>> = {
  sslv23: undefined,
  tlsv1: 'TLSv1',
  tlsv1_1: 'TLSv1.1',
  tlsv1_2: 'TLSv1.2',
  tlsv1_3: 'TLSv1.3',
};

/** The TLS version `ssl_version` pins, or undefined to negotiate. */
export function pinnedTlsVersion(o: Pick<AmqpOptions, 'sslVersion'>): 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3' | undefined {
  return o.sslVersion === undefined ? undefined : TLS_VERSIONS[o.sslVersion.toLowerCase()];
}

/** oslo options tidings cannot honour fail here, naming the option and why: never ignored silently. */
function refuseUnsupported(o: AmqpOptions, url: TransportURL): void {
  const refuse = (option: string, why: string) => {
    throw new InvalidTransportURL(`${option} is not supported by the RabbitMQ driver of tidings (${url.toString()}): ${why}`);
  };
  if (o.kombuCompression !== undefined && !GZIP_NAMES.has(o.kombuCompression)) {
    refuse(`kombu_compression=${o.kombuCompression}`, 'only gzip/zlib (kombu application/x-gzip) is available; Node has no bz2 or lzma codec');
  }
  if (o.loginMethod === 'RABBIT-CR-DEMO') refuse('rabbit_login_method=RABBIT-CR-DEMO', "RabbitMQ's demonstration mechanism is not offered by amqplib; use PLAIN, AMQPLAIN or EXTERNAL");
  if (o.sslVersion !== undefined && !Object.hasOwn(TLS_VERSIONS, o.sslVersion.toLowerCase())) {
    refuse(`ssl_version=${o.sslVersion}`, 'Node speaks TLSv1 to TLSv1_3 (or SSLv23 to negotiate), never SSLv2/SSLv3');
  }
  if (o.sslEnforceFipsMode && !getFips()) refuse('ssl_enforce_fips_mode', 'Node is not running in FIPS mode (start it with --enable-fips or an OpenSSL FIPS configuration)');
}

/** The password is non-enumerable so that logging or inspecting options never shows it. */
function hostWithHiddenPassword(hostname: string, port: number, username: string, password: string): AmqpHost {
  const host = { hostname, port, username } as AmqpHost;
  Object.defineProperty(host, 'password', { value: password, enumerable: false });
  return Object.freeze(host);
}
