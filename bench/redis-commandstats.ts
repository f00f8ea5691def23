// What one RPC call costs Redis: `INFO commandstats` and `INFO cpu` deltas over N calls, for
// tidings' Redis driver (sequential and 16 in flight, an `echo` server on its own transport) and
// for raw ioredis list request/reply (raw-redis.ts's shape: LPUSH, BLMPOP, LPUSH + PEXPIRE).
// Prints, per side and concurrency, each command's calls and µs per RPC call, and the Redis
// process's CPU per call. The Redis is shared: other clients' commands in the window count too,
// so run it on a quiet Redis. `npx tsx bench/redis-commandstats.ts [--url redis://...]
// [--count 3000] [--src ../other-checkout/src]` (`--src`: another checkout's tidings, to compare).
// Keys are unique per run; the raw side UNLINKs its own, tidings' are left as `npm run bench` leaves them.
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { PAYLOAD_TEXT } from './measure.js';

type Stats = Map<string, { calls: number; usec: number }>;

interface Snapshot {
  commands: Stats;
  cpuUs: number;
}

async function snapshot(admin: Redis): Promise<Snapshot> {
  const commands: Stats = new Map();
  for (const line of ((await admin.info('commandstats')) as string).split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim());
    if (m) commands.set(m[1], { calls: Number(m[2]), usec: Number(m[3]) });
  }
  const cpu = (await admin.info('cpu')) as string;
  const field = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(cpu)?.[1] ?? 0);
  return { commands, cpuUs: (field('used_cpu_user') + field('used_cpu_sys')) * 1e6 };
}

/** EXEC and EVALSHA include the commands run inside them, which are also listed on their own. */
const CONTAINERS = new Set(['exec', 'evalsha', 'eval', 'fcall']);

function report(label: string, before: Snapshot, after: Snapshot, calls: number, ms: number): void {
  const lines: string[] = [];
  for (const [name, now] of after.commands) {
    const was = before.commands.get(name) ?? { calls: 0, usec: 0 };
    const dc = now.calls - was.calls;
    if (dc <= 0 || name === 'info') continue;
    const du = now.usec - was.usec;
    lines.push(`  ${name.padEnd(10)} ${(dc / calls).toFixed(2).padStart(5)} per call  ${(du / calls).toFixed(2).padStart(6)} µs per call  (${(du / dc).toFixed(2)} µs each${CONTAINERS.has(name) ? ', with the commands inside' : ''})`);
  }
  console.log(`${label}: ${Math.round((calls / ms) * 1000)} calls/s, Redis CPU ${((after.cpuUs - before.cpuUs) / calls).toFixed(1)} µs per call (INFO cpu)`);
  for (const line of lines) console.log(line);
}

async function timed(admin: Redis, label: string, count: number, concurrency: number, call: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < Math.min(300, count); i++) await call(i);
  const before = await snapshot(admin);
  const began = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await call(next++);
    }),
  );
  const ms = performance.now() - began;
  report(label, before, await snapshot(admin), count, ms);
}

async function tidings(src: string, url: string, admin: Redis, count: number, concurrency: number): Promise<void> {
  const lib = (await import(pathToFileURL(resolve(src, 'index.ts')).href)) as typeof import('../src/index.js');
  const [serverT, clientT] = [await lib.getRpcTransport(url), await lib.getRpcTransport(url)];
  const topic = `bench-cs-${randomUUID()}`;
  const server = lib.getRpcServer(serverT, new lib.Target({ topic, server: 'bench' }), [{ echo: (_c: unknown, args: unknown) => args }], { executorSize: 64 });
  await server.start();
  try {
    const client = lib.getRpcClient(clientT, { topic }, { timeout: 30_000 });
    await timed(admin, `tidings, ${concurrency} in flight`, count, concurrency, (i) => client.call({}, 'echo', { i, text: PAYLOAD_TEXT }));
  } finally {
    await server.stop();
    await server.wait();
    await Promise.all([serverT.cleanup(), clientT.cleanup()]);
  }
}

async function raw(url: string, admin: Redis, count: number, concurrency: number): Promise<void> {
  const conns = [0, 1, 2, 3].map(() => new Redis(url));
  const [serverIn, serverOut, clientOut, clientIn] = conns;
  const requests = `bench-cs-raw-${randomUUID()}`;
  const replies = `bench-cs-raw-reply-${randomUUID()}`;
  const pending = new Map<string, () => void>();
  let stopping = false;
  const loops = [
    (async () => {
      while (!stopping) {
        const popped = await serverIn.blmpop(0, 1, requests, 'RIGHT', 'COUNT', 64).catch(() => null);
        if (!popped) continue;
        const out = popped[1].map((text) => {
          const req = JSON.parse(text) as { id: string; args: unknown };
          return JSON.stringify({ id: req.id, result: req.args });
        });
        void serverOut.pipeline().lpush(replies, ...out).pexpire(replies, 30_000).exec();
      }
    })(),
    (async () => {
      while (!stopping) {
        const popped = await clientIn.blmpop(0, 1, replies, 'RIGHT', 'COUNT', 100).catch(() => null);
        for (const text of popped?.[1] ?? []) {
          const id = (JSON.parse(text) as { id: string }).id;
          pending.get(id)?.();
          pending.delete(id);
        }
      }
    })(),
  ];
  let nextId = 0;
  try {
    await timed(admin, `raw list, ${concurrency} in flight`, count, concurrency, (i) =>
      new Promise<void>((done) => {
        const id = String(nextId++);
        pending.set(id, done);
        void clientOut.lpush(requests, JSON.stringify({ id, replyTo: replies, args: { i, text: PAYLOAD_TEXT } }));
      }),
    );
  } finally {
    stopping = true;
    for (const c of conns) c.disconnect();
    await Promise.all(loops);
    await admin.unlink(requests, replies);
  }
}

const { values } = parseArgs({ options: { url: { type: 'string' }, count: { type: 'string' }, src: { type: 'string' } } });
const url = values.url ?? 'redis://127.0.0.1:6379/0';
const count = Number(values.count ?? 3000);
const src = values.src ?? resolve(import.meta.dirname, '../src');
const admin = new Redis(url);
try {
  for (const concurrency of [1, 16]) {
    await tidings(src, url, admin, count, concurrency);
    await raw(url, admin, count, concurrency);
  }
} finally {
  admin.disconnect();
}
