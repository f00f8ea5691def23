// Raw kafkajs baselines for the Kafka scenarios: what a careful kafkajs user writes for the same
// job, with the same counts, payload, in-flight limits, warm-up and timing as bench/scenarios.ts,
// and the consumer settings tidings' bench URL gives its own consumers (the mock cluster's group
// joins wait about sessionTimeout - 1 s, so both sides use the short ones of SHORT_GROUP_QUERY).
//
// - notify-publish: an idempotent producer (acks all, as tidings' default), each notification
//   sent and awaited on its own with PUBLISH_WINDOW in flight; what is sent in one event-loop turn
//   goes out as one `sendBatch` (see Sender).
// - consume-*: the same windowed producer while consumers in one group (one, two for pooled)
//   read with `eachBatch`, decode each record and commit after handling it (at-least-once, as
//   tidings commits after its handler): `resolveOffset` per record, and what is resolved and not
//   committed is committed once `commit_interval_ms` of the bench URL passed since the last commit
//   (tidings' listeners commit on the same interval), asked after each batch, or each 100 records
//   in batch mode (`consume-batch`, batchSize 100). kafkajs's autoCommit would commit after every
//   fetched batch (its `autoCommitInterval` only adds commits). Before 2026-11-24 the baselines
//   called `commitOffsetsIfNecessary()` with autoCommit off, which commits nothing: they never
//   committed.
// - cast: the producer sends to a request topic; one consumer in the servers' group handles and
//   commits; timed until every cast was handled.
// - call-sequential / call-concurrent: request/reply over two topics. The client sends
//   `{id, replyTo, args}` to the request topic; the server (a group consumer) sends `{id, result}`
//   to the caller's reply topic; the client reads its reply topic with its own group, joined once
//   before the timing, and resolves calls by id. Both consumers fetch with `maxWaitTimeInMs` =
//   `rpc_max_wait_ms` of tidings' `--kafka-mock` bench URL, so neither side waits longer for an empty fetch.
//
// The notification scenarios take a record shape (`NotificationShape`): this file's is a small
// JSON body; raw-kafka-oslo.ts uses the same clients with oslo's Kafka notification format.
//
// Every topic and group is unique per run. The mock cluster cannot delete topics; it keeps
// everything in memory until it stops.
import { Kafka, logLevel, type Consumer, type EachBatchPayload, type Producer } from 'kafkajs';
import { withHeartbeats } from '../src/drivers/kafka/client/kafkajs.js';
import { fixKafkajsIdleLoop } from '../src/drivers/kafka/client/kafkajs-idle-fix.js';
import { silentLogger } from '../src/core/logger.js';
import { MOCK_RPC_MAX_WAIT_MS } from '../test/support/kafka-broker.js';
import type { BaselineSet, BenchContext, Measurement } from './harness.js';
import { BATCH_SIZE, Gate, PAYLOAD_TEXT, measureConcurrentCalls, measureConsumed, measureDelivered, measureSent, measureSequentialCalls, waitUntil, type ConsumeMode, type ConsumeTiming } from './measure.js';

// tidings' kafkajs adapter stops kafkajs 2.2's idle 1 ms timer loop on the connections of the
// Kafka instances it creates; the baselines' instances get the same fix (in --baselines-only runs
// too), so that both sides use the same kafkajs and the ratio measures tidings' own work.

/** Consumer settings matching tidings' short-join bench URL (SHORT_GROUP_QUERY). */
const CONSUMER = { sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10_000, maxWaitTimeInMs: 200 } as const;

/** tidings' default `commit_interval_ms`, for a bench URL without one. */
const DEFAULT_COMMIT_INTERVAL_MS = 100;

/** How long a raw consumer may take to join its group (the mock's joins take seconds). */
const JOIN_DEADLINE_MS = 60_000;

const body = (i: number) => JSON.stringify({ i, text: PAYLOAD_TEXT });

/** How the notification scenarios write and read a record. */
export interface NotificationShape {
  /** The record value of notification `i`. */
  encode(i: number): string;
  /** What a consumer does with a record value before counting it. */
  decode(value: string): unknown;
}

/** A plain kafkajs user's notification: a small JSON body, parsed by the consumer. */
const PLAIN: NotificationShape = { encode: body, decode: (v) => JSON.parse(v) };

/** The bench URL's brokers (`kafka://h1:p1,h2:p2/...`). */
function brokersOf(ctx: BenchContext): string[] {
  return ctx.transportUrl.hosts.map((h) => `${h.hostname ?? '127.0.0.1'}:${h.port ?? 9092}`);
}

interface Clients {
  kafka: Kafka;
  /** How often consumers commit what they handled: the bench URL's `commit_interval_ms`, as tidings' listeners. */
  commitIntervalMs: number;
  producer(): Promise<Sender>;
  consumer(groupId: string, maxWaitTimeInMs?: number): Consumer;
}

/** A silent kafkajs client on the bench URL's brokers, retrying a request up to 8 times. */
function kafkaOf(ctx: BenchContext, clientId: string): Kafka {
  const kafka = new Kafka({ brokers: brokersOf(ctx), clientId, logLevel: logLevel.NOTHING, retry: { retries: 8, initialRetryTime: 100 } });
  fixKafkajsIdleLoop(kafka, silentLogger);
  return kafka;
}

/** Runs `run` with lazily made producers and consumers, all disconnected afterwards. */
async function withKafka(ctx: BenchContext, run: (c: Clients) => Promise<Measurement>): Promise<Measurement> {
  const kafka = kafkaOf(ctx, 'tidings-bench-raw');
  const opened: Array<{ disconnect(): Promise<void> }> = [];
  try {
    return await run({
      kafka,
      commitIntervalMs: Number(ctx.transportUrl.query.commit_interval_ms ?? DEFAULT_COMMIT_INTERVAL_MS),
      producer: async () => {
        const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: true });
        opened.push(p);
        await p.connect();
        return new Sender(p);
      },
      consumer: (groupId, maxWaitTimeInMs = CONSUMER.maxWaitTimeInMs) => {
        const c = kafka.consumer({ ...CONSUMER, maxWaitTimeInMs, groupId, allowAutoTopicCreation: true });
        opened.push(c);
        return c;
      },
    });
  } finally {
    await Promise.all(opened.map((o) => o.disconnect().catch(() => undefined)));
  }
}

/**
 * Connects, subscribes from the beginning and runs `eachBatch`; resolves once the group was joined.
 * As tidings' consumers do, a consumer that crashed without kafkajs restarting it (the mock answers
 * a SyncGroup that lost a race with two members joining at once with INVALID_REQUEST) is run again;
 * a join that never comes fails the run instead of hanging it.
 */
async function startConsumer(c: Consumer, topic: string, eachBatch: (p: EachBatchPayload) => Promise<void>): Promise<void> {
  let joined!: () => void;
  const join = new Promise<void>((resolve) => (joined = resolve));
  const config = { autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 8, eachBatch };
  c.on(c.events.GROUP_JOIN, () => joined());
  c.on(c.events.CRASH, (e) => {
    if (!e.payload.restart) setTimeout(() => void c.connect().then(() => c.run(config)).catch(() => undefined), 1000).unref();
  });
  await c.connect();
  await c.subscribe({ topic, fromBeginning: true });
  await c.run(config);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([join, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`bench: raw kafkajs consumer of ${topic} did not join its group within ${JOIN_DEADLINE_MS} ms`)), JOIN_DEADLINE_MS)))]).finally(() => clearTimeout(timer));
}

/**
 * A consumer that decodes and handles each record and resolves its offset; what is resolved is
 * committed once `commitIntervalMs` passed since the last commit, asked after each batch (or each
 * `chunk` records). While `gate` is closed, it waits before its next record.
 */
async function committingConsumer(c: Consumer, topic: string, commitIntervalMs: number, onRecord: (value: string) => void, chunk = Infinity, gate?: Gate): Promise<void> {
  let lastCommit = performance.now();
  await startConsumer(c, topic, async ({ batch, resolveOffset, commitOffsetsIfNecessary, uncommittedOffsets, heartbeat }) => {
    const commitIfDue = async () => {
      if (performance.now() - lastCommit < commitIntervalMs) return;
      lastCommit = performance.now();
      await commitOffsetsIfNecessary(uncommittedOffsets());
    };
    let n = 0;
    for (const m of batch.messages) {
      // Heartbeating while it waits, so that the group keeps the member.
      if (gate && !gate.isOpen) await withHeartbeats(gate.wait(), heartbeat, CONSUMER.heartbeatInterval);
      onRecord(m.value?.toString('utf8') ?? '');
      resolveOffset(m.offset);
      if (++n % chunk === 0) await commitIfDue();
    }
    await commitIfDue();
    await heartbeat();
  });
}

/**
 * Sends records one by one, resolving each once the broker acknowledged it; what is sent in one
 * event-loop turn goes out as one `sendBatch` (kafkajs has no linger of its own, and an
 * idempotent producer has one request in flight: one request per record would cap the rate at one
 * round trip per record). tidings' producer does the same.
 */
class Sender {
  private batch: Array<{ topic: string; value: string; resolve: () => void; reject: (e: unknown) => void }> = [];

  constructor(private readonly producer: Producer) {}

  send(topic: string, value: string): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.batch.length === 0) process.nextTick(() => this.flush());
      this.batch.push({ topic, value, resolve, reject });
    });
  }

  private flush(): void {
    const batch = this.batch;
    this.batch = [];
    const byTopic = new Map<string, Array<{ value: string }>>();
    for (const r of batch) {
      const list = byTopic.get(r.topic);
      if (list) list.push({ value: r.value });
      else byTopic.set(r.topic, [{ value: r.value }]);
    }
    this.producer.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) }).then(
      () => batch.forEach((r) => r.resolve()),
      (err: unknown) => batch.forEach((r) => r.reject(err)),
    );
  }
}

/** Records per partition in each request of a backlog writer: one record batch of this many per partition. */
export const BACKLOG_BATCH = 100;

/**
 * Writes records `from` .. `from + count - 1` of a `backlog-*` scenario to `topic` (which exists),
 * `encode(i)` each: record i to partition i mod the topic's partitions, BACKLOG_BATCH records per
 * partition in each request, so every partition holds record batches of BACKLOG_BATCH, whichever
 * side's consumers read them and whatever they would have been published with. On the mock a
 * fetch returns one record batch per partition, so every side fetches the same batches.
 */
export async function writeKafkaBacklog(ctx: BenchContext, topic: string, encode: (i: number) => string, from: number, count: number): Promise<void> {
  const kafka = kafkaOf(ctx, 'tidings-bench-backlog');
  const admin = kafka.admin();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  try {
    await Promise.all([admin.connect(), producer.connect()]);
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    const partitions = topics[0]?.partitions.length ?? 0;
    if (partitions === 0) throw new Error(`bench: backlog topic ${topic} has no partitions`);
    const perRequest = BACKLOG_BATCH * partitions;
    for (let start = from; start < from + count; start += perRequest) {
      const messages = [];
      for (let i = start; i < Math.min(start + perRequest, from + count); i++) messages.push({ partition: i % partitions, value: encode(i) });
      await producer.send({ topic, acks: -1, messages });
    }
  } finally {
    await Promise.all([admin.disconnect(), producer.disconnect()].map((p) => p.catch(() => undefined)));
  }
}

/** Sends `body(i)` to `topic`, resolving once the broker acknowledged it. */
const send = (s: Sender, topic: string, i: number) => s.send(topic, body(i));

/**
 * `consumers` reading records of `shape` in one group, as consumeScenario: `live` publishes with
 * PUBLISH_WINDOW sends in flight while they read, `backlog` has them read what was published while
 * they waited at the gate.
 */
const rawConsume =
  (shape: NotificationShape) =>
  (consumers: number, mode: ConsumeMode, timing: ConsumeTiming) =>
  (ctx: BenchContext): Promise<Measurement> =>
    withKafka(ctx, async (k) => {
      const topic = ctx.unique('bench-raw-notify');
      const group = ctx.unique('bench-raw-group');
      const producer = await k.producer();
      // The topic exists before the consumers subscribe (the mock auto-creates it on produce).
      await producer.send(topic, shape.encode(-1));
      let consumed = -1; // the creating record
      const gate = new Gate();
      await Promise.all(Array.from({ length: consumers }, () => committingConsumer(k.consumer(group), topic, k.commitIntervalMs, (v) => (shape.decode(v), consumed++), mode === 'batch' ? BATCH_SIZE : Infinity, gate)));
      try {
        return await measureConsumed(ctx, timing, (i) => producer.send(topic, shape.encode(i)), (from, n) => writeKafkaBacklog(ctx, topic, shape.encode, from, n), () => consumed, gate, 'raw notifications consumed');
      } finally {
        gate.open();
      }
    });

/** notify-publish and the consume scenarios with records of `shape`. */
export function notificationBaselines(shape: NotificationShape): BaselineSet {
  const consume = rawConsume(shape);
  return {
    'notify-publish': (ctx) =>
      withKafka(ctx, async (k) => {
        const topic = ctx.unique('bench-raw-notify');
        const producer = await k.producer();
        return measureSent(ctx, (i) => producer.send(topic, shape.encode(i)));
      }),
    'consume-plain': consume(1, 'plain', 'live'),
    'consume-pooled': consume(2, 'pooled', 'live'),
    'consume-batch': consume(1, 'batch', 'live'),
    'backlog-plain': consume(1, 'plain', 'backlog'),
    'backlog-pooled': consume(2, 'pooled', 'backlog'),
    'backlog-batch': consume(1, 'batch', 'backlog'),
  };
}

/** Request/reply over a request topic and the caller's reply topic (see the file comment). */
function withRawRpc(ctx: BenchContext, run: (call: (i: number) => Promise<unknown>) => Promise<Measurement>): Promise<Measurement> {
  return withKafka(ctx, async (k) => {
    const requests = ctx.unique('bench-raw-rpc');
    const replyTo = ctx.unique('bench-raw-reply');
    const [serverOut, clientOut] = await Promise.all([k.producer(), k.producer()]);
    // Both topics exist before anyone subscribes.
    await Promise.all([clientOut.send(requests, '{}'), serverOut.send(replyTo, '{}')]);
    await committingConsumer(k.consumer(ctx.unique('bench-raw-servers'), MOCK_RPC_MAX_WAIT_MS), requests, k.commitIntervalMs, (v) => {
      const req = JSON.parse(v) as { id?: string; replyTo?: string; args?: unknown };
      if (req.id === undefined || !req.replyTo) return;
      void serverOut.send(req.replyTo, JSON.stringify({ id: req.id, result: req.args }));
    });
    const pending = new Map<string, (v: unknown) => void>();
    await committingConsumer(k.consumer(ctx.unique('bench-raw-caller'), MOCK_RPC_MAX_WAIT_MS), replyTo, k.commitIntervalMs, (v) => {
      const reply = JSON.parse(v) as { id?: string; result?: unknown };
      const resolve = reply.id === undefined ? undefined : pending.get(reply.id);
      if (!resolve) return;
      pending.delete(reply.id!);
      resolve(reply.result);
    });
    let next = 0;
    return run(
      (i) =>
        new Promise((resolve, reject) => {
          const id = String(next++);
          pending.set(id, resolve);
          clientOut.send(requests, JSON.stringify({ id, replyTo, args: { i, text: PAYLOAD_TEXT } })).catch(reject);
        }),
    );
  });
}

export const baselines: BaselineSet = {
  'call-sequential': (ctx) => withRawRpc(ctx, (call) => measureSequentialCalls(ctx, call)),

  'call-concurrent': (ctx) => withRawRpc(ctx, (call) => measureConcurrentCalls(ctx, call)),

  cast: (ctx) =>
    withKafka(ctx, async (k) => {
      const topic = ctx.unique('bench-raw-cast');
      const producer = await k.producer();
      await send(producer, topic, -1);
      let handled = -1;
      await committingConsumer(k.consumer(ctx.unique('bench-raw-servers')), topic, k.commitIntervalMs, (v) => (JSON.parse(v), handled++));
      await waitUntil(() => handled >= 0, 'raw cast topic read');
      return measureDelivered(ctx, (i) => send(producer, topic, i), () => handled, 'raw casts handled');
    }),

  ...notificationBaselines(PLAIN),
};
