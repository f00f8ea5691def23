// Raw amqplib baselines for the RabbitMQ scenarios: what a careful amqplib user writes for the same
// job, with the same counts, payload, in-flight limits, warm-up and timing as bench/scenarios.ts.
//
// - RPC: the classic request/reply. The client publishes to the server's queue with `replyTo` = its
//   exclusive server-named reply queue and a `correlationId`; the server consumes with a prefetch,
//   parses the JSON, replies and acks. noDelay on every socket. No envelope, no confirms.
// - cast / notify-publish: a ConfirmChannel, persistent messages, PUBLISH_WINDOW confirms in flight.
// - consume-*: the same windowed confirmed publisher; consumers with a prefetch ack each message
//   (the batch consumer acks each batch of BATCH_SIZE with `allUpTo`), one connection each.
//
// Every queue is unique per run and deleted afterwards. Messages go straight to the queue via the
// default exchange (tidings routes through its topic exchange, which is a little more broker work).
import { randomUUID } from 'node:crypto';
import { connect, type Channel, type ChannelModel, type ConfirmChannel, type ConsumeMessage, type Options } from 'amqplib';
import type { BaselineSet, BenchContext, Measurement } from './harness.js';
import { BATCH_SIZE, PAYLOAD_TEXT, measureDelivered, measureSent, measureConcurrentCalls, measureSequentialCalls } from './measure.js';

/** Prefetch of the raw RPC server: the tidings RPC server runs up to 64 requests at once (executorSize). */
const SERVER_PREFETCH = 64;
/** Prefetch of the raw notification consumers; the batch consumer takes two batches' worth. */
const CONSUMER_PREFETCH = 100;
/** Batch deadline of the raw batch consumer, as `consume-batch` (batchTimeout 50 ms). */
const BATCH_TIMEOUT_MS = 50;

const JSON_PROPS: Readonly<Options.Publish> = Object.freeze({ contentType: 'application/json', contentEncoding: 'utf-8' });
const PERSISTENT: Readonly<Options.Publish> = Object.freeze({ ...JSON_PROPS, persistent: true });
/** As tidings declares `<topic>` and notification queues by default (amqp_durable_queues=false). */
const QUEUE_OPTIONS: Readonly<Options.AssertQueue> = Object.freeze({ durable: false, autoDelete: false });

const body = (i: number) => Buffer.from(JSON.stringify({ i, text: PAYLOAD_TEXT }));

/** One connection to the bench URL's first host, with Nagle off as tidings does. */
export function open(ctx: BenchContext): Promise<ChannelModel> {
  const host = ctx.transportUrl.hosts[0] ?? {};
  return connect(
    {
      protocol: 'amqp',
      hostname: host.hostname ?? '127.0.0.1',
      port: host.port ?? 5672,
      username: host.username ?? 'guest',
      password: host.password ?? 'guest',
      // amqplib unescapes the vhost.
      vhost: encodeURIComponent(ctx.transportUrl.virtualHost ?? '/'),
      heartbeat: 60,
    },
    { noDelay: true },
  );
}

/** Opens connections, runs `body`, then deletes `queues` (as they are when it ends) and closes everything. */
export async function withConnections(ctx: BenchContext, n: number, queues: string[], run: (conns: ChannelModel[]) => Promise<Measurement>): Promise<Measurement> {
  const conns = await Promise.all(Array.from({ length: n }, () => open(ctx)));
  try {
    return await run(conns);
  } finally {
    const ch = await conns[0].createChannel();
    for (const q of queues) await ch.deleteQueue(q).catch(() => undefined);
    await Promise.all(conns.map((c) => c.close().catch(() => undefined)));
  }
}

/** Publishes with a callback per message, so each publish is its own awaitable confirm. */
function confirmedPublish(ch: ConfirmChannel, queue: string, content: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    ch.sendToQueue(queue, content, PERSISTENT, (err) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve()));
  });
}

/** How a raw consumer reads: the plain baseline's choices here, the oslo-shaped ones in raw-amqp-oslo.ts. */
export interface ConsumerShape {
  /** Prefetch of a counting consumer; 0 = no limit (oslo's default `rabbit_qos_prefetch_count`). */
  readonly prefetch: number;
  /** Prefetch of the batch consumer. */
  readonly batchPrefetch: number;
  /** Decodes a body as the consumer must (plain JSON here; the 2.0 envelope for oslo). */
  decode(content: Buffer): unknown;
}

const PLAIN_CONSUMER: ConsumerShape = { prefetch: CONSUMER_PREFETCH, batchPrefetch: 2 * BATCH_SIZE, decode: (c) => JSON.parse(c.toString('utf8')) };

/** A consumer that acks each message and counts it. */
export async function countingConsumer(conn: ChannelModel, queue: string, prefetch: number, decode: (content: Buffer) => unknown = PLAIN_CONSUMER.decode): Promise<() => number> {
  const ch = await conn.createChannel();
  if (prefetch > 0) await ch.prefetch(prefetch);
  let seen = 0;
  await ch.consume(queue, (m) => {
    if (!m) return;
    decode(m.content);
    seen++;
    ch.ack(m);
  });
  return () => seen;
}

/** A consumer that hands out batches of up to BATCH_SIZE (or what arrived within BATCH_TIMEOUT_MS) and acks each batch at once. */
async function batchConsumer(conn: ChannelModel, queue: string, shape: ConsumerShape): Promise<() => number> {
  const ch = await conn.createChannel();
  if (shape.batchPrefetch > 0) await ch.prefetch(shape.batchPrefetch);
  let seen = 0;
  let batch: ConsumeMessage[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (batch.length === 0) return;
    const done = batch;
    batch = [];
    for (const m of done) shape.decode(m.content);
    seen += done.length;
    ch.ack(done[done.length - 1], true);
  };
  await ch.consume(queue, (m) => {
    if (!m) return;
    batch.push(m);
    if (batch.length >= BATCH_SIZE) flush();
    else timer ??= setTimeout(flush, BATCH_TIMEOUT_MS);
  });
  return () => seen;
}

interface RawRpc {
  call(i: number): Promise<unknown>;
}

/** A raw RPC server and client on two connections, as `withRpc` in scenarios.ts. */
async function withRawRpc(ctx: BenchContext, run: (rpc: RawRpc) => Promise<Measurement>): Promise<Measurement> {
  const queue = ctx.unique('bench-raw-rpc');
  return withConnections(ctx, 2, [queue], async ([serverConn, clientConn]) => {
    const server = await serverConn.createChannel();
    await server.assertQueue(queue, QUEUE_OPTIONS);
    await server.prefetch(SERVER_PREFETCH);
    await server.consume(queue, (m) => {
      if (!m) return;
      const args: unknown = JSON.parse(m.content.toString('utf8'));
      server.sendToQueue(m.properties.replyTo as string, Buffer.from(JSON.stringify({ result: args })), { ...JSON_PROPS, correlationId: m.properties.correlationId as string });
      server.ack(m);
    });

    const client: Channel = await clientConn.createChannel();
    const { queue: replyTo } = await client.assertQueue('', { exclusive: true });
    const pending = new Map<string, (value: unknown) => void>();
    await client.consume(
      replyTo,
      (m) => {
        if (!m) return;
        const id = m.properties.correlationId as string;
        const resolve = pending.get(id);
        if (!resolve) return;
        pending.delete(id);
        resolve((JSON.parse(m.content.toString('utf8')) as { result: unknown }).result);
      },
      { noAck: true },
    );
    return run({
      call: (i) =>
        new Promise((resolve) => {
          const correlationId = randomUUID();
          pending.set(correlationId, resolve);
          client.sendToQueue(queue, body(i), { ...JSON_PROPS, replyTo, correlationId });
        }),
    });
  });
}

/** Where a raw consume scenario publishes, declared on the publisher's channel. */
export interface PublishShape extends ConsumerShape {
  /**
   * Declares what publishing needs and returns the queue the consumers read (`pooled`: one
   * shared by every consumer) and a confirmed publish of message `i`. Queues it declares go
   * into `queues`, which are deleted afterwards.
   */
  prepare(ctx: BenchContext, pub: ConfirmChannel, pooled: boolean, queues: string[]): Promise<{ consumeFrom: string; publish: (i: number) => Promise<void> }>;
}

const PLAIN_PUBLISH: PublishShape = {
  ...PLAIN_CONSUMER,
  async prepare(ctx, pub, _pooled, queues) {
    const queue = ctx.unique('bench-raw-notify');
    queues.push(queue);
    await pub.assertQueue(queue, QUEUE_OPTIONS);
    return { consumeFrom: queue, publish: (i) => confirmedPublish(pub, queue, body(i)) };
  },
};

/** Publishes with PUBLISH_WINDOW confirms in flight while `consumers` consume; as consumeScenario. */
export function rawConsume(consumers: number, mode: 'plain' | 'pooled' | 'batch', shape: PublishShape = PLAIN_PUBLISH) {
  return (ctx: BenchContext): Promise<Measurement> => {
    const queues: string[] = [];
    return withConnections(ctx, 1 + consumers, queues, async ([pubConn, ...consumerConns]) => {
      const pub = await pubConn.createConfirmChannel();
      const { consumeFrom, publish } = await shape.prepare(ctx, pub, mode === 'pooled', queues);
      const counters = await Promise.all(consumerConns.map((c) => (mode === 'batch' ? batchConsumer(c, consumeFrom, shape) : countingConsumer(c, consumeFrom, shape.prefetch, shape.decode))));
      const consumed = () => counters.reduce((sum, f) => sum + f(), 0);
      return measureDelivered(ctx, publish, consumed, 'raw notifications consumed');
    });
  };
}

export const baselines: BaselineSet = {
  'call-sequential': (ctx) => withRawRpc(ctx, ({ call }) => measureSequentialCalls(ctx, call)),

  'call-concurrent': (ctx) => withRawRpc(ctx, ({ call }) => measureConcurrentCalls(ctx, call)),

  cast: (ctx) => {
    const queue = ctx.unique('bench-raw-cast');
    return withConnections(ctx, 2, [queue], async ([serverConn, clientConn]) => {
      const pub = await clientConn.createConfirmChannel();
      await pub.assertQueue(queue, QUEUE_OPTIONS);
      const handled = await countingConsumer(serverConn, queue, SERVER_PREFETCH);
      return measureDelivered(ctx, (i) => confirmedPublish(pub, queue, body(i)), handled, 'raw casts handled');
    });
  },

  'notify-publish': (ctx) => {
    const queue = ctx.unique('bench-raw-notify');
    return withConnections(ctx, 1, [queue], async ([conn]) => {
      const pub = await conn.createConfirmChannel();
      await pub.assertQueue(queue, QUEUE_OPTIONS);
      return measureSent(ctx, (i) => confirmedPublish(pub, queue, body(i)));
    });
  },

  'consume-plain': rawConsume(1, 'plain'),
  'consume-pooled': rawConsume(2, 'pooled'),
  'consume-batch': rawConsume(1, 'batch'),
};
