// The oslo-shaped raw baselines for RabbitMQ ("raw-oslo"): raw amqplib doing exactly the protocol
// work tidings must do to interoperate with Python oslo.messaging, and nothing else. The gap
// between tidings and these is tidings' own overhead; the gap between these and raw-amqp.ts is
// the protocol's. Used by the bench (second baseline column) and by amqp-protocol-cost.ts.
//
// What every scenario here does, as tidings does it on the wire (oslo-wire.md §1):
// - a topic exchange (unique per run, like the control exchange `openstack`), messages routed by
//   topic; confirm channels for every publish; oslo's properties (persistent, JSON content type,
//   priority 0, an empty headers table); the 2.0 envelope (the message JSON inside JSON) with
//   `_unique_id` (and `_msg_id`, `_reply_q`, `_timeout` on calls); consumers decode both layers.
// - RPC: the client publishes (expiration = the call timeout) and consumes its `reply_<hex>`
//   queue on one connection, acking each reply; the server consumes on one connection, acks each
//   request before handling it, and replies on a second (publisher) connection to the default
//   exchange, mandatory, on a confirm channel. No prefetch limit, as oslo's default.
// - `TIDINGS_BENCH_OSLO_NO_CONFIRMS=1`: the RPC scenarios and notify-publish on plain channels
//   (see NO_CONFIRMS below); the consumers' publishers keep their confirms.
// - notifications: `<topic>.info` declared and bound by the publisher (as the notifier does);
//   a pool consumes its own queue bound to the same key (both queues get every message).
import type { Channel, ChannelModel, ConfirmChannel, Options } from 'amqplib';
import type { BaselineSet, BenchContext, Measurement } from './harness.js';
import { rawConsume, withConnections, type PublishShape } from './raw-amqp.js';
import { envelope, hexId, osloNotification, unenvelope } from './oslo-envelope.js';
import { PAYLOAD_TEXT, measureDelivered, measureSent, measureConcurrentCalls, measureSequentialCalls, type RpcSides } from './measure.js';

/** oslo's properties on every message, as tidings sends them. */
export const OSLO_PROPS: Readonly<Options.Publish> = Object.freeze({ contentType: 'application/json', contentEncoding: 'utf-8', deliveryMode: 2, priority: 0, headers: {} });
/** tidings' bench client timeout, sent as the request's `expiration`. */
export const CALL_TIMEOUT_MS = 30_000;
/** A reply: mandatory, so the broker returns one no queue takes. */
const REPLY_PROPS: Readonly<Options.Publish> = Object.freeze({ ...OSLO_PROPS, mandatory: true });
/** As tidings declares `<topic>` and notification queues by default (amqp_durable_queues=false). */
const QUEUE_OPTIONS: Readonly<Options.AssertQueue> = Object.freeze({ durable: false, autoDelete: false });

/**
 * `TIDINGS_BENCH_OSLO_NO_CONFIRMS=1` (the peers bench's `raw-oslo-noconfirm`): the same wire work
 * on plain channels, a publish resolving once amqplib took it (after a `drain` when its buffer is
 * full), as Moleculer's transporter and NestJS's replies publish. What oslo's protocol costs
 * without publisher confirms, which oslo.messaging and tidings always use.
 */
const NO_CONFIRMS = process.env.TIDINGS_BENCH_OSLO_NO_CONFIRMS === '1';

/** A channel to publish on: a confirm channel, or a plain one without confirms. */
const publishChannel = (conn: ChannelModel): Promise<Channel> => (NO_CONFIRMS ? conn.createChannel() : conn.createConfirmChannel());

/** A publish resolving on its own confirm (without confirms: once amqplib took it). */
function confirmed(ch: Channel, exchange: string, routingKey: string, content: Buffer, props: Options.Publish = OSLO_PROPS): Promise<void> {
  if (NO_CONFIRMS) return ch.publish(exchange, routingKey, content, props) ? Promise.resolve() : new Promise((resolve) => ch.once('drain', resolve));
  return new Promise((resolve, reject) => {
    (ch as ConfirmChannel).publish(exchange, routingKey, content, props, (err) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve()));
  });
}

/** A topic exchange per run, deleted with its last binding. */
async function declareExchange(ctx: BenchContext, ch: Channel): Promise<string> {
  const exchange = ctx.unique('bench-oslo-x');
  await ch.assertExchange(exchange, 'topic', { durable: false, autoDelete: true });
  return exchange;
}

/**
 * What each side of an oslo-shaped RPC does with a message: raw-oslo's own (OSLO_RPC), or one of
 * the contract ladder's rungs (amqp-contract-cost.ts), which put tidings' checks in its place.
 */
export interface OsloRpcShape {
  /** The body of call `i` (a cast when `call` is undefined). */
  request(i: number, call?: { readonly msgId: string; readonly replyQueue: string }): Buffer;
  /**
   * The server's handling of a request body (acked already): `reply(address, body)` for a call.
   * What it returns (a promise, say) is not awaited.
   */
  serve(content: Buffer, reply: (address: string, body: Buffer) => void): unknown;
  /** The client's reading of a reply body: its `_msg_id`, and its result (an Error for a failure). */
  answer(content: Buffer): { readonly msgId: unknown; readonly result: unknown };
  /** Per call, the client's bookkeeping around the wait (a deadline timer, say): the resolve to register. */
  waitFor?(msgId: string, resolve: (value: unknown) => void): (value: unknown) => void;
}

/** raw-oslo: both JSON layers by hand, nothing checked, the request's args echoed back. */
export const OSLO_RPC: OsloRpcShape = {
  request: (i, call) =>
    envelope(
      call === undefined
        ? { method: 'sink', args: { i, text: PAYLOAD_TEXT }, _unique_id: hexId() }
        : { method: 'echo', args: { i, text: PAYLOAD_TEXT }, _msg_id: call.msgId, _reply_q: call.replyQueue, _timeout: null, _unique_id: hexId() },
    ),
  serve(content, reply) {
    const req = unenvelope(content);
    if (typeof req._reply_q !== 'string') return;
    reply(req._reply_q, envelope({ result: req.args, failure: null, ending: true, _msg_id: req._msg_id, _unique_id: hexId() }));
  },
  answer(content) {
    const reply = unenvelope(content);
    return { msgId: reply._msg_id, result: reply.result };
  },
};

/** An oslo-shaped RPC server (listener + publisher connections) and client (one connection). */
export function withOsloRpc(ctx: BenchContext, run: (rpc: RpcSides) => Promise<Measurement>, shape: OsloRpcShape = OSLO_RPC): Promise<Measurement> {
  const topic = ctx.unique('bench-oslo-rpc');
  const replyQueue = `reply_${hexId()}`;
  return withConnections(ctx, 3, [topic, replyQueue], async ([listenConn, serverPubConn, clientConn]) => {
    const server = await listenConn.createChannel();
    const exchange = await declareExchange(ctx, server);
    await server.assertQueue(topic, QUEUE_OPTIONS);
    await server.bindQueue(topic, exchange, topic);
    const replies = await publishChannel(serverPubConn);
    const reply = (address: string, body: Buffer) => void confirmed(replies, '', address, body, REPLY_PROPS);
    let handled = 0;
    await server.consume(topic, (m) => {
      if (!m) return;
      server.ack(m); // oslo acks a request before dispatching it
      handled++;
      void shape.serve(m.content, reply);
    });

    const requests = await publishChannel(clientConn);
    const replyCh = await clientConn.createChannel();
    await replyCh.assertQueue(replyQueue, { durable: false, autoDelete: false, exclusive: false, arguments: { 'x-expires': 1_800_000 } });
    const pending = new Map<unknown, (value: unknown) => void>();
    await replyCh.consume(replyQueue, (m) => {
      if (!m) return;
      replyCh.ack(m);
      const { msgId, result } = shape.answer(m.content);
      const resolve = pending.get(msgId);
      if (!resolve) return;
      pending.delete(msgId);
      resolve(result);
    });
    const callProps: Options.Publish = { ...OSLO_PROPS, expiration: String(CALL_TIMEOUT_MS) };
    return run({
      call: (i) =>
        new Promise((resolve) => {
          const msgId = hexId();
          pending.set(msgId, shape.waitFor ? shape.waitFor(msgId, resolve) : resolve);
          // The call resolves on its reply; the request's confirm is not awaited (as tidings).
          void confirmed(requests, exchange, topic, shape.request(i, { msgId, replyQueue }), callProps);
        }),
      cast: (i) => confirmed(requests, exchange, topic, shape.request(i)),
      handled: () => handled,
    });
  });
}

/** Notifications to `<topic>.info` through the run's topic exchange; a pool reads its own queue. */
const OSLO_NOTIFY: PublishShape = {
  prefetch: 0,
  batchPrefetch: 0,
  decode: unenvelope,
  async prepare(ctx, pub, pooled, queues) {
    const exchange = await declareExchange(ctx, pub);
    const key = `${ctx.unique('bench-oslo-notify')}.info`;
    queues.push(key);
    await pub.assertQueue(key, QUEUE_OPTIONS);
    await pub.bindQueue(key, exchange, key);
    let consumeFrom = key;
    if (pooled) {
      consumeFrom = ctx.unique('bench-oslo-pool');
      queues.push(consumeFrom);
      await pub.assertQueue(consumeFrom, QUEUE_OPTIONS);
      await pub.bindQueue(consumeFrom, exchange, key);
    }
    return { consumeFrom, publish: (i) => confirmed(pub, exchange, key, osloNotification(i)) };
  },
};

export const baselines: BaselineSet = {
  'call-sequential': (ctx) => withOsloRpc(ctx, ({ call }) => measureSequentialCalls(ctx, call)),

  'call-concurrent': (ctx) => withOsloRpc(ctx, ({ call }) => measureConcurrentCalls(ctx, call)),

  cast: (ctx) =>
    withOsloRpc(ctx, async ({ cast, handled }) => {
      return measureDelivered(ctx, cast, handled, 'raw-oslo casts handled');
    }),

  'notify-publish': (ctx) => {
    const queues: string[] = [];
    return withConnections(ctx, 1, queues, async ([conn]) => {
      // A plain channel without confirms: OSLO_NOTIFY's publish (confirmed()) then awaits none.
      const pub = (await publishChannel(conn)) as ConfirmChannel;
      const { publish } = await OSLO_NOTIFY.prepare(ctx, pub, false, queues);
      return measureSent(ctx, publish);
    });
  },

  'consume-plain': rawConsume(1, 'plain', OSLO_NOTIFY),
  'consume-pooled': rawConsume(2, 'pooled', OSLO_NOTIFY),
  'consume-batch': rawConsume(1, 'batch', OSLO_NOTIFY),
};
