// INFO commandstats deltas per call: tidings RPC (sequential and 16 in flight) and raw list RPC.
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
const src = process.argv[2] ?? '/work/wt-redisrpc';
const N = Number(process.argv[3] ?? 3000);
const { getRpcTransport, getRpcServer, getRpcClient, Target } = await import(`${src}/src/index.ts`);
const admin = new Redis({ host: '127.0.0.1', port: 6379 });
type Stats = Map<string, { calls: number; usec: number }>;
async function stats(): Promise<Stats> {
  const text = (await admin.info('commandstats')) as string;
  const m: Stats = new Map();
  for (const line of text.split('\n')) {
    const r = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim());
    if (r) m.set(r[1], { calls: Number(r[2]), usec: Number(r[3]) });
  }
  return m;
}
function diff(a: Stats, b: Stats, n: number, label: string) {
  const rows: string[] = [];
  let total = 0;
  for (const [k, v] of b) {
    const o = a.get(k) ?? { calls: 0, usec: 0 };
    const dc = v.calls - o.calls, du = v.usec - o.usec;
    if (dc <= 0 || k === 'info') continue;
    // EXEC and EVALSHA include the commands inside them: count them once (inner ones are also listed).
    if (!['exec', 'evalsha', 'eval', 'fcall'].includes(k)) total += du;
    rows.push(`${k}: ${(dc / n).toFixed(2)} calls/call, ${(du / n).toFixed(2)} us/call (${(du / dc).toFixed(2)} us each)`);
  }
  console.log(`== ${label}: Redis usec per call (sum of leaf commands) ${(total / n).toFixed(2)}`);
  for (const r of rows) console.log('   ' + r);
}
async function tidings(concurrency: number) {
  const url = 'redis://127.0.0.1:6379/0';
  const st = await getRpcTransport(url), ct = await getRpcTransport(url);
  const topic = `cs-${randomUUID()}`;
  const server = getRpcServer(st, new Target({ topic, server: 'bench' }), [{ echo: (_c: unknown, a: unknown) => a }], { executorSize: 64 });
  await server.start();
  const client = getRpcClient(ct, { topic }, { timeout: 30_000 });
  const text = 'x'.repeat(100);
  for (let i = 0; i < 300; i++) await client.call({}, 'echo', { i, text });
  const before = await stats();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => { while (next < N) { const i = next++; await client.call({}, 'echo', { i, text }); } }));
  const ms = performance.now() - t0;
  const after = await stats();
  diff(before, after, N, `tidings ${concurrency} in flight (${Math.round(N / ms * 1000)} calls/s)`);
  await server.stop(); await server.wait(); await st.cleanup(); await ct.cleanup();
}
async function raw(concurrency: number) {
  const [sIn, sOut, cOut, cIn] = [0, 1, 2, 3].map(() => new Redis({ host: '127.0.0.1', port: 6379 }));
  const req = `cs-raw-${randomUUID()}`, rep = `cs-raw-reply-${randomUUID()}`;
  let stop = false;
  const pending = new Map<string, () => void>();
  (async () => { while (!stop) { const p = await sIn.blmpop(0, 1, req, 'RIGHT', 'COUNT', 64).catch(() => null); if (!p) continue; const out = p[1].map((t) => { const r = JSON.parse(t); return JSON.stringify({ id: r.id, result: r.args }); }); sOut.pipeline().lpush(rep, ...out).pexpire(rep, 30000).exec(); } })();
  (async () => { while (!stop) { const p = await cIn.blmpop(0, 1, rep, 'RIGHT', 'COUNT', 100).catch(() => null); if (!p) continue; for (const t of p[1]) { const r = JSON.parse(t); pending.get(r.id)?.(); pending.delete(r.id); } } })();
  let id = 0;
  const call = (i: number) => new Promise<void>((res) => { const k = String(id++); pending.set(k, res); cOut.lpush(req, JSON.stringify({ id: k, replyTo: rep, args: { i, text: 'x'.repeat(100) } })); });
  for (let i = 0; i < 300; i++) await call(i);
  const before = await stats();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => { while (next < N) { const i = next++; await call(i); } }));
  const ms = performance.now() - t0;
  const after = await stats();
  diff(before, after, N, `raw list ${concurrency} in flight (${Math.round(N / ms * 1000)} calls/s)`);
  stop = true; for (const c of [sIn, sOut, cOut, cIn]) c.disconnect();
}
for (const c of [1, 16]) { await tidings(c); await raw(c); }
admin.disconnect();
