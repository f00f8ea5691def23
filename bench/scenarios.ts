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
import type { BenchContext, Measurement, Scenario } from './harness.js';
import { PAYLOAD_TEXT, CONCURRENCY, BATCH_SIZE, BATCH_TIMEOUT_MS, PUBLISH_WINDOW, measureSequentialCalls, measureConcurrentCalls, measureDelivered, Gate, BACKLOG_DRIVERS, measureConsumed, measureSent, waitUntil, type BacklogWriter, type ConsumeMode, type ConsumeTiming } from './measure.js';

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
          // The notifier also fills its default `<topic>.info` queue, which a pool does not read. A
          // backlog (Kafka only) was written to a topic of its own, which keeps no queue to empty, and
          // past 30,000 records the mock has already dropped the oldest (measureBacklog).
          if (pool && timing === 'live' && transport.driver.capabilities.durableNotifications) await drain(transport, topic, ctx.warmup + measured.ops);
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
