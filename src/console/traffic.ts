// The console's traffic page: calls, casts, notifications, errors and latency percentiles in
// 10 s buckets, from tidings' own node:diagnostics_channel channels (RPC tracing channels and
// the notification channels), so no external metrics system is needed. Bounded: a fixed number
// of buckets, and at most LATENCY_SAMPLES latencies per bucket (a reservoir).
import diagnostics from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import { NOTIFY_CHANNELS, RPC_CHANNELS, type NotificationDispatchedEvent, type NotificationFailedEvent, type RpcTraceContext } from '../index.js';
import type { TrafficView } from './views.js';

/** Width of a bucket, ms. */
export const TRAFFIC_BUCKET_MS = 10_000;
/** Latencies kept per bucket; past it, a reservoir sample keeps the percentiles honest. */
const LATENCY_SAMPLES = 512;
/** The method of oslo's ping endpoint: the console's own discover() and ping are not traffic. */
const PING_METHOD = 'oslo_rpc_server_ping';

interface Bucket {
  at: number;
  calls: number;
  casts: number;
  notifications: number;
  errors: number;
  seen: number;
  latencies: number[];
}

type Started = RpcTraceContext & { [STARTED]?: number; [FAILED]?: boolean };
const STARTED = Symbol('tidings.console.started');
const FAILED = Symbol('tidings.console.failed');

/**
 * Records tidings traffic of this whole process while started (diagnostics channels carry no
 * transport, so every transport of the process counts). Server dispatches of the ping method
 * are left out; client pings never reach the channels.
 */
export class TrafficRecorder {
  private readonly buckets: Bucket[] = [];
  private since = Date.now();
  private readonly unsubscribes: Array<() => void> = [];

  constructor(
    /** How long buckets are kept, ms. */
    private readonly historyMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Subscribes to the channels. Idempotent until `stop()`. */
  start(): void {
    if (this.unsubscribes.length > 0) return;
    this.since = this.now();
    for (const kind of ['call', 'cast', 'dispatch'] as const) this.traceRpc(kind);
    this.subscribe(NOTIFY_CHANNELS.send, (message) => {
      const event = message as Partial<NotificationFailedEvent>;
      this.count('notifications', 1, event.error !== undefined ? 1 : 0, event.durationMs);
    });
    this.subscribe(NOTIFY_CHANNELS.dispatch, (message) => {
      const event = message as Partial<NotificationDispatchedEvent>;
      this.count('notifications', event.messages ?? 1, event.requeued ?? 0, event.durationMs);
    });
  }

  /** Unsubscribes from every channel; the buckets stay readable. */
  stop(): void {
    for (const off of this.unsubscribes.splice(0)) off();
  }

  /** The buckets of the last `historyMs`, oldest first. */
  view(): TrafficView {
    this.expire();
    return {
      since: this.since,
      bucketMs: TRAFFIC_BUCKET_MS,
      buckets: this.buckets.map((b) => {
        const sorted = [...b.latencies].sort((x, y) => x - y);
        return { at: b.at, calls: b.calls, casts: b.casts, notifications: b.notifications, errors: b.errors, p50: percentile(sorted, 0.5), p90: percentile(sorted, 0.9), p99: percentile(sorted, 0.99) };
      }),
    };
  }

  private traceRpc(kind: 'call' | 'cast' | 'dispatch'): void {
    const channel = diagnostics.tracingChannel<unknown, Started>(RPC_CHANNELS[kind]);
    const handlers = {
      start: (ctx: Started) => {
        if (ctx.method !== PING_METHOD) ctx[STARTED] = performance.now();
      },
      end: () => {},
      asyncStart: () => {},
      error: (ctx: Started) => {
        ctx[FAILED] = true;
      },
      asyncEnd: (ctx: Started) => {
        const began = ctx[STARTED];
        if (began === undefined) return;
        const field = kind === 'call' || (kind === 'dispatch' && ctx.expectsReply === true) ? 'calls' : 'casts';
        this.count(field, 1, ctx[FAILED] === true ? 1 : 0, performance.now() - began);
      },
    };
    channel.subscribe(handlers);
    this.unsubscribes.push(() => channel.unsubscribe(handlers));
  }

  private subscribe(name: string, onMessage: (message: unknown) => void): void {
    diagnostics.subscribe(name, onMessage);
    this.unsubscribes.push(() => diagnostics.unsubscribe(name, onMessage));
  }

  private count(field: 'calls' | 'casts' | 'notifications', n: number, errors: number, latencyMs: number | undefined): void {
    const bucket = this.current();
    bucket[field] += n;
    bucket.errors += errors;
    if (typeof latencyMs !== 'number' || !Number.isFinite(latencyMs)) return;
    bucket.seen++;
    if (bucket.latencies.length < LATENCY_SAMPLES) bucket.latencies.push(latencyMs);
    else {
      const slot = Math.floor(Math.random() * bucket.seen);
      if (slot < LATENCY_SAMPLES) bucket.latencies[slot] = latencyMs;
    }
  }

  private current(): Bucket {
    const at = Math.floor(this.now() / TRAFFIC_BUCKET_MS) * TRAFFIC_BUCKET_MS;
    const last = this.buckets[this.buckets.length - 1];
    if (last !== undefined && last.at === at) return last;
    const bucket: Bucket = { at, calls: 0, casts: 0, notifications: 0, errors: 0, seen: 0, latencies: [] };
    this.buckets.push(bucket);
    this.expire();
    return bucket;
  }

  private expire(): void {
    const oldest = this.now() - this.historyMs;
    while (this.buckets.length > 0 && this.buckets[0].at + TRAFFIC_BUCKET_MS <= oldest) this.buckets.shift();
  }
}

function percentile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const value = sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  return Math.round(value * 100) / 100;
}
