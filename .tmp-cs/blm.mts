import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
const admin = new Redis();
async function usec(cmd: string) { const t = (await admin.info('commandstats')) as string; const r = new RegExp(`cmdstat_${cmd}:calls=(\\d+),usec=(\\d+)`).exec(t)!; return [Number(r[1]), Number(r[2])]; }
async function run(label: string, timeout: number, nkeys: number, hashtag: boolean) {
  const a = new Redis(), b = new Redis();
  const k = hashtag ? `{blm-${randomUUID()}}:x` : `blm-${randomUUID()}`; const k2 = `${k}:other`;
  const keys = nkeys === 2 ? [k, k2] : [k];
  let stop = false; let got = 0;
  const loop = (async () => { while (!stop) { const r = await a.call('BLMPOP', timeout, keys.length, ...keys, 'LEFT', 'COUNT', 64).catch(() => null) as [string, string[]] | null; if (r) got += r[1].length; } })();
  const N = 3000;
  const [c0, u0] = await usec('blmpop');
  for (let i = 0; i < N; i++) { await b.rpush(k, 'x'.repeat(300)); while (got <= i) await new Promise((r) => setImmediate(r)); }
  const [c1, u1] = await usec('blmpop');
  console.log(label, ((u1 - u0) / (c1 - c0)).toFixed(2), 'us per BLMPOP', c1 - c0);
  stop = true; a.disconnect(); b.disconnect(); await loop;
}
for (let r = 0; r < 2; r++) {
  await run('timeout 0, 1 key      ', 0, 1, false);
  await run('timeout 5, 1 key      ', 5, 1, false);
  await run('timeout 5, 2 keys     ', 5, 2, false);
  await run('timeout 0, 2 keys     ', 0, 2, false);
}
admin.disconnect();
