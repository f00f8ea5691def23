// Which way should an RPC reply travel back over Redis? Raw ioredis request/reply with the request
// path fixed (LPUSH to a request list, one server popping with BLMPOP, as raw-redis.ts) and three
// reply routes, measured in the same process and interleaved round by round:
//   list    LPUSH + PEXPIRE (one pipeline) to the caller's reply list, popped with BLMPOP on the
//           caller's own blocking connection
//   stream  XADD + PEXPIRE to the caller's reply stream, read with XREAD BLOCK from the last id seen
//   pubsub  PUBLISH to the caller's channel, which its subscriber connection listens on
// Prints µs per round trip, one call at a time (mean and p50) and with 16 in flight (elapsed/calls),
// each the median over the rounds. `npx tsx bench/redis-reply-paths.ts [--url redis://...]
// [--count 5000] [--rounds 3]`. Keys are unique per run and UNLINKed afterwards.
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { Redis } from 'ioredis';
import { TransportURL } from '../src/index.js';
import type { BenchContext, Measurement } from './harness.js';
import { percentile } from './harness.js';
import { blockingLoop, echoRepliesByCaller, withRedis } from './raw-redis.js';
import { CONCURRENCY, PAYLOAD_TEXT, keepInFlight } from './measure.js';

const ROUTES = ['list', 'stream', 'pubsub'] as const;
type Route = (typeof ROUTES)[number];

/** Requests the server pops at once (as raw-redis.ts) and replies a reader takes at once. */
const BATCH = 64;
const REPLY_TTL_MS = 30_000;

interface Figures {
  seqMeanUs: number;
  seqP50Us: number;
  concUs: number;
}

/** One request/reply pair of connections per side, the reply coming back by `route`; runs `body`. */
function withRoute(ctx: BenchContext, route: Route, body: (call: (i: number) => Promise<unknown>) => Promise<Measurement>): Promise<Measurement> {
  const requests = ctx.unique('bench-probe-rpc');
  const replyKey = ctx.unique(`bench-probe-${route}`);
  return withRedis(ctx, 4, [requests, replyKey], async ([serverIn, serverOut, clientOut, clientIn]) => {
    const pending = new Map<string, (v: unknown) => void>();
    let failure: Error | undefined;
    const fail = (err: Error) => void (failure ??= err);
    const settle = (text: string) => {
      const reply = JSON.parse(text) as { id: string; result: unknown };
      const resolve = pending.get(reply.id);
      if (!resolve) return;
      pending.delete(reply.id);
      resolve(reply.result);
    };
    // Replies to one caller go out in one LPUSH (one wake-up of its reader), one PEXPIRE per batch.
    const sendReplies = (pipe: ReturnType<Redis['pipeline']>, to: string, texts: string[]) => {
      if (route === 'list') pipe.lpush(to, ...texts).pexpire(to, REPLY_TTL_MS);
      else if (route === 'stream') {
        for (const text of texts) pipe.xadd(to, '*', 'm', text);
        pipe.pexpire(to, REPLY_TTL_MS);
      } else for (const text of texts) pipe.publish(to, text);
    };
    const server = blockingLoop(
      serverIn,
      async () => {
        const popped = await serverIn.blmpop(0, 1, requests, 'RIGHT', 'COUNT', BATCH);
        if (!popped) return;
        const byCaller = echoRepliesByCaller(popped[1]);
        const pipe = serverOut.pipeline();
        for (const [to, texts] of byCaller) sendReplies(pipe, to, texts);
        pipe.exec().catch(fail);
      },
      fail,
    );
    let stopReader: () => Promise<void>;
    if (route === 'pubsub') {
      clientIn.on('message', (_channel: string, text: string) => settle(text));
      await clientIn.subscribe(replyKey);
      stopReader = async () => clientIn.disconnect();
    } else if (route === 'list') {
      stopReader = blockingLoop(
        clientIn,
        async () => {
          const popped = await clientIn.blmpop(0, 1, replyKey, 'RIGHT', 'COUNT', BATCH);
          if (popped) for (const text of popped[1]) settle(text);
        },
        fail,
      ).stop;
    } else {
      // The reply stream is this run's own, so everything in it from the start is a reply to read.
      let lastId = '0-0';
      stopReader = blockingLoop(
        clientIn,
        async () => {
          const read = (await clientIn.xread('COUNT', BATCH, 'BLOCK', 0, 'STREAMS', replyKey, lastId)) as [string, [string, string[]][]][] | null;
          if (!read) return;
          for (const [id, fields] of read[0][1]) {
            lastId = id;
            settle(fields[1]);
          }
        },
        fail,
      ).stop;
    }
    let nextId = 0;
    try {
      return await body(
        (i) =>
          new Promise((resolve, reject) => {
            if (failure) return reject(failure);
            const id = String(nextId++);
            pending.set(id, resolve);
            clientOut.lpush(requests, JSON.stringify({ id, replyTo: replyKey, args: { i, text: PAYLOAD_TEXT } })).catch(fail);
          }),
      );
    } finally {
      await Promise.all([server.stop(), stopReader()]);
    }
  });
}

async function measure(ctx: BenchContext, route: Route, window: number): Promise<Measurement> {
  return withRoute(ctx, route, async (call) => {
    for (let i = 0; i < ctx.warmup; i++) await call(i);
    const latencies: number[] = [];
    const start = performance.now();
    await keepInFlight(ctx.count, window, ctx.inTime, async (i) => {
      const t0 = performance.now();
      await call(i);
      latencies.push(performance.now() - t0);
    });
    return { ops: latencies.length, elapsedMs: performance.now() - start, latenciesMs: latencies };
  });
}

const median = (xs: number[]) => percentile(xs, 50);

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { url: { type: 'string' }, count: { type: 'string' }, rounds: { type: 'string' } }, strict: true });
  const url = values.url ?? 'redis://127.0.0.1:6379/';
  const count = Number(values.count ?? 5000);
  const rounds = Number(values.rounds ?? 3);
  const transportUrl = TransportURL.parse(url);
  const ctx: BenchContext = { url, transportUrl, count, warmup: Math.min(200, Math.ceil(count / 10)), inTime: () => true, unique: (p) => `${p}-${randomUUID()}` };
  const runs = new Map<Route, Figures[]>(ROUTES.map((r) => [r, []]));
  for (let round = 0; round < rounds; round++) {
    // Rotate the order so no route always runs first (or last) in a round.
    const order = ROUTES.map((_, k) => ROUTES[(k + round) % ROUTES.length]);
    for (const route of order) {
      const seq = await measure(ctx, route, 1);
      const conc = await measure(ctx, route, CONCURRENCY);
      runs.get(route)!.push({
        seqMeanUs: (seq.elapsedMs * 1000) / seq.ops,
        seqP50Us: percentile(seq.latenciesMs!, 50) * 1000,
        concUs: (conc.elapsedMs * 1000) / conc.ops,
      });
    }
  }
  console.log(`redis reply paths on ${transportUrl.toString()} (node ${process.version}, ${count} calls per measurement, median of ${rounds} rounds)`);
  console.log('route    sequential us/call (mean)  sequential p50 us  16 in flight us/call');
  const result: Record<string, Figures> = {};
  for (const route of ROUTES) {
    const f = runs.get(route)!;
    const m: Figures = { seqMeanUs: median(f.map((x) => x.seqMeanUs)), seqP50Us: median(f.map((x) => x.seqP50Us)), concUs: median(f.map((x) => x.concUs)) };
    result[route] = { seqMeanUs: Math.round(m.seqMeanUs), seqP50Us: Math.round(m.seqP50Us), concUs: Math.round(m.concUs * 10) / 10 };
    console.log(`${route.padEnd(7)}  ${m.seqMeanUs.toFixed(0).padStart(25)}  ${m.seqP50Us.toFixed(0).padStart(17)}  ${m.concUs.toFixed(1).padStart(20)}`);
  }
  console.log(JSON.stringify({ bench: 'redis-reply-paths', url: transportUrl.toString(), date: new Date().toISOString(), count, rounds, routes: result }));
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`redis-reply-paths: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
