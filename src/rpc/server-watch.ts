// Waiting for servers and watching them come and go, built on `discover()` (a fanout ping whose
// replies are collected for a window): start-up ordering and dashboards.
import type { EventEmitter } from 'eventemitter3';
import { InvalidArgument, MessagingTimeout, NotSupportedError } from '../core/errors.js';
import { GuardedEventEmitter } from '../core/events.js';
import { isPlainObject } from '../core/json-check.js';
import { abortableSleep, throwIfAborted } from '../core/retry.js';
import type { Target } from '../core/target.js';
import type { Transport } from '../transport.js';
import { discoverServers, pingServer, type DiscoveredServer, type PingingClient } from './discovery.js';

/** Options of `RpcClient.waitForServers()`. */
export interface RpcWaitForServersOptions {
  /** Servers that must answer (only the target's server counts when the target names one). @default 1 */
  count?: number;
  /** Longest wait in all, ms; then MessagingTimeout. @default 30000 */
  timeoutMs?: number;
  /** Each round's collection window (`discover({windowMs})`), ms. @default 1000 */
  windowMs?: number;
  /** Pause between rounds, ms. @default 500 */
  intervalMs?: number;
  /** Aborts the wait (rejects with AbortError). */
  signal?: AbortSignal;
}

/** Defaults of RpcWaitForServersOptions. */
export const RPC_WAIT_FOR_SERVERS_DEFAULTS = Object.freeze({
  /** Servers that must answer. */
  count: 1,
  /** Longest wait, ms. */
  timeoutMs: 30_000,
  /** Collection window of each round, ms. */
  windowMs: 1000,
  /** Pause between rounds, ms. */
  intervalMs: 500,
});

/** Options of `RpcClient.watchServers()`. */
export interface RpcWatchServersOptions {
  /** Pause between rounds, ms. @default 5000 */
  intervalMs?: number;
  /** Each round's collection window, ms. @default 1000 */
  windowMs?: number;
  /** Rounds a known server may miss before it is reported `left` (a reply can miss one window on a busy broker). @default 2 */
  missedRounds?: number;
  /** Stops the watch. */
  signal?: AbortSignal;
}

/** Defaults of RpcWatchServersOptions. */
export const RPC_WATCH_SERVERS_DEFAULTS = Object.freeze({
  /** Pause between rounds, ms. */
  intervalMs: 5000,
  /** Collection window of each round, ms. */
  windowMs: 1000,
  /** Rounds missed before `left`. */
  missedRounds: 2,
});

/** Typed events of a ServerWatch. A listener that throws is logged, never stops the watch. */
export interface ServerWatchEvents {
  /** A server answered that was not known (every server of the first round included). */
  joined: [server: DiscoveredServer];
  /** A known server missed `missedRounds` rounds in a row. */
  left: [server: DiscoveredServer];
  /** A round ended; the servers known now. */
  servers: [servers: readonly DiscoveredServer[]];
  /** A round failed (e.g. the broker is unreachable); the watch goes on. */
  error: [error: unknown];
}

/** A running watch of a topic's servers (`RpcClient.watchServers()`). */
export interface ServerWatch {
  /** `joined`, `left`, `servers`, `error`. */
  readonly events: EventEmitter<ServerWatchEvents>;
  /** The servers known now, sorted by name. */
  readonly servers: readonly DiscoveredServer[];
  /** Resolves after the first round. */
  readonly ready: Promise<void>;
  /** Stops polling; resolves once the round under way has ended. Idempotent. */
  stop(): Promise<void>;
  /** `using watch = client.watchServers()` stops it at the end of the scope. */
  [Symbol.dispose](): void;
}

/** What these functions need of an RpcClient (structural, so this file does not import the client). */
export interface WatchingClient extends PingingClient {
  readonly transport: Pick<Transport, 'driver' | 'logger'>;
  readonly timeout: number;
}

function checkOptions(options: unknown, keys: readonly string[]): Record<string, unknown> {
  if (!isPlainObject(options)) throw new InvalidArgument('options', 'an object', options);
  for (const key of Object.keys(options)) if (!keys.includes(key)) throw new InvalidArgument(`options.${key}`, `one of ${keys.join(', ')}`, key);
  return options;
}

function positive(field: string, value: unknown, fallback: number, integer = false): number {
  const v = value ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || (integer && !Number.isInteger(v))) throw new InvalidArgument(field, integer ? 'an integer >= 1' : 'a positive finite number of milliseconds', v);
  return v;
}

/** A server's identity across rounds: its name, else host and pid. */
function keyOf(s: DiscoveredServer): string {
  return s.server ?? `${s.host ?? '?'}#${s.pid ?? '?'}`;
}

/** Servers of the target's topic (of its server only, when it names one) that answer one round. */
async function round(client: WatchingClient, windowMs: number, signal: AbortSignal | undefined): Promise<DiscoveredServer[]> {
  const target: Target = client.target;
  if (!client.transport.driver.capabilities.fanout) {
    // Without fanout one server can still be asked: a direct ping.
    await pingServer(client, windowMs, { signal });
    return [target.server === undefined ? {} : { server: target.server }];
  }
  const found = await discoverServers(client, windowMs, { signal });
  return target.server === undefined ? found : found.filter((s) => s.server === target.server);
}

/** See `RpcClient.waitForServers()`. */
export async function waitForServersOf(client: WatchingClient, options: RpcWaitForServersOptions): Promise<DiscoveredServer[]> {
  const o = checkOptions(options, ['count', 'timeoutMs', 'windowMs', 'intervalMs', 'signal']);
  const D = RPC_WAIT_FOR_SERVERS_DEFAULTS;
  const count = positive('count', o.count, D.count, true);
  const timeoutMs = positive('timeoutMs', o.timeoutMs, D.timeoutMs);
  const windowMs = positive('windowMs', o.windowMs, D.windowMs);
  const intervalMs = positive('intervalMs', o.intervalMs, D.intervalMs);
  const signal = options.signal;
  if (!client.transport.driver.capabilities.fanout && count > 1) {
    throw new NotSupportedError(`waitForServers({count: ${count}}) counts servers with a fanout ping, and this driver has no fanout; wait for one server at a time (count 1, by server name)`);
  }
  const deadline = performance.now() + timeoutMs;
  let best: DiscoveredServer[] = [];
  let lastError: unknown;
  for (;;) {
    throwIfAborted(signal);
    const left = deadline - performance.now();
    try {
      const found = await round(client, Math.min(windowMs, Math.max(1, left)), signal);
      if (found.length >= count) return found;
      if (found.length >= best.length) best = found;
    } catch (err) {
      // No server yet (a ping times out) or the broker is not up yet: try again until the deadline.
      if (!(err instanceof MessagingTimeout) && !(err instanceof Error && 'retriable' in err && err.retriable === true)) throw err;
      lastError = err;
    }
    const remaining = deadline - performance.now();
    if (remaining <= 0) {
      const who = client.target.server === undefined ? `servers of topic ${client.target.topic}` : `server ${client.target.server} of topic ${client.target.topic}`;
      throw new MessagingTimeout(`Waited ${timeoutMs} ms for ${count} ${who} to answer the ping; ${best.length} answered`, lastError === undefined ? {} : { cause: lastError });
    }
    await abortableSleep(Math.min(intervalMs, remaining), signal);
  }
}

/** See `RpcClient.watchServers()`. */
export function watchServersOf(client: WatchingClient, options: RpcWatchServersOptions): ServerWatch {
  const o = checkOptions(options, ['intervalMs', 'windowMs', 'missedRounds', 'signal']);
  const D = RPC_WATCH_SERVERS_DEFAULTS;
  const intervalMs = positive('intervalMs', o.intervalMs, D.intervalMs);
  const windowMs = positive('windowMs', o.windowMs, D.windowMs);
  const missedRounds = positive('missedRounds', o.missedRounds, D.missedRounds, true);
  client.transport.driver.requireFeatures({ fanout: true });
  const events = new GuardedEventEmitter<ServerWatchEvents>(client.transport.logger);
  const known = new Map<string, { server: DiscoveredServer; missed: number }>();
  const stopper = new AbortController();
  const outer = options.signal;
  const onOuterAbort = () => stopper.abort(outer?.reason);
  outer?.addEventListener('abort', onOuterAbort, { once: true });
  if (outer?.aborted) stopper.abort(outer.reason);
  let list: readonly DiscoveredServer[] = [];
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  const loop = async (): Promise<void> => {
    while (!stopper.signal.aborted) {
      try {
        const found = await discoverServers(client, windowMs, { signal: stopper.signal });
        const filtered = client.target.server === undefined ? found : found.filter((s) => s.server === client.target.server);
        const seen = new Set<string>();
        for (const server of filtered) {
          const key = keyOf(server);
          seen.add(key);
          const had = known.get(key);
          known.set(key, { server, missed: 0 });
          if (had === undefined) events.emit('joined', server);
        }
        for (const [key, entry] of known) {
          if (seen.has(key) || ++entry.missed < missedRounds) continue;
          known.delete(key);
          events.emit('left', entry.server);
        }
        list = Object.freeze([...known.values()].map((e) => e.server).sort((a, b) => keyOf(a).localeCompare(keyOf(b))));
        events.emit('servers', list);
      } catch (err) {
        if (stopper.signal.aborted) break;
        events.emit('error', err);
      }
      markReady();
      await abortableSleep(intervalMs, stopper.signal).catch(() => undefined);
    }
    markReady();
  };
  const running = loop();

  const stop = (): Promise<void> => {
    stopper.abort();
    outer?.removeEventListener('abort', onOuterAbort);
    return running;
  };
  return {
    events,
    get servers() {
      return list;
    },
    ready,
    stop,
    [Symbol.dispose]() {
      void stop();
    },
  };
}
