// Health checks over RPC: `RpcClient.ping()` on oslo's ping endpoint, and `discover()`, a fanout
// ping whose replies are collected for a window (the driver seam's `collectReplies`).
import { performance } from 'node:perf_hooks';
import { InvalidArgument, NoSuchMethod, NotSupportedError, UnsupportedVersion } from '../core/errors.js';
import { isPlainObject } from '../core/json-check.js';
import { Target } from '../core/target.js';
import type { CollectedReply } from '../contract/pending-replies.js';
import type { Transport } from '../transport.js';
import { PING_DETAIL_ARG, PING_METHOD } from './dispatcher.js';

/** What ping and discover need of an `RpcClient` (structural, so this file does not import the client). */
export interface PingingClient {
  /** The client's target: its exchange, topic and server. */
  readonly target: Target;
  /** The transport whose driver sends the pings. */
  readonly transport: Pick<Transport, 'driver'>;
  /** The client's send retry count. */
  readonly retry: number | undefined;
}

/** Options of `RpcClient.ping()`. */
export interface RpcPingOptions {
  /** The server to ping; undefined = the client's target server, else any server of the topic. */
  server?: string;
  /** Reply deadline, ms. @default the client's `timeout` */
  timeout?: number;
  /** Aborts the wait (rejects with AbortError). */
  signal?: AbortSignal;
}

/** Options of `RpcClient.discover()`. */
export interface RpcDiscoverOptions {
  /** How long replies are collected, ms: servers answering later are not listed. @default 1000 */
  windowMs?: number;
  /** Aborts the collection (rejects with AbortError). */
  signal?: AbortSignal;
}

/** Defaults of RpcDiscoverOptions. */
export const RPC_DISCOVER_DEFAULTS = Object.freeze({
  /** How long `discover()` collects replies, ms. */
  windowMs: 1000,
});

/**
 * A server that answered `discover()`. A tidings server fills every field; a server that only
 * answers `"pong"` (Python oslo.messaging with `rpc_ping_enabled`) is listed with none.
 */
export interface DiscoveredServer {
  /** The server's name (its target's `server`). */
  server?: string;
  /** The topic it listens on. */
  topic?: string;
  /** Its host name. */
  host?: string;
  /** Its process id. */
  pid?: number;
  /** Requests it was running when it answered, not counting the ping itself (0 on an idle server). */
  inFlight?: number;
}

/** The ping's own target: the client's exchange and topic, default namespace and version (where the ping endpoint lives). */
function pingTarget(client: PingingClient, server: string | undefined, fanout: boolean): Target {
  const { exchange, topic } = client.target;
  return new Target({ exchange, topic, server, fanout });
}

/**
 * Calls `oslo_rpc_server_ping` and resolves with the round trip in ms. A server without the ping
 * endpoint rejects with NotSupportedError saying how to enable it; otherwise as `call()`.
 */
export async function pingServer(client: PingingClient, timeout: number, options: RpcPingOptions): Promise<number> {
  const server = options.server ?? client.target.server;
  if (server !== undefined && (typeof server !== 'string' || server === '')) throw new InvalidArgument('server', 'a non-empty string', server);
  const began = performance.now();
  try {
    await client.transport.driver.send(pingTarget(client, server, false), {}, { method: PING_METHOD, args: {} }, { waitForReply: true, timeout, retry: client.retry, signal: options.signal });
  } catch (err) {
    if (err instanceof NoSuchMethod || err instanceof UnsupportedVersion) {
      const who = server === undefined ? `A server of topic ${client.target.topic}` : `Server ${server} of topic ${client.target.topic}`;
      throw new NotSupportedError(`${who} has no ${PING_METHOD} endpoint: start it with rpcPingEnabled: true (the default), or allow the method in its access policy`, { cause: err });
    }
    throw err;
  }
  return performance.now() - began;
}

/**
 * Sends a fanout ping to the client's topic and resolves, once `windowMs` passed, with the
 * servers that answered, sorted by name. Servers without the ping endpoint are not listed.
 * Needs the driver's `fanout` capability (NotSupportedError at once otherwise).
 */
export async function discoverServers(client: PingingClient, windowMs: number, options: RpcDiscoverOptions): Promise<DiscoveredServer[]> {
  const driver = client.transport.driver;
  driver.requireFeatures({ fanout: true });
  const message = { method: PING_METHOD, args: { [PING_DETAIL_ARG]: true } };
  const replies = (await driver.send(pingTarget(client, undefined, true), {}, message, { waitForReply: true, collectReplies: true, timeout: windowMs, retry: client.retry, signal: options.signal })) as CollectedReply[];
  const servers: DiscoveredServer[] = [];
  for (const reply of replies) if (reply.ok) servers.push(toDiscovered(reply.result));
  return servers.sort((a, b) => (a.server ?? '').localeCompare(b.server ?? ''));
}

/** Keeps the fields of a ping detail that have the expected types: it came off the wire. */
function toDiscovered(result: unknown): DiscoveredServer {
  const found: DiscoveredServer = {};
  if (!isPlainObject(result)) return found;
  if (typeof result.server === 'string') found.server = result.server;
  if (typeof result.topic === 'string') found.topic = result.topic;
  if (typeof result.host === 'string') found.host = result.host;
  if (typeof result.pid === 'number') found.pid = result.pid;
  if (typeof result.inFlight === 'number') found.inFlight = result.inFlight;
  return found;
}
