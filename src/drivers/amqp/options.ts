// Options of the RabbitMQ driver: the type, frozen DEFAULTS (oslo.messaging 14 defaults), and
// the mapping of URL query parameters (oslo's `[oslo_messaging_rabbit]` names) onto the same fields.
import { InvalidArgument, InvalidTransportURL } from '../../errors.js';
import type { TransportURL } from '../../transport-url.js';

export type FailoverStrategy = 'round-robin' | 'shuffle';
export type LoginMethod = 'PLAIN' | 'AMQPLAIN' | 'EXTERNAL';

/**
 * Driver options, given as `driverOptions` (camelCase, durations in ms) or as URL query
 * parameters under oslo's names (durations in seconds, as in oslo's config), e.g.
 * `rabbit://h/?heartbeat_timeout_threshold=30&rabbit_qos_prefetch_count=10`.
 * `driverOptions` win over the URL query. Unknown query keys fail with InvalidTransportURL.
 */
export interface AmqpOptions {
  /** Durable topic exchanges and topic/notification queues (`amqp_durable_queues`). MUST match the Python side. @default false */
  durableQueues: boolean;
  /** Auto-delete topic exchanges and queues (`amqp_auto_delete`). @default false */
  autoDelete: boolean;
  /** Adds `x-ha-policy: all` to queues (`rabbit_ha_queues`, classic mirroring). @default false */
  haQueues: boolean;
  /** `x-queue-type: quorum` on topic/notification queues; forces durable (`rabbit_quorum_queue`). @default false */
  quorumQueue: boolean;
  /** `x-delivery-limit` of quorum queues, 0 = unset (`rabbit_quorum_delivery_limit`). @default 0 */
  quorumDeliveryLimit: number;
  /** `x-max-in-memory-length` of quorum queues, 0 = unset (`rabbit_quroum_max_memory_length`). @default 0 */
  quorumMaxMemoryLength: number;
  /** `x-max-in-memory-bytes` of quorum queues, 0 = unset (`rabbit_quroum_max_memory_bytes`). @default 0 */
  quorumMaxMemoryBytes: number;
  /** `x-expires` of reply and fanout queues, ms (`rabbit_transient_queues_ttl`, seconds). @default 1_800_000 */
  transientQueuesTtl: number;
  /** `basic.qos` prefetch count on listener channels; 0 = unlimited (`rabbit_qos_prefetch_count`). Also caps batch sizes. @default 0 */
  prefetchCount: number;
  /** AMQP heartbeat timeout, ms, rounded up to whole seconds; 0 disables (`heartbeat_timeout_threshold`, seconds). @default 60_000 */
  heartbeatTimeout: number;
  /** First reconnect/retry wait, ms (`rabbit_retry_interval`, seconds). @default 1000 */
  retryInterval: number;
  /** Added to the wait per attempt, ms (`rabbit_retry_backoff`, seconds). @default 2000 */
  retryBackoff: number;
  /** Upper bound of one wait, ms (`rabbit_interval_max`, seconds). @default 30_000 */
  intervalMax: number;
  /** Extra wait before reconnecting after a lost connection, ms (`kombu_reconnect_delay`, seconds). @default 1000 */
  reconnectDelay: number;
  /** How hosts of a multi-host URL are tried (`kombu_failover_strategy`). @default 'round-robin' */
  failoverStrategy: FailoverStrategy;
  /** How long a server retries a reply whose queue is missing, ms (`kombu_missing_consumer_retry_timeout`, seconds). @default 60_000 */
  missingConsumerRetryTimeout: number;
  /** Replies are published `mandatory` so a missing reply queue is noticed (`direct_mandatory_flag`). @default true */
  directMandatoryFlag: boolean;
  /** Consumer argument `x-cancel-on-ha-failover` (`enable_cancel_on_failover`). @default false */
  enableCancelOnFailover: boolean;
  /** How many `_unique_id`s each listener remembers for duplicate suppression (oslo: 16). @default 4096 */
  dedupWindow: number;
  /** Bound on waiting for a publisher confirm or for an unblocked connection, ms; 0 = none (`publish_timeout_ms`). @default 60_000 */
  publishTimeout: number;
  /** TCP + AMQP handshake timeout per connection attempt, ms (`connect_timeout_ms`). @default 10_000 */
  connectTimeout: number;
  /** How long cleanup waits for in-flight confirms and unacknowledged notifications, ms (`shutdown_timeout_ms`). @default 10_000 */
  shutdownTimeout: number;
  /** SASL mechanism (`rabbit_login_method`). @default 'AMQPLAIN' */
  loginMethod: LoginMethod;
  /** Use TLS; implied by the `amqps://` scheme (`ssl`). @default false */
  ssl: boolean;
  /** CA bundle path; when set the server certificate is verified against it (`ssl_ca_file`). @default undefined */
  sslCaFile?: string;
  /** Client certificate path (`ssl_cert_file`). @default undefined */
  sslCertFile?: string;
  /** Client key path (`ssl_key_file`). @default undefined */
  sslKeyFile?: string;
  /** CA bundle contents (options object only); wins over `sslCaFile`. @default undefined */
  sslCa?: string | Buffer;
  /** Client certificate contents (options object only). @default undefined */
  sslCert?: string | Buffer;
  /** Client key contents (options object only). @default undefined */
  sslKey?: string | Buffer;
  /** Check that the certificate matches the host name (`ssl_enforce_hostname_verification`, Debian 14.0.3 default). @default false */
  sslEnforceHostnameVerification: boolean;
  /** Reject servers whose certificate does not verify (against `sslCa*` or the system CAs). @default true */
  sslVerifyPeer: boolean;
}

export const DEFAULTS: Readonly<AmqpOptions> = Object.freeze({
  durableQueues: false,
  autoDelete: false,
  haQueues: false,
  quorumQueue: false,
  quorumDeliveryLimit: 0,
  quorumMaxMemoryLength: 0,
  quorumMaxMemoryBytes: 0,
  transientQueuesTtl: 1_800_000,
  prefetchCount: 0,
  heartbeatTimeout: 60_000,
  retryInterval: 1000,
  retryBackoff: 2000,
  intervalMax: 30_000,
  reconnectDelay: 1000,
  failoverStrategy: 'round-robin',
  missingConsumerRetryTimeout: 60_000,
  directMandatoryFlag: true,
  enableCancelOnFailover: false,
  dedupWindow: 4096,
  publishTimeout: 60_000,
  connectTimeout: 10_000,
  shutdownTimeout: 10_000,
  loginMethod: 'AMQPLAIN',
  ssl: false,
  sslEnforceHostnameVerification: false,
  sslVerifyPeer: true,
});

/** One broker endpoint with its credentials. */
export interface AmqpHost {
  hostname: string;
  port: number;
  username: string;
  password: string;
}

/** Options plus what comes from the URL itself. */
export interface ResolvedAmqpOptions extends AmqpOptions {
  hosts: readonly AmqpHost[];
  vhost: string;
}

type Kind = 'bool' | 'int' | 'seconds' | 'ms' | 'string' | 'failover' | 'login' | 'ignored';

/** oslo query name -> [option field, kind]. */
const QUERY_MAP: Readonly<Record<string, readonly [keyof AmqpOptions | '', Kind]>> = Object.freeze({
  amqp_durable_queues: ['durableQueues', 'bool'],
  amqp_auto_delete: ['autoDelete', 'bool'],
  rabbit_ha_queues: ['haQueues', 'bool'],
  rabbit_quorum_queue: ['quorumQueue', 'bool'],
  rabbit_quorum_delivery_limit: ['quorumDeliveryLimit', 'int'],
  rabbit_quroum_max_memory_length: ['quorumMaxMemoryLength', 'int'],
  rabbit_quroum_max_memory_bytes: ['quorumMaxMemoryBytes', 'int'],
  rabbit_quorum_max_memory_length: ['quorumMaxMemoryLength', 'int'],
  rabbit_quorum_max_memory_bytes: ['quorumMaxMemoryBytes', 'int'],
  rabbit_transient_queues_ttl: ['transientQueuesTtl', 'seconds'],
  rabbit_qos_prefetch_count: ['prefetchCount', 'int'],
  heartbeat_timeout_threshold: ['heartbeatTimeout', 'seconds'],
  rabbit_retry_interval: ['retryInterval', 'seconds'],
  rabbit_retry_backoff: ['retryBackoff', 'seconds'],
  rabbit_interval_max: ['intervalMax', 'seconds'],
  kombu_reconnect_delay: ['reconnectDelay', 'seconds'],
  kombu_failover_strategy: ['failoverStrategy', 'failover'],
  kombu_missing_consumer_retry_timeout: ['missingConsumerRetryTimeout', 'seconds'],
  direct_mandatory_flag: ['directMandatoryFlag', 'bool'],
  enable_cancel_on_failover: ['enableCancelOnFailover', 'bool'],
  dedup_window: ['dedupWindow', 'int'],
  publish_timeout_ms: ['publishTimeout', 'ms'],
  connect_timeout_ms: ['connectTimeout', 'ms'],
  shutdown_timeout_ms: ['shutdownTimeout', 'ms'],
  rabbit_login_method: ['loginMethod', 'login'],
  ssl: ['ssl', 'bool'],
  ssl_ca_file: ['sslCaFile', 'string'],
  ssl_cert_file: ['sslCertFile', 'string'],
  ssl_key_file: ['sslKeyFile', 'string'],
  ssl_enforce_hostname_verification: ['sslEnforceHostnameVerification', 'bool'],
  ssl_verify_peer: ['sslVerifyPeer', 'bool'],
  // Valid oslo names with no effect here (connection pooling and threading are Python concerns).
  heartbeat_rate: ['', 'ignored'],
  heartbeat_in_pthread: ['', 'ignored'],
  rpc_conn_pool_size: ['', 'ignored'],
  conn_pool_min_size: ['', 'ignored'],
  conn_pool_ttl: ['', 'ignored'],
  ssl_version: ['', 'ignored'],
});

const FIELD_KINDS: Readonly<Record<keyof AmqpOptions, Kind | 'buffer'>> = Object.freeze({
  durableQueues: 'bool',
  autoDelete: 'bool',
  haQueues: 'bool',
  quorumQueue: 'bool',
  quorumDeliveryLimit: 'int',
  quorumMaxMemoryLength: 'int',
  quorumMaxMemoryBytes: 'int',
  transientQueuesTtl: 'ms',
  prefetchCount: 'int',
  heartbeatTimeout: 'ms',
  retryInterval: 'ms',
  retryBackoff: 'ms',
  intervalMax: 'ms',
  reconnectDelay: 'ms',
  failoverStrategy: 'failover',
  missingConsumerRetryTimeout: 'ms',
  directMandatoryFlag: 'bool',
  enableCancelOnFailover: 'bool',
  dedupWindow: 'int',
  publishTimeout: 'ms',
  connectTimeout: 'ms',
  shutdownTimeout: 'ms',
  loginMethod: 'login',
  ssl: 'bool',
  sslCaFile: 'string',
  sslCertFile: 'string',
  sslKeyFile: 'string',
  sslCa: 'buffer',
  sslCert: 'buffer',
  sslKey: 'buffer',
  sslEnforceHostnameVerification: 'bool',
  sslVerifyPeer: 'bool',
});

/** The oslo query name of each field, for error messages about URL values. */
export const QUERY_NAMES: Readonly<Record<string, string>> = Object.freeze(
  Object.fromEntries(Object.entries(QUERY_MAP).filter(([, [f]]) => f).map(([q, [f]]) => [f, q])),
);

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

function parseQueryValue(name: string, kind: Kind, text: string): unknown {
  switch (kind) {
    case 'bool': {
      const v = text.trim().toLowerCase();
      if (TRUE.has(v)) return true;
      if (FALSE.has(v)) return false;
      throw new InvalidArgument(name, 'a boolean (true/false/1/0/yes/no/on/off)', text);
    }
    case 'int':
    case 'ms':
      if (!/^-?\d+$/.test(text.trim())) throw new InvalidArgument(name, 'an integer', text);
      return Number(text);
    case 'seconds': {
      const n = Number(text);
      if (text.trim() === '' || !Number.isFinite(n)) throw new InvalidArgument(name, 'a number of seconds', text);
      return Math.round(n * 1000);
    }
    default:
      return text;
  }
}

function checkField(field: keyof AmqpOptions, value: unknown, label: string): void {
  const kind = FIELD_KINDS[field];
  switch (kind) {
    case 'bool':
      if (typeof value !== 'boolean') throw new InvalidArgument(label, 'a boolean', value);
      return;
    case 'int':
    case 'ms':
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
        throw new InvalidArgument(label, kind === 'ms' ? 'a non-negative integer number of milliseconds' : 'a non-negative integer', value);
      }
      return;
    case 'failover':
      if (value !== 'round-robin' && value !== 'shuffle') throw new InvalidArgument(label, '"round-robin" or "shuffle"', value);
      return;
    case 'login':
      if (value !== 'PLAIN' && value !== 'AMQPLAIN' && value !== 'EXTERNAL') throw new InvalidArgument(label, '"PLAIN", "AMQPLAIN" or "EXTERNAL"', value);
      return;
    case 'string':
      if (value !== undefined && (typeof value !== 'string' || value === '')) throw new InvalidArgument(label, 'a non-empty path string', value);
      return;
    case 'buffer':
      if (value !== undefined && typeof value !== 'string' && !Buffer.isBuffer(value)) throw new InvalidArgument(label, 'a string or a Buffer', value);
      return;
  }
}

/**
 * Merges DEFAULTS, the URL query (oslo names) and `driverOptions` (camelCase), validates every
 * field, and resolves hosts and vhost from the URL. Throws InvalidTransportURL for an unknown
 * query key and InvalidArgument (naming field, expected, received) for a bad value.
 */
export function resolveOptions(url: TransportURL, driverOptions: Readonly<Record<string, unknown>> = {}): ResolvedAmqpOptions {
  const out: Record<string, unknown> = { ...DEFAULTS };
  for (const [key, text] of Object.entries(url.query)) {
    const entry = QUERY_MAP[key];
    if (!entry) {
      throw new InvalidTransportURL(`Unknown option ${JSON.stringify(key)} in the query of ${url.toString()}; known options: ${Object.keys(QUERY_MAP).join(', ')}`);
    }
    const [field, kind] = entry;
    if (kind === 'ignored' || !field) continue;
    const value = parseQueryValue(key, kind, text);
    checkField(field, value, key);
    out[field] = value;
  }
  for (const [key, value] of Object.entries(driverOptions)) {
    if (!(key in FIELD_KINDS)) {
      throw new InvalidArgument(`driverOptions.${key}`, `one of ${Object.keys(FIELD_KINDS).join(', ')}`, key);
    }
    if (value === undefined) continue;
    checkField(key as keyof AmqpOptions, value, `driverOptions.${key}`);
    out[key] = value;
  }
  const opts = out as unknown as AmqpOptions;
  if (url.scheme === 'amqps') opts.ssl = true;
  if (opts.haQueues && opts.quorumQueue) {
    throw new InvalidArgument('quorumQueue', 'not combined with haQueues (rabbit_ha_queues and rabbit_quorum_queue conflict)', true);
  }
  if (opts.retryInterval < 1) throw new InvalidArgument('retryInterval', 'at least 1 ms', opts.retryInterval);
  if (opts.intervalMax < 1) throw new InvalidArgument('intervalMax', 'at least 1 ms', opts.intervalMax);
  if (opts.dedupWindow < 1) throw new InvalidArgument('dedupWindow', 'a positive integer', opts.dedupWindow);
  const defaultPort = opts.ssl ? 5671 : 5672;
  const hosts: AmqpHost[] = url.hosts.map((h) => hostWithHiddenPassword(h.hostname ?? 'localhost', h.port ?? defaultPort, h.username ?? 'guest', h.password ?? (h.username === undefined ? 'guest' : '')));
  if (hosts.length === 0) hosts.push(hostWithHiddenPassword('localhost', defaultPort, 'guest', 'guest'));
  // oslo: `…:5672/` gives '' (broker default vhost '/'), `…:5672//` gives '/'.
  const vhost = url.virtualHost ? url.virtualHost : '/';
  return Object.freeze({ ...opts, hosts: Object.freeze(hosts), vhost });
}

/** The password is non-enumerable so that logging or inspecting options never shows it. */
function hostWithHiddenPassword(hostname: string, port: number, username: string, password: string): AmqpHost {
  const host = { hostname, port, username } as AmqpHost;
  Object.defineProperty(host, 'password', { value: password, enumerable: false });
  return Object.freeze(host);
}
