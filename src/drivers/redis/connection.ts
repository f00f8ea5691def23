// ioredis clients of the Redis driver: one factory for a single server, Sentinel and Cluster
// (TLS and ACL credentials from the resolved options, never from a URL string), with the
// driver's Lua scripts defined on each client. Connection errors are logged with the redacted
// URL only.
import { readFileSync } from 'node:fs';
import { Cluster, Redis, type ClusterOptions, type RedisOptions as IoRedisOptions } from 'ioredis';
import { InvalidArgument } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { isBusyGroup, isOutOfMemory, noteConnectionError } from './errors.js';
import { SCRIPTS, type ScriptName } from './scripts/index.js';
import type { ResolvedRedisOptions } from './options.js';

/** A single-server / Sentinel client or a Cluster client: the commands the driver uses exist on both. */
export type RedisClient = Redis | Cluster;

/** What a client is for, in its connection name and logs. */
export type ClientRole = 'commands' | 'replies' | `reader:${string}`;

function tlsOptions(options: ResolvedRedisOptions): IoRedisOptions['tls'] {
  if (!options.tls) return undefined;
  let ca: string | undefined;
  if (options.sslCaFile) {
    try {
      ca = readFileSync(options.sslCaFile, 'utf8');
    } catch (err) {
      throw new InvalidArgument('sslCaFile', 'a readable CA bundle file', options.sslCaFile, { cause: err });
    }
  }
  // Node checks the name against the host connected to unless told otherwise: only the option turns that off.
  return options.sslEnforceHostnameVerification ? { ca, rejectUnauthorized: options.sslVerifyPeer } : { ca, rejectUnauthorized: options.sslVerifyPeer, checkServerIdentity: () => undefined };
}

/**
 * A new ioredis client for `role`, not connected yet (`lazyConnect`). It reconnects forever with
 * capped backoff; a command in flight when the connection drops fails after one more attempt,
 * so that the driver's own `retry` decides (a retried send keeps its `_unique_id`).
 */
export function createClient(options: ResolvedRedisOptions, role: ClientRole, logger: Logger): RedisClient {
  const retryStrategy = (times: number) => Math.min(options.retryInterval * 2 ** Math.min(times - 1, 10), options.intervalMax);
  const common: IoRedisOptions = {
    username: options.username,
    password: options.password,
    db: options.db,
    tls: tlsOptions(options),
    connectTimeout: options.connectTimeout,
    connectionName: `tidings:${role}`.replace(/\s/g, '_'),
    lazyConnect: true,
    maxRetriesPerRequest: role === 'commands' ? 1 : null,
    // No auto-pipelining, even for the command connection: its per-tick Pipeline objects cost more
    // CPU than the socket writes they save (measured: -10% CPU per call sequential and with 16 in flight).
    enableAutoPipelining: false,
    keepAlive: 30_000,
    // How long a dropped socket may take to close before ioredis destroys it. Its timer holds the
    // process open, and a socket that had already failed never closes again: 2 s (ioredis' default)
    // after every stop with Redis unreachable. Closing after QUIT does not wait for it.
    disconnectTimeout: 100,
  };
  let client: RedisClient;
  if (options.mode === 'cluster') {
    const clusterOptions: ClusterOptions = {
      redisOptions: { ...common, db: undefined },
      lazyConnect: true,
      enableAutoPipelining: false,
      maxRedirections: 16,
      clusterRetryStrategy: retryStrategy,
    };
    client = new Cluster(options.hosts.map((h) => ({ host: h.host, port: h.port })), clusterOptions);
  } else if (options.mode === 'sentinel') {
    client = new Redis({
      ...common,
      sentinels: options.hosts.map((h) => ({ host: h.host, port: h.port })),
      name: options.sentinel,
      sentinelPassword: options.sentinelPassword,
      sentinelTLS: common.tls,
      enableTLSForSentinelMode: options.tls,
      sentinelRetryStrategy: retryStrategy,
      retryStrategy,
    } as IoRedisOptions);
  } else {
    client = new Redis({ ...common, host: options.hosts[0].host, port: options.hosts[0].port, retryStrategy });
  }
  for (const [name, def] of Object.entries(SCRIPTS)) client.defineCommand(name, { numberOfKeys: def.numberOfKeys, lua: def.lua });
  // ioredis emits 'error' for every failed (re)connect: log it, never crash the process.
  client.on('error', (err: Error) => {
    noteConnectionError(client, err);
    logger.debug('Redis connection error', { role, reason: err.message });
  });
  client.on('ready', () => noteConnectionError(client, undefined));
  return client;
}

/** Runs one of the driver's scripts (EVALSHA, EVAL on NOSCRIPT). */
export function runScript<T = unknown>(client: RedisClient, name: ScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
  const fn = (client as unknown as Record<ScriptName, (...a: (string | number)[]) => Promise<T>>)[name];
  return fn.call(client, ...keys, ...args);
}

/**
 * Creates the consumer group `group` of the stream `key` (and the stream) starting after `from`;
 * resolves when it exists already. At maxmemory Redis refuses XGROUP CREATE even for a group that
 * exists; XINFO GROUPS (a read, answered there too) tells, so that a listener whose group exists
 * starts and drains. Any other refusal is thrown as Redis gave it.
 */
export async function createGroup(client: RedisClient, key: string, group: string, from: string): Promise<void> {
  try {
    await client.xgroup('CREATE', key, group, from, 'MKSTREAM');
  } catch (err) {
    if (isBusyGroup(err)) return;
    if (isOutOfMemory(err) && (await groupExists(client, key, group))) return;
    throw err;
  }
}

/** True when `group` is a consumer group of the stream `key`. */
async function groupExists(client: RedisClient, key: string, group: string): Promise<boolean> {
  try {
    const groups = (await client.xinfo('GROUPS', key)) as unknown[][];
    return groups.some((g) => {
      const at = g.indexOf('name');
      return at >= 0 && g[at + 1] === group;
    });
  } catch {
    return false;
  }
}

/** Closes a client: QUIT when connected (pending replies first), else drops the socket. Never throws. */
export async function closeClient(client: RedisClient | undefined): Promise<void> {
  if (!client) return;
  try {
    if (client.status === 'ready') await Promise.race([client.quit(), new Promise((r) => setTimeout(r, 1000).unref())]);
  } catch {
    // already gone
  }
  dropClient(client);
}

/** The ioredis internals {@link dropClient} finishes a close with (checked at run time). */
interface ClosableInternals {
  setStatus?: (status: 'end') => void;
  flushQueue?: (error: Error) => void;
}

/**
 * Drops a client's connection for good and fails every command it still holds, at once.
 * ioredis' `disconnect()` between two reconnect attempts (status `reconnecting`: the socket is
 * already gone, so no close event comes) cancels the next attempt but leaves the commands of its
 * offline queue waiting forever (redis/ioredis#2169): a BLMPOP or XREADGROUP queued there would
 * never settle, and nothing awaiting it could finish. This does what ioredis' own close does then:
 * status `end` (later commands fail at once) and the queues flushed. Never throws.
 */
export function dropClient(client: RedisClient | undefined): void {
  if (!client) return;
  client.disconnect();
  if (client.status !== 'reconnecting') return;
  const internals = client as unknown as ClosableInternals;
  if (typeof internals.setStatus !== 'function' || typeof internals.flushQueue !== 'function') return;
  internals.setStatus('end');
  internals.flushQueue(new Error('Connection is closed.'));
}

/** Resolves in the check phase of this turn of the event loop: after every write corked to the end of the tick. */
export function nextLoopTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
