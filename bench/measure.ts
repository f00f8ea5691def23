// What every side of the bench measures with: the payload, the in-flight limits, and the
// measured windows for calls, sends, deliveries and backlogs (tidings' scenarios and the raw baselines alike).
import { measureWindow, type BenchContext, type Measurement } from './harness.js';

/** A small, realistic argument: an id and ~100 bytes of text. */
export const PAYLOAD_TEXT = 'x'.repeat(100);

/** Calls kept in flight by `call-concurrent`. */
export const CONCURRENCY = 16;
/** Batch size of `consume-batch` and `backlog-batch`. */
export const BATCH_SIZE = 100;
/**
 * `batchTimeout` of the batch listeners, ms, by timing. A round's last batch waits this long for
 * more when it is not full (the batch held at the gate during the warm-up may have been cut short
 * by the timeout, and every later one is then offset). The raw baselines handle each fetched batch
 * as it comes and never wait so: in a `backlog-batch` window of 150–250 ms on librdkafka's mock, a
 * 50 ms wait took a quarter of the rate in some rounds and none in others, so the backlog waits 5 ms.
 */
export const BATCH_TIMEOUT_MS: Readonly<Record<ConsumeTiming, number>> = Object.freeze({ live: 50, backlog: 5 });
/** Casts and notifications awaiting the broker's accept at once (a window of in-flight confirms). */
export const PUBLISH_WINDOW = 16;

/**
 * Starts `op(i)` for i = 0, 1, ... keeping at most `window` in flight, until `count` were
 * started or `inTime()` says stop; resolves with how many were started, once all settled.
 */
export async function keepInFlight(count: number, window: number, inTime: () => boolean, op: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const worker = async () => {
    while (next < count && inTime()) await op(next++);
  };
  await Promise.all(Array.from({ length: window }, worker));
  return next;
}

/** What an RPC baseline's client and server offer a scenario: a call, a cast, and how many requests the server handled. */
export interface RpcSides {
  call(i: number): Promise<unknown>;
  cast(i: number): Promise<void>;
  handled(): number;
}

/** Calls one at a time after `ctx.warmup` unmeasured ones: latency of each and the total rate. */
export function measureSequentialCalls(ctx: BenchContext, call: (i: number) => Promise<unknown>): Promise<Measurement> {
  return measureCalls(ctx, call, 1);
}

/** Calls with `CONCURRENCY` in flight after `ctx.warmup` unmeasured ones. */
export function measureConcurrentCalls(ctx: BenchContext, call: (i: number) => Promise<unknown>): Promise<Measurement> {
  return measureCalls(ctx, call, CONCURRENCY);
}

/**
 * Sends `ctx.warmup` unmeasured messages one at a time and waits until `delivered()` counts them,
 * then sends `ctx.count` with PUBLISH_WINDOW in flight, timed from the first send until
 * `delivered()` counts them all (casts handled, notifications consumed). `what` names them in a
 * timeout message.
 */
export async function measureDelivered(ctx: BenchContext, send: (i: number) => Promise<unknown>, delivered: () => number, what: string): Promise<Measurement> {
  const base = await warmUp(ctx, send, delivered, what);
  return measureWindow(ctx, async () => {
    const sent = await keepInFlight(ctx.count, PUBLISH_WINDOW, ctx.inTime, send);
    await waitUntil(() => delivered() - base >= sent, `all ${what}`);
    return { ops: sent };
  });
}

/** Sends `ctx.warmup` messages one at a time and waits until `delivered()` counts them; resolves with its count then. */
async function warmUp(ctx: BenchContext, send: (i: number) => Promise<unknown>, delivered: () => number, what: string): Promise<number> {
  for (let i = 0; i < ctx.warmup; i++) await send(i);
  await waitUntil(() => delivered() >= ctx.warmup, `warm-up ${what}`);
  return delivered();
}

/**
 * Where consumers wait while a backlog is published (`measureBacklog`): open, a handler passes at
 * once; closed, `wait()` resolves when it opens again.
 */
export class Gate {
  private release?: () => void;
  private opened: Promise<void> = Promise.resolve();

  get isOpen(): boolean {
    return this.release === undefined;
  }

  close(): void {
    if (this.release) return;
    this.opened = new Promise((resolve) => (this.release = resolve));
  }

  open(): void {
    const release = this.release;
    this.release = undefined;
    release?.();
  }

  /** Resolves once the gate is open. */
  wait(): Promise<void> {
    return this.opened;
  }
}

/**
 * Writes records `from` .. `from + count - 1` of a backlog to the consumers' topic, resolving once
 * the broker acknowledged them all (see writeKafkaBacklog).
 */
export type BacklogWriter = (from: number, count: number) => Promise<void>;

/**
 * The most records one backlog window holds. librdkafka's mock keeps at most 5 MB of records per
 * partition (rdkafka_mock.c, `max_size`) and drops the oldest beyond it: about 7,500 of the
 * bench's oslo-format records on each of an auto-created topic's 4 partitions. A larger
 * `--count` is measured as consecutive windows of this many.
 */
export const BACKLOG_WINDOW = 30_000;

/**
 * Consumer throughput on a backlog: sends `ctx.warmup` messages one at a time and waits until
 * `delivered()` counts them, closes `gate` (the consumers' handlers wait at it), has `write` put
 * the records in the broker, untimed, and then opens the gate: timed from there until
 * `delivered()` counts them all. The consumers have joined and warmed up, and what they read was
 * written before the window, so the window holds only consuming: no publishing shares the CPU.
 * Every side's backlog is written by the same writer in the same layout, so every side's consumers
 * fetch the same batches, whoever would have published them. A `ctx.count` above BACKLOG_WINDOW
 * is written and drained in windows of at most that many, one after another (the gate closed
 * again while each is written); the measurement is their sum: ops, time and CPU of the windows only.
 */
export async function measureBacklog(ctx: BenchContext, send: (i: number) => Promise<unknown>, write: BacklogWriter, delivered: () => number, gate: Gate, what: string): Promise<Measurement> {
  const windows = Math.ceil(ctx.count / BACKLOG_WINDOW);
  // --instructions and --profile mark one window; between several, the writer would count too.
  if (windows > 1 && ctx.mark) throw new Error(`a backlog of ${ctx.count} is ${windows} windows of at most ${BACKLOG_WINDOW}; profile or count instructions with --count ${BACKLOG_WINDOW} or less`);
  const base = await warmUp(ctx, send, delivered, what);
  let done = 0;
  let elapsedMs = 0;
  let windowCpuUs = 0;
  while (done < ctx.count) {
    const n = Math.min(BACKLOG_WINDOW, ctx.count - done);
    gate.close();
    await write(ctx.warmup + done, n);
    const target = done + n;
    const m = await measureWindow(ctx, async () => {
      gate.open();
      await waitUntil(() => delivered() - base >= target, `all ${what}`);
      return { ops: n };
    });
    done = target;
    elapsedMs += m.elapsedMs;
    windowCpuUs += m.windowCpuUs ?? 0;
  }
  return { ops: ctx.count, elapsedMs, windowCpuUs };
}

/** Where the `backlog-*` scenarios run: brokers whose consumers fetch (see consumeScenario). */
export const BACKLOG_DRIVERS: readonly string[] = Object.freeze(['kafka']);

/** How a consume scenario reads: one consumer, two in one pool (group), or one batch consumer. */
export type ConsumeMode = 'plain' | 'pooled' | 'batch';

/** `live`: published while consumed (`measureDelivered`); `backlog`: published first, then consumed (`measureBacklog`). */
export type ConsumeTiming = 'live' | 'backlog';

/** `measureDelivered` or `measureBacklog`, by `timing`; `write` and `gate` are used by `backlog` only. */
export function measureConsumed(ctx: BenchContext, timing: ConsumeTiming, send: (i: number) => Promise<unknown>, write: BacklogWriter, delivered: () => number, gate: Gate, what: string): Promise<Measurement> {
  return timing === 'live' ? measureDelivered(ctx, send, delivered, what) : measureBacklog(ctx, send, write, delivered, gate, what);
}

/** Sends `ctx.warmup` one by one, then `ctx.count` with PUBLISH_WINDOW awaiting at a time: the window is the second part. */
export async function measureSent(ctx: BenchContext, send: (i: number) => Promise<unknown>): Promise<Measurement> {
  for (let i = 0; i < ctx.warmup; i++) await send(i);
  return measureWindow(ctx, async () => ({ ops: await keepInFlight(ctx.count, PUBLISH_WINDOW, ctx.inTime, send) }));
}

async function measureCalls(ctx: BenchContext, call: (i: number) => Promise<unknown>, window: number): Promise<Measurement> {
  for (let i = 0; i < ctx.warmup; i++) await call(i);
  const latencies: number[] = [];
  return measureWindow(ctx, async () => {
    await keepInFlight(ctx.count, window, ctx.inTime, async (i) => {
      const t0 = performance.now();
      await call(i);
      latencies.push(performance.now() - t0);
    });
    return { ops: latencies.length, latenciesMs: latencies };
  });
}

/** Polls `cond` every millisecond: a setImmediate spin would take CPU from the broker on a small machine. */
export async function waitUntil(cond: () => boolean, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`bench: ${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 1));
  }
}
