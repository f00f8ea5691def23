// The tidings scenarios, by name. A raw-client baseline for a broker registers under the same
// names (see baselines.ts). Every scenario uses its own transports and unique topics.
import {
  NotificationResult,
  Notifier,
  Target,
  getBatchNotificationListener,
  getNotificationListener,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  type Transport,
} from '../src/index.js';
import { measureWindow, type BenchContext, type Measurement, type Scenario } from './harness.js';

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
 * Consumer throughput on a backlog: sends `ctx.warmup` messages one at a time and waits until
 * `delivered()` counts them, closes `gate` (the consumers' handlers wait at it), has `write` put
 * `ctx.count` records in the broker, untimed, and then opens the gate: timed from there until
 * `delivered()` counts them all. The consumers have joined and warmed up, and what they read was
 * written before the window, so the window holds only consuming: no publishing shares the CPU.
 * Every side's backlog is written by the same writer in the same layout, so every side's consumers
 * fetch the same batches, whoever would have published them.
 */
export async function measureBacklog(ctx: BenchContext, send: (i: number) => Promise<unknown>, write: BacklogWriter, delivered: () => number, gate: Gate, what: string): Promise<Measurement> {
  const base = await warmUp(ctx, send, delivered, what);
  gate.close();
  await write(ctx.warmup, ctx.count);
  return measureWindow(ctx, async () => {
    gate.open();
    await waitUntil(() => delivered() - base >= ctx.count, `all ${what}`);
    return { ops: ctx.count };
  });
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

/** A server with `echo` and `sink` on its own transport; the client on another, as across processes. */
async function withRpc(ctx: BenchContext, body: (rpc: { call: (i: number) => Promise<unknown>; cast: (i: number) => Promise<void>; handled: () => number }) => Promise<Measurement>): Promise<Measurement> {
  const serverTransport = await getRpcTransport(ctx.url);
  const clientTransport = await getRpcTransport(ctx.url);
  const topic = ctx.unique('bench-rpc');
  let handled = 0;
  const server = getRpcServer(serverTransport, new Target({ topic, server: 'bench' }), [
    { echo: (_c: unknown, args: unknown) => args, sink: () => void handled++ },
  ], { executorSize: 64 });
  await server.start();
  try {
    const client = getRpcClient(clientTransport, { topic }, { timeout: 30_000 });
    return await body({
      call: (i) => client.call({}, 'echo', { i, text: PAYLOAD_TEXT }),
      cast: (i) => client.cast({}, 'sink', { i, text: PAYLOAD_TEXT }),
      handled: () => handled,
    });
  } finally {
    await server.stop();
    await server.wait();
    await Promise.all([serverTransport.cleanup(), clientTransport.cleanup()]);
  }
}

const callSequential: Scenario = {
  name: 'call-sequential',
  description: 'one call at a time; latency p50/p99 and calls/s',
  unit: 'calls',
  run: (ctx) =>
    withRpc(ctx, ({ call }) => measureSequentialCalls(ctx, call)),
};

const callConcurrent: Scenario = {
  name: 'call-concurrent',
  description: `${CONCURRENCY} calls in flight; calls/s`,
  unit: 'calls',
  run: (ctx) =>
    withRpc(ctx, ({ call }) => measureConcurrentCalls(ctx, call)),
};

const cast: Scenario = {
  name: 'cast',
  description: `casts, ${PUBLISH_WINDOW} awaiting the broker's accept at a time, timed until the server handled all`,
  unit: 'casts',
  run: (ctx) =>
    withRpc(ctx, async ({ cast, handled }) => {
      return measureDelivered(ctx, cast, handled, 'casts handled');
    }),
};

interface NotifySide {
  transport: Transport;
  notifier: Notifier;
  topic: string;
}

async function withNotifier(ctx: BenchContext, body: (side: NotifySide) => Promise<Measurement>): Promise<Measurement> {
  const transport = await getNotificationTransport(ctx.url);
  const topic = ctx.unique('bench-notify');
  try {
    const notifier = new Notifier(transport, { publisherId: 'bench', driver: 'messagingv2', topics: [topic] });
    return await body({ transport, notifier, topic });
  } finally {
    await transport.cleanup();
  }
}

const publish = (notifier: Notifier, i: number) => notifier.info({}, 'bench.event', { i, text: PAYLOAD_TEXT });

const notifyPublish: Scenario = {
  name: 'notify-publish',
  description: `notifications published, ${PUBLISH_WINDOW} awaiting the broker's accept at a time`,
  unit: 'notifications',
  run: (ctx) =>
    withNotifier(ctx, async ({ transport, notifier, topic }) => {
      const measured = await measureSent(ctx, (i) => publish(notifier, i));
      // A broker that keeps notifications for absent listeners must not be left holding them.
      if (transport.driver.capabilities.durableNotifications) await drain(transport, topic, ctx.warmup + measured.ops);
      return measured;
    }),
};

async function drain(transport: Transport, topic: string, expected: number): Promise<void> {
  let seen = 0;
  const listener = getNotificationListener(transport, [new Target({ topic })], [{ info: () => void seen++ }]);
  await listener.start();
  try {
    await waitUntil(() => seen >= expected, 'drained backlog', 60_000);
  } finally {
    await listener.stop();
    await listener.wait();
  }
}

/**
 * Listeners consuming notifications: `live` publishes while they consume (timed from the first
 * publish to the last consume, `measureDelivered`), `backlog` has them consume what was published
 * while they waited (`measureBacklog`).
 */
function consumeScenario(name: string, description: string, listenerCount: number, mode: ConsumeMode, timing: ConsumeTiming): Scenario {
  return {
    name,
    description,
    unit: 'notifications',
    // A backlog stays in the broker while consumers wait only where they fetch: a push consumer
    // without a prefetch limit (oslo's default on RabbitMQ) would take it into its memory.
    ...(timing === 'backlog' ? { drivers: BACKLOG_DRIVERS } : {}),
    run: (ctx) =>
      withNotifier(ctx, async ({ transport, notifier, topic }) => {
        let consumed = 0;
        const gate = new Gate();
        const handled = () => {
          consumed++;
          return NotificationResult.HANDLED;
        };
        const handledBatch = (messages: unknown[]) => void (consumed += messages.length);
        const targets = [new Target({ topic })];
        const pool = mode === 'pooled' ? ctx.unique('pool') : undefined;
        const listeners = Array.from({ length: listenerCount }, () =>
          mode === 'batch'
            ? getBatchNotificationListener(transport, targets, [{ info: (messages: unknown[]) => (gate.isOpen ? handledBatch(messages) : gate.wait().then(() => handledBatch(messages))) }], { batchSize: BATCH_SIZE, batchTimeout: BATCH_TIMEOUT_MS[timing] })
            : getNotificationListener(transport, targets, [{ info: () => (gate.isOpen ? handled() : gate.wait().then(handled)) }], pool ? { pool } : {}),
        );
        await Promise.all(listeners.map((l) => l.start()));
        try {
          // The backlog is written as the oslo-shaped baseline writes its own (oslo's Kafka format, which
          // tidings' Notifier writes too), to the topic of the `info` priority.
          const write: BacklogWriter = async (from, n) => {
            const [{ writeKafkaBacklog }, { osloKafkaNotificationText }] = await Promise.all([import('./raw-kafka.js'), import('./oslo-envelope.js')]);
            await writeKafkaBacklog(ctx, `${topic}.info`, osloKafkaNotificationText, from, n);
          };
          const measured = await measureConsumed(ctx, timing, (i) => publish(notifier, i), write, () => consumed, gate, 'notifications consumed');
          // The notifier also fills its default `<topic>.info` queue, which a pool does not read.
          if (pool && transport.driver.capabilities.durableNotifications) await drain(transport, topic, ctx.warmup + measured.ops);
          return measured;
        } finally {
          gate.open();
          await Promise.all(listeners.map((l) => l.stop()));
          await Promise.all(listeners.map((l) => l.wait()));
        }
      }),
  };
}

/** Every tidings scenario, in the order they run by default. */
export const SCENARIOS: readonly Scenario[] = [
  callSequential,
  callConcurrent,
  cast,
  notifyPublish,
  consumeScenario('consume-plain', 'one listener on the shared queue; published and consumed/s', 1, 'plain', 'live'),
  consumeScenario('consume-pooled', 'two listeners sharing one pool; consumed/s', 2, 'pooled', 'live'),
  consumeScenario('consume-batch', `one batch listener, batchSize ${BATCH_SIZE}; consumed/s`, 1, 'batch', 'live'),
  consumeScenario('backlog-plain', 'one listener on the shared queue reading a backlog published while it waited; consumed/s', 1, 'plain', 'backlog'),
  consumeScenario('backlog-pooled', 'two listeners sharing one pool reading a backlog; consumed/s', 2, 'pooled', 'backlog'),
  consumeScenario('backlog-batch', `one batch listener, batchSize ${BATCH_SIZE}, reading a backlog; consumed/s`, 1, 'batch', 'backlog'),
];
