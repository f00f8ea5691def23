// The protocol-shaped raw baselines for Redis (second baseline column, "raw-oslo" in the table):
// raw ioredis doing exactly the Redis work tidings' driver does, and nothing else, so the gap
// between tidings and these is tidings' own overhead and the gap between these and raw-redis.ts is
// the price of the design the Redis issue asks for (requests in streams, oslo's envelope).
//
// - RPC: the request is oslo's 1.0 form (`_msg_id`, `_reply_q`, `_timeout`, `_unique_id`; no 2.0
//   envelope on Redis, as tidings writes it) behind its deadline (`x=<ms>;`), `RPUSH`ed to the topic's request list followed by `EXISTS` of
//   the topic's stream in the same write, the requests of one tick in one `RPUSH` (tidings' path
//   once it saw the stream: a request to an address whose stream is gone is taken back); the server pops its two request lists
//   (shared topic, its own `<topic>.<server>`) with `BLMPOP … LEFT COUNT 64`, decodes the JSON,
//   and pushes the replies (1.0 form too) of one pop to each caller as `RPUSH` and `PEXPIRE`
//   in one write on a second connection; the caller's reader pops its reply list with `BLMPOP … COUNT 100`
//   and resolves calls by `_msg_id`. Four connections, as tidings' two transports use (tidings'
//   server also blocks on its streams on one more, which nothing is written to here).
// - cast: the same request without a reply address, 16 in flight; timed until the server read all.
// - notifications: the notification tidings' Notifier writes on Redis (1.0 form), `XADD`ed 16 in flight;
//   consumers read in a group and `XACK` each read, as raw-redis.ts does.
import type { Redis } from 'ioredis';
import type { BaselineSet, BenchContext, Measurement } from './harness.js';
import { hexId, osloBareNotificationText, unbare } from './oslo-envelope.js';
import { blockingLoop, createGroup, failFast, rawConsume, rawPublish, replyReader, withRedis, type EntryCodec, type Waiter } from './raw-redis.js';
import { PAYLOAD_TEXT, measureDelivered, measureConcurrentCalls, measureSequentialCalls, type RpcSides } from './measure.js';

/** As tidings' RPC server: up to 64 requests handled at once (executorSize). */
const SERVER_BATCH = 64;
/** tidings' `reply_ttl_ms` default. */
const REPLY_TTL_MS = 60_000;
/** The bench clients' call timeout. */
const CALL_TIMEOUT_MS = 30_000;
const GROUP = 'servers';

const NOTIFICATION: EntryCodec = { encode: osloBareNotificationText, decode: unbare };


/** A call or cast request as tidings writes it (empty context). */
function request(i: number, replyQueue?: string, msgId?: string): string {
  const message: Record<string, unknown> = { method: 'echo', args: { i, text: PAYLOAD_TEXT }, version: '1.0' };
  if (replyQueue) Object.assign(message, { _msg_id: msgId, _reply_q: replyQueue, _timeout: CALL_TIMEOUT_MS / 1000 });
  message._unique_id = hexId();
  return JSON.stringify(message);
}

function withProtocolRpc(ctx: BenchContext, run: (rpc: RpcSides) => Promise<Measurement>): Promise<Measurement> {
  const base = ctx.unique('bench-proto');
  const topicStream = `${base}:rpc:topic`;
  const topicList = `${base}:req:topic`;
  const serverList = `${base}:req:topic.server`;
  const replyQueue = `reply_${hexId()}`;
  const replyKey = `${base}:reply:${replyQueue}`;
  return withRedis(ctx, 4, [topicStream, topicList, serverList, replyKey], async ([serverIn, serverOut, clientOut, clientIn]) => {
    await createGroup(serverOut, topicStream, GROUP);
    const pending = new Map<string, Waiter>();
    const errors = failFast();
    const fail = (err: Error) => {
      errors.onError(err);
      for (const p of pending.values()) p.reject(err);
      pending.clear();
    };
    let handled = 0;
    const server = blockingLoop(
      serverIn,
      async () => {
        const popped = await serverIn.blmpop(0, 2, topicList, serverList, 'LEFT', 'COUNT', SERVER_BATCH);
        if (!popped) return;
        const byCaller = new Map<string, string[]>();
        for (const element of popped[1]) {
          handled++;
          const req = unbare(element.startsWith('{') ? element : element.slice(element.indexOf(';') + 1));
          if (typeof req._reply_q !== 'string') continue;
          const reply = JSON.stringify({ result: req.args, failure: null, ending: true, _msg_id: req._msg_id, _unique_id: hexId() });
          const key = `${base}:reply:${req._reply_q}`;
          const texts = byCaller.get(key);
          if (texts) texts.push(reply);
          else byCaller.set(key, [reply]);
        }
        // One write for every reply list, as tidings' corked command connection sends them.
        serverOut.stream.cork();
        for (const [key, texts] of byCaller) {
          serverOut.call('RPUSH', key, ...texts).catch(fail);
          serverOut.call('PEXPIRE', key, REPLY_TTL_MS).catch(fail);
        }
        serverOut.stream.uncork();
      },
      fail,
    );
    const reader = replyReader(clientIn, replyKey, pending, (text) => {
      const reply = unbare(text);
      return { id: reply._msg_id as string, result: reply.result };
    }, fail);
    // The requests of one tick go out as one RPUSH and one EXISTS on the next tick, as tidings sends them.
    let tick: { elements: string[]; sent: Promise<unknown> } | undefined;
    const push = (conn: Redis, body: string, deadline?: number): Promise<unknown> => {
      const element = deadline === undefined ? body : `x=${deadline};${body}`;
      if (tick) {
        tick.elements.push(element);
        return tick.sent;
      }
      const elements = [element];
      const sent = new Promise<void>((resolve) => process.nextTick(resolve)).then(() => {
        tick = undefined;
        return Promise.all([conn.rpush(topicList, ...elements), conn.exists(topicStream)]);
      });
      tick = { elements, sent };
      return sent;
    };
    try {
      return await run({
        call: (i) =>
          new Promise((resolve, reject) => {
            errors.check();
            const msgId = hexId();
            pending.set(msgId, { resolve, reject });
            push(clientOut, request(i, replyQueue, msgId), Date.now() + CALL_TIMEOUT_MS).catch(fail);
          }),
        cast: async (i) => {
          errors.check();
          await push(clientOut, request(i));
        },
        handled: () => {
          errors.check();
          return handled;
        },
      });
    } finally {
      await Promise.all([server.stop(), reader.stop()]);
    }
  });
}

export const baselines: BaselineSet = {
  'call-sequential': (ctx) => withProtocolRpc(ctx, ({ call }) => measureSequentialCalls(ctx, call)),

  'call-concurrent': (ctx) => withProtocolRpc(ctx, ({ call }) => measureConcurrentCalls(ctx, call)),

  cast: (ctx) =>
    withProtocolRpc(ctx, async ({ cast, handled }) => {
      return measureDelivered(ctx, cast, handled, 'protocol casts handled');
    }),

  'notify-publish': rawPublish(NOTIFICATION),
  'consume-plain': rawConsume(1, 'plain', NOTIFICATION),
  'consume-pooled': rawConsume(2, 'pooled', NOTIFICATION),
  'consume-batch': rawConsume(1, 'batch', NOTIFICATION),
};
