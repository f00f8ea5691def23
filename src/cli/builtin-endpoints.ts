// The endpoints `tidings serve` offers for smoke tests and health checks. A plain object, so
// that only these six names are dispatchable (a class would also expose helper methods).
import { hostname } from 'node:os';
import type { Context } from '../index.js';

/** The error `fail` raises; it travels to the caller as class `DeliberateFailure`. */
export class DeliberateFailure extends Error {
  /** The module the caller sees; allow it (allowedRemoteExmods) to get this class back. */
  static readonly remoteModule = 'tidings.cli';
  override readonly name = 'DeliberateFailure';
}

/** The longest `sleep` accepted, so that a stray call cannot hold a graceful stop for long. */
export const MAX_SLEEP_MS = 600_000;

export interface BuiltinEndpointInfo {
  topic: string;
  server: string;
  /** Redacted transport URL. */
  url: string;
}

/** The names `serve` prints on start. */
export const BUILTIN_METHODS = ['echo', 'add', 'sleep', 'fail', 'whoami', 'ping'] as const;

export function createBuiltinEndpoints(info: BuiltinEndpointInfo) {
  const startedAt = new Date().toISOString();
  return {
    /** Returns its arguments unchanged. */
    echo(_ctx: Context, args: Record<string, unknown>): Record<string, unknown> {
      return args;
    },
    /** `{a, b}` -> a + b; non-numbers raise TypeError (rebuilt as TypeError by callers). */
    add(_ctx: Context, args: { a?: unknown; b?: unknown }): number {
      if (typeof args.a !== 'number' || typeof args.b !== 'number') {
        throw new TypeError(`add expects numbers a and b, received ${JSON.stringify(args)}`);
      }
      return args.a + args.b;
    },
    /** `{ms}` (default 1000): replies after ms; for timeout and call-monitor tests. */
    async sleep(_ctx: Context, args: { ms?: unknown }): Promise<{ slept: number }> {
      const ms = args.ms ?? 1000;
      if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || ms > MAX_SLEEP_MS) {
        throw new RangeError(`sleep expects ms between 0 and ${MAX_SLEEP_MS}, received ${JSON.stringify(args.ms)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, ms));
      return { slept: ms };
    },
    /** `{message?}`: always raises DeliberateFailure. */
    fail(_ctx: Context, args: { message?: unknown }): never {
      throw new DeliberateFailure(typeof args.message === 'string' ? args.message : 'failure requested by the caller');
    },
    /** Who answered: server name, topic, host, pid and the caller's context. */
    whoami(ctx: Context): Record<string, unknown> {
      return { server: info.server, topic: info.topic, host: hostname(), pid: process.pid, url: info.url, startedAt, ctx };
    },
    /** Health check. */
    ping(): string {
      return 'pong';
    },
  };
}
