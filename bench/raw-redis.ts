// Raw ioredis baselines for the Redis scenarios: what a careful ioredis user writes for the same
// job, with the same counts, payload, in-flight limits, warm-up and timing as bench/scenarios.ts.
//
// - RPC: list request/reply. The client LPUSHes `{id, replyTo, args}` to the server's request list;
//   the server pops up to SERVER_BATCH requests at a time with BLMPOP on its own connection, and
//   LPUSHes the replies to each caller's reply list (one LPUSH per caller and batch) with a PEXPIRE
//   in the same pipeline, written on a second connection (a blocked connection cannot write); the client's reader connection pops its
//   reply list with BLMPOP and resolves each call by id. A blocking pop ends a call's round trip as
//   soon as its reply is pushed, with no polling.
// - cast: XADD to the server's stream, PUBLISH_WINDOW in flight (ioredis pipelines them on one
//   connection), each resolving on Redis' reply; the server reads with XREADGROUP ... BLOCK and
//   XACKs each read's ids at once; timed until it handled every cast.
// - notify-publish: the same windowed XADD, nothing reading.
// - consume-*: the same windowed XADD publisher while consumers in one consumer group (one, two for
//   pooled, one reading batches of BATCH_SIZE) read with XREADGROUP COUNT ... BLOCK and XACK each
//   read, timed from the first publish to the last consume, as the tidings scenarios are.
//
// Every key is unique per run (ctx.unique) and UNLINKed afterwards; nothing else is touched.
import { Redis, type RedisOptions } from 'ioredis';
import type { BaselineSet, BenchContext, Measurement } from './harness.js';
import { BATCH_SIZE, PAYLOAD_TEXT, measureDelivered, measureSent, measureConcurrentCalls, measureSequentialCalls } from './measure.js';

/** Requests the raw RPC server pops at once: the tidings RPC server runs up to 64 at once (executorSize). */
const SERVER_BATCH = 64;
/** Replies the raw RPC client pops at once (at most 16 are ever waiting). */
const REPLY_BATCH = 100;
/** A reply nobody pops (its caller gone) disappears after the bench client's call timeout. */
const REPLY_TTL_MS = 30_000;
/** Entries a raw consumer reads at once, as the AMQP baseline's prefetch. */
const READ_COUNT = 100;
/** Block of the raw batch consumer's read, as `consume-batch` (batchTimeout 50 ms). */
const BATCH_BLOCK_MS = 50;
/** The field every stream entry carries its JSON in. */
const FIELD = 'm';

const body = (i: number) => JSON.stringify({ i, text: PAYLOAD_TEXT });

/** ioredis options for the bench URL's first host: TLS for rediss://, the URL path as the database. */
export function redisOptions(ctx: BenchContext): RedisOptions {
  const host = ctx.transportUrl.hosts[0] ?? {};
  const db = Number(ctx.transportUrl.virtualHost || 0);
  return {
    host: host.hostname ?? '127.0.0.1',
    port: host.port ?? 6379,
    username: host.username,
    password: host.password,
    db: Number.isSafeInteger(db) ? db : 0,
    tls: ctx.transportUrl.driver === 'rediss' ? {} : undefined,
    // Connect explicitly and fail at once: a bench against a Redis that is down must say so, not retry.
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  };
}

/** One connection; rejects naming Redis and the (redacted) URL when it cannot connect. */
export async function openRedis(ctx: BenchContext): Promise<Redis> {
  const conn = new Redis(redisOptions(ctx));
  // Failures surface as rejected commands; without a listener ioredis would also log each one.
  conn.on('error', () => {});
  try {
    await conn.connect();
  } catch (err) {
    conn.disconnect();
    throw new Error(`bench: cannot connect to Redis at ${ctx.transportUrl.toString()} (${err instanceof Error ? err.message : String(err)}); start it with \`redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no\``, { cause: err });
  }
  return conn;
}

/**
 * Opens `n` connections (plus one for cleaning up), runs `run`, then closes them and UNLINKs
 * `keys` (as the array is when it ends). Closing a connection ends any blocking read on it.
 */
export async function withRedis(ctx: BenchContext, n: number, keys: string[], run: (conns: Redis[]) => Promise<Measurement>): Promise<Measurement> {
  const admin = await openRedis(ctx);
  const conns: Redis[] = [];
  try {
    for (let i = 0; i < n; i++) conns.push(await openRedis(ctx));
    return await run(conns);
  } finally {
    for (const c of conns) c.disconnect();
    if (keys.length > 0) await admin.unlink(...keys).catch(() => undefined);
    await admin.quit().catch(() => undefined);
  }
}

/**
 * Repeats `step` (one blocking read and its handling) until `stop()`, which closes `conn` to end
 * the read in progress. A failure before that is handed to `onError` once and ends the loop.
 */
export function blockingLoop(conn: Redis, step: () => Promise<void>, onError: (err: Error) => void): { stop(): Promise<void> } {
  let stopping = false;
  const done = (async () => {
    try {
      while (!stopping) await step();
    } catch (err) {
      if (!stopping) onError(err instanceof Error ? err : new Error(String(err)));
    }
  })();
  return {
    stop: async () => {
      stopping = true;
      conn.disconnect();
      await done;
    },
  };
}

/** Stream entries as ioredis returns them: `[id, [field, value, ...]]`. */
export type Entry = [id: string, fields: string[]];
/** XREADGROUP's reply: `[[stream, entries]]`, or null when the block timed out. */
export type ReadReply = [stream: string, entries: Entry[]][] | null;

/** Creates `group` on `stream` (and the stream), reading what is added from now on. */
export async function createGroup(conn: Redis, stream: string, group: string): Promise<void> {
  await conn.xgroup('CREATE', stream, group, '$', 'MKSTREAM');
}

/**
 * A consumer in `group` that reads up to `count` entries with a blocking XREADGROUP, decodes each
 * (`decode`, JSON by default), and XACKs the read's ids in one command (sent ahead of its next read
 * on the same connection).
 */
export function streamConsumer(conn: Redis, stream: string, group: string, name: string, count: number, blockMs: number, onError: (err: Error) => void, decode: (text: string) => unknown = JSON.parse) {
  let seen = 0;
  const loop = blockingLoop(
    conn,
    async () => {
      const reply = (await conn.xreadgroup('GROUP', group, name, 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', stream, '>')) as ReadReply;
      if (!reply) return;
      const entries = reply[0][1];
      const ids: string[] = [];
      for (const [id, fields] of entries) {
        decode(fields[1]);
        ids.push(id);
      }
      seen += entries.length;
      conn.xack(stream, group, ...ids).catch(onError);
    },
    onError,
  );
  return { seen: () => seen, stop: loop.stop };
}

/** Fails `waitUntil` at once with a consumer's error instead of waiting for its deadline. */
export function failFast() {
  let failure: Error | undefined;
  return {
    onError: (err: Error) => (failure ??= err),
    check: () => {
      if (failure) throw failure;
    },
  };
}

interface RawRpc {
  call(i: number): Promise<unknown>;
}

interface Reply {
  id: string;
  result: unknown;
}

/** A call waiting for its reply. */
export interface Waiter {
  resolve(value: unknown): void;
  reject(err: Error): void;
}

/**
 * The caller's reply reader: pops `key` with BLMPOP (up to REPLY_BATCH at once) until stopped and
 * resolves each reply's waiter in `pending` by the id `decode` finds in it.
 */
export function replyReader(conn: Redis, key: string, pending: Map<string, Waiter>, decode: (text: string) => Reply, onError: (err: Error) => void): { stop(): Promise<void> } {
  return blockingLoop(
    conn,
    async () => {
      const popped = await conn.blmpop(0, 1, key, 'RIGHT', 'COUNT', REPLY_BATCH);
      if (!popped) return;
      for (const text of popped[1]) {
        const reply = decode(text);
        const waiter = pending.get(reply.id);
        if (!waiter) continue;
        pending.delete(reply.id);
        waiter.resolve(reply.result);
      }
    },
    onError,
  );
}

/** A raw list request/reply server (reader + writer connections) and client (writer + reader). */
function withRawRpc(ctx: BenchContext, run: (rpc: RawRpc) => Promise<Measurement>): Promise<Measurement> {
  const requests = ctx.unique('bench-raw-rpc');
  const replyTo = ctx.unique('bench-raw-reply');
  return withRedis(ctx, 4, [requests, replyTo], async ([serverIn, serverOut, clientOut, clientIn]) => {
    const pending = new Map<string, Waiter>();
    let failure: Error | undefined;
    const fail = (err: Error) => {
      failure ??= err;
      for (const p of pending.values()) p.reject(err);
      pending.clear();
    };
    const server = blockingLoop(
      serverIn,
      async () => {
        const popped = await serverIn.blmpop(0, 1, requests, 'RIGHT', 'COUNT', SERVER_BATCH);
        if (!popped) return;
        // Replies to one caller go out in one LPUSH, waking its reader once per batch.
        const byCaller = echoRepliesByCaller(popped[1]);
        const pipe = serverOut.pipeline();
        for (const [to, texts] of byCaller) pipe.lpush(to, ...texts).pexpire(to, REPLY_TTL_MS);
        pipe.exec().catch(fail);
      },
      fail,
    );
    const reader = replyReader(clientIn, replyTo, pending, (text) => JSON.parse(text) as Reply, fail);
    let nextId = 0;
    try {
      return await run({
        call: (i) =>
          new Promise((resolve, reject) => {
            if (failure) return reject(failure);
            const id = String(nextId++);
            pending.set(id, { resolve, reject });
            clientOut.lpush(requests, JSON.stringify({ id, replyTo, args: { i, text: PAYLOAD_TEXT } })).catch(fail);
          }),
      });
    } finally {
      await Promise.all([server.stop(), reader.stop()]);
    }
  });
}

/** How an entry's text is made and read: plain `{i, text}` JSON here, oslo's envelope in raw-redis-protocol.ts. */
export interface EntryCodec {
  encode(i: number): string;
  decode(text: string): unknown;
}

const PLAIN: EntryCodec = { encode: body, decode: JSON.parse };

/** XADDs entry `i` to `stream`, resolving when Redis answered with the entry's id. */
const xadd = (conn: Redis, stream: string, i: number, codec: EntryCodec = PLAIN) => conn.xadd(stream, '*', FIELD, codec.encode(i));

/** Publishes with PUBLISH_WINDOW XADDs in flight while `consumers` read in one group; as consumeScenario. */
export function rawConsume(consumers: number, mode: 'plain' | 'pooled' | 'batch', codec: EntryCodec = PLAIN) {
  return (ctx: BenchContext): Promise<Measurement> => {
    const stream = ctx.unique('bench-raw-notify');
    return withRedis(ctx, 1 + consumers, [stream], async ([pub, ...consumerConns]) => {
      const group = ctx.unique('bench-raw-group');
      await createGroup(pub, stream, group);
      const errors = failFast();
      const readers = consumerConns.map((c, n) => streamConsumer(c, stream, group, `c${n}`, mode === 'batch' ? BATCH_SIZE : READ_COUNT, mode === 'batch' ? BATCH_BLOCK_MS : 0, errors.onError, codec.decode));
      const consumed = () => {
        errors.check();
        return readers.reduce((sum, r) => sum + r.seen(), 0);
      };
      try {
        return await measureDelivered(ctx, (i) => xadd(pub, stream, i, codec), consumed, 'raw notifications consumed');
      } finally {
        await Promise.all(readers.map((r) => r.stop()));
      }
    });
  };
}

export const baselines: BaselineSet = {
  'call-sequential': (ctx) => withRawRpc(ctx, ({ call }) => measureSequentialCalls(ctx, call)),

  'call-concurrent': (ctx) => withRawRpc(ctx, ({ call }) => measureConcurrentCalls(ctx, call)),

  cast: (ctx) => {
    const stream = ctx.unique('bench-raw-cast');
    return withRedis(ctx, 2, [stream], async ([client, serverConn]) => {
      const group = ctx.unique('bench-raw-group');
      await createGroup(client, stream, group);
      const errors = failFast();
      const server = streamConsumer(serverConn, stream, group, 'server', SERVER_BATCH, 0, errors.onError);
      const handled = () => {
        errors.check();
        return server.seen();
      };
      try {
        return await measureDelivered(ctx, (i) => xadd(client, stream, i), handled, 'raw casts handled');
      } finally {
        await server.stop();
      }
    });
  },

  'notify-publish': rawPublish(),

  'consume-plain': rawConsume(1, 'plain'),
  'consume-pooled': rawConsume(2, 'pooled'),
  'consume-batch': rawConsume(1, 'batch'),
};

/** Windowed XADDs, nobody reading (no MAXLEN; the stream is unlinked afterwards). */
export function rawPublish(codec: EntryCodec = PLAIN) {
  return (ctx: BenchContext): Promise<Measurement> => {
    const stream = ctx.unique('bench-raw-notify');
    return withRedis(ctx, 1, [stream], async ([pub]) => {
      return measureSent(ctx, (i) => xadd(pub, stream, i, codec));
    });
  };
}

/** The echo server's replies to a batch of requests (`{id, replyTo, args}`), grouped by the caller's reply key. */
export function echoRepliesByCaller(requests: readonly string[]): Map<string, string[]> {
  const byCaller = new Map<string, string[]>();
  for (const text of requests) {
    const req = JSON.parse(text) as { id: string; replyTo: string; args: unknown };
    const reply = JSON.stringify({ id: req.id, result: req.args });
    const texts = byCaller.get(req.replyTo);
    if (texts) texts.push(reply);
    else byCaller.set(req.replyTo, [reply]);
  }
  return byCaller;
}
