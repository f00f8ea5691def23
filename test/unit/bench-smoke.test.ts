// A smoke run of the benchmark harness with tiny counts on memory:// and of the raw ioredis
// baselines on the local Redis, so neither rots. It checks the machine-readable contract (the last
// line is one JSON object), not any speed.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { TransportURL, registerDriver } from '../../src/index.js';
import { TRANSPORT_SCHEMES } from '../../src/transport.js';
import { main } from '../../bench/run.js';
import { withRedis } from '../../bench/raw-redis.js';
import { REDIS_URL, requireRedis } from '../support/brokers.js';
import { SCENARIOS } from '../../bench/scenarios.js';
import { BACKLOG_WINDOW, Gate, measureBacklog } from '../../bench/measure.js';
import { percentile, roundByRound, runBench } from '../../bench/harness.js';
import { loadBaselines } from '../../bench/baselines.js';
import { MODES, OPS, measure } from '../../bench/cost.js';
import { ownerOf } from '../../bench/profile.js';
import { rungs as amqpRungs } from '../../bench/amqp-contract-cost.js';
import { rungs } from '../../bench/kafka-contract-cost.js';
import * as tidings from '../../src/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

/**
 * Runs `tsx <args>` in a child and plays callgrind.ts's parent: answers each "warm" and "done" on
 * its stdin, `delayMs` later (the time it takes to zero or read the counters). Returns the exit
 * code, every stdout line, and the lines seen when each answer went.
 */
async function answerMarks(args: string[], env: NodeJS.ProcessEnv, delayMs = 0): Promise<{ code: number | null; lines: string[]; seenBeforeAnswer: string[][] }> {
  const lines: string[] = [];
  const seenBeforeAnswer: string[][] = [];
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, [TSX, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      lines.push(line);
      if (line !== 'warm' && line !== 'done') return;
      setTimeout(() => {
        seenBeforeAnswer.push([...lines]);
        child.stdin.write('\n');
      }, delayMs);
    });
    child.once('error', reject);
    child.once('close', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  return { code, lines, seenBeforeAnswer };
}
/** The scenarios that run on every broker. */
const NAMES = ['call-sequential', 'call-concurrent', 'cast', 'notify-publish', 'consume-plain', 'consume-pooled', 'consume-batch'];
/** Consumers reading a backlog: Kafka only (bench/measure.ts BACKLOG_DRIVERS). */
const BACKLOG_NAMES = ['backlog-plain', 'backlog-pooled', 'backlog-batch'];

/** Spins for `ms` of wall time (CPU-bound) and returns 0. */
function busy(ms: number): number {
  const end = performance.now() + ms;
  while (performance.now() < end);
  return 0;
}

describe('bench harness', () => {
  it('--rounds alternates the order of tidings and its baselines, drops the first round and keeps each side\'s median run', async () => {
    const order: string[] = [];
    const elapsed = { tidings: [50, 40, 10, 20, 30], raw: [500, 100, 300, 200, 400] };
    const side = (name: 'tidings' | 'raw') => async (ctx: { count: number }) => {
      order.push(name);
      return { ops: ctx.count, elapsedMs: elapsed[name][order.filter((o) => o === name).length - 1] };
    };
    const scenario = { name: 'x', description: 'x', unit: 'ops', run: side('tidings') };
    const report = await runBench({ url: 'memory://', count: 10, durationMs: null, only: [], scenarios: [scenario], baselines: { x: side('raw') }, rounds: 5, print: () => {} });
    expect(order).toEqual(['tidings', 'raw', 'raw', 'tidings', 'tidings', 'raw', 'raw', 'tidings', 'tidings', 'raw']);
    // The same pairing against raw-oslo, in its own column.
    order.length = 0;
    const withOslo = await runBench({ url: 'memory://', count: 10, durationMs: null, only: [], scenarios: [scenario], baselines: {}, osloBaselines: { x: side('raw') }, rounds: 5, print: () => {} });
    expect(withOslo.scenarios.x.osloRoundRatio).toBe(10);
    expect(withOslo.scenarios.x.roundRatio).toBeUndefined();
    order.length = 0;
    expect(report.rounds).toBe(5);
    // Rounds 2-5 only: tidings 40, 10, 20, 30 ms -> median run 30 ms (lower middle by ops/s); raw 100, 300, 200, 400 ms -> 300 ms.
    expect(report.scenarios.x).toMatchObject({ opsPerSec: Math.round(10_000 / 30), baseline: { opsPerSec: Math.round(10_000 / 300) } });
    // Every round's rate is kept, the warm-up first, for a report of the spread.
    expect(report.scenarios.x.roundsOpsPerSec).toEqual(elapsed.tidings.map((ms) => Math.round(10_000 / ms)));
    expect(report.scenarios.x.baseline?.roundsOpsPerSec).toEqual(elapsed.raw.map((ms) => Math.round(10_000 / ms)));
    // Round by round (rounds 2-5): 250/100, 1000/33, 500/50, 333/25 -> 2.5, 30.3, 10, 13.3 -> median 10;
    // the ratio of the two medians (333/33) is another figure.
    expect(report.scenarios.x.roundRatio).toBe(10);
    expect(report.scenarios.x.ratio).toBe(10.09);
  });

  it('a round-by-round ratio needs two rounds of both sides and leaves out the warm-up', () => {
    expect(roundByRound([1, 2], [1, 4])).toBe(0.5);
    expect(roundByRound([100, 2, 3, 9], [1, 4, 3, 10])).toBe(0.9);
    expect(roundByRound([5], [5])).toBeUndefined();
    expect(roundByRound(undefined, [1, 2])).toBeUndefined();
    expect(roundByRound([1, 2, 3], [1, 2])).toBeUndefined();
  });

  it('registers the scenarios the issue asks for; the backlog ones run on kafka:// only, and naming one elsewhere says so', async () => {
    expect(SCENARIOS.map((s) => s.name)).toEqual([...NAMES, ...BACKLOG_NAMES]);
    for (const s of SCENARIOS) expect(s.drivers, s.name).toEqual(BACKLOG_NAMES.includes(s.name) ? ['kafka'] : undefined);
    await expect(main(['--url', 'memory://', '--count', '5', '--scenarios', 'backlog-pooled'], () => {})).rejects.toThrow('scenario backlog-pooled runs on kafka:// only, not on memory://');
  });

  it('runs every scenario with tiny counts and ends with one JSON line holding the expected keys', async () => {
    const out: string[] = [];
    await main(['--url', 'memory://', '--count', '20'], (line) => out.push(line));
    const report = JSON.parse(out.at(-1)!);
    expect(report).toMatchObject({ bench: 'tidings', url: 'memory://', count: 20, durationMs: null });
    expect(Object.keys(report.scenarios)).toEqual(NAMES);
    for (const name of NAMES) {
      const r = report.scenarios[name];
      expect(r.ops, name).toBe(20);
      expect(r.opsPerSec, name).toBeGreaterThan(0);
      expect(r.elapsedMs, name).toBeGreaterThan(0);
    }
    for (const name of ['call-sequential', 'call-concurrent']) {
      expect(report.scenarios[name].p50Ms).toBeGreaterThan(0);
      expect(report.scenarios[name].p99Ms).toBeGreaterThanOrEqual(report.scenarios[name].p50Ms);
    }
    // The table: a title, a header, a rule and one row per scenario.
    expect(out[1]).toMatch(/^scenario\s+ops\s+ops\/s\s+p50 ms\s+p99 ms\s+raw ops\/s\s+tidings\/raw\s+per round\s+raw-oslo ops\/s\s+tidings\/raw-oslo\s+per round\s+cpu us\/op\s+cpu vs raw-oslo$/);
    expect(out).toHaveLength(3 + NAMES.length + 1);
  });

  it('measures both registered baselines in the same run and prints both ratios', async () => {
    const out: string[] = [];
    const report = await runBench({
      url: 'memory://',
      count: 10,
      durationMs: null,
      only: ['cast'],
      scenarios: SCENARIOS,
      baselines: { cast: async (ctx) => ({ ops: ctx.count, elapsedMs: 5 }) },
      // It burns ~2 ms of CPU so that its CPU per operation is measurable.
      osloBaselines: { cast: async (ctx) => ({ ops: ctx.count, elapsedMs: 10 + busy(2) }) },
      print: (line) => out.push(line),
    });
    expect(report.scenarios.cast.baseline).toMatchObject({ ops: 10, opsPerSec: 2000 });
    expect(report.scenarios.cast.ratio).toBeCloseTo(report.scenarios.cast.opsPerSec! / 2000, 1);
    expect(report.scenarios.cast.osloBaseline).toMatchObject({ ops: 10, opsPerSec: 1000 });
    expect(report.scenarios.cast.osloRatio).toBeCloseTo(report.scenarios.cast.opsPerSec! / 1000, 1);
    expect(out.find((l) => l.startsWith('cast '))).toMatch(/\s2000\s+\d+\.\d\d\s+-\s+1000\s+\d+\.\d\d\s+-\s+\d+\.\d\s+\d+\.\d\d$/);
    expect(report.scenarios.cast.cpuUsPerOp).toBeGreaterThan(0);
    expect(report.scenarios.cast.osloCpuRatio).toBeCloseTo(report.scenarios.cast.cpuUsPerOp! / report.scenarios.cast.osloBaseline!.cpuUsPerOp!, 1);
  });

  it('bench/cost.ts measures every feature mode for calls and notifications on memory://', async () => {
    for (const mode of MODES) {
      for (const op of OPS) {
        const m = await measure(tidings, 'memory://', mode, op, 20, 5);
        expect(m.ops, `${mode} ${op}`).toBe(20);
        expect(m.elapsedMs, `${mode} ${op}`).toBeGreaterThan(0);
      }
    }
  });

  it('loads both baseline kinds for RabbitMQ URLs and none for memory://', async () => {
    const rabbit = await loadBaselines('rabbit');
    expect(Object.keys(rabbit.raw)).toEqual(NAMES);
    expect(Object.keys(rabbit.oslo)).toEqual(NAMES);
    expect(await loadBaselines('memory')).toEqual({ raw: {}, oslo: {} });
  });

  it('loads raw kafkajs baselines for every Kafka scenario, and oslo-format ones for the notification scenarios', async () => {
    const kafka = await loadBaselines('kafka');
    expect(Object.keys(kafka.raw)).toEqual([...NAMES, ...BACKLOG_NAMES]);
    expect(Object.keys(kafka.oslo)).toEqual(['notify-publish', 'consume-plain', 'consume-pooled', 'consume-batch', ...BACKLOG_NAMES]);
  });

  it('bench/kafka-contract-cost.ts: each rung does the work of the one below and its own piece of the contract', () => {
    const [[, raw], [, checked], [, windowed], [, dispatched]] = rungs();
    const first = raw.encode(1);
    const second = raw.encode(2);
    // 1: both layers decoded, nothing checked.
    expect(raw.decode(first)).toMatchObject({ event_type: 'bench.event', priority: 'INFO', _context: {} });
    const noEventType = JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ priority: 'INFO', payload: {} }) });
    expect(() => raw.decode(noEventType)).not.toThrow();
    // 2: tidings' checks refuse what tidings' listener refuses, and move the context out.
    expect(() => checked.decode(noEventType)).toThrow(/event_type/);
    expect(checked.decode(first)).toMatchObject({ notification: { event_type: 'bench.event' }, ctx: {} });
    // 3: a copy of a notification is not handled twice.
    expect(windowed.decode(first)).toMatchObject({ event_type: 'bench.event' });
    expect(windowed.decode(first)).toBeUndefined();
    expect(windowed.decode(second)).toMatchObject({ event_type: 'bench.event' });
    // 4: the endpoint method of the priority handles it; no method, nothing handles it; copies are dropped too.
    expect(dispatched.decode(first)).toMatchObject({ priority: 'INFO' });
    expect(dispatched.decode(first)).toBeUndefined();
    expect(dispatched.decode(second.replace('INFO', 'DEBUG'))).toBeUndefined();
  });

  it('bench/amqp-contract-cost.ts: each rung does the work of the one below and its own piece of the contract', async () => {
    const [[, raw], [, checked], [, windowed], [, registered], [, dispatched]] = amqpRungs();
    const replyQueue = 'reply_0123456789abcdef0123456789abcdef';
    /** Serves `body` on a rung and says what it replied: [address, decoded reply] each. */
    const served = async (shape: typeof raw, body: Buffer) => {
      const sent: Array<[string, Record<string, unknown>]> = [];
      await shape.serve(body, (address, reply) => sent.push([address, JSON.parse(JSON.parse(reply.toString())['oslo.message'])]));
      return sent;
    };
    const enveloped = (message: Record<string, unknown>) => Buffer.from(JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify(message) }));
    const noMethod = enveloped({ args: {}, _msg_id: 'm', _reply_q: replyQueue, _unique_id: 'u1' });
    const elsewhere = enveloped({ method: 'echo', args: {}, _msg_id: 'm', _reply_q: 'some-service-queue', _unique_id: 'u2' });
    // 1: the args echoed to any address, nothing checked.
    expect(await served(raw, raw.request(1, { msgId: 'm1', replyQueue }))).toMatchObject([[replyQueue, { result: { i: 1 }, _msg_id: 'm1', ending: true }]]);
    expect(await served(raw, noMethod)).toHaveLength(1);
    // 2: tidings' checks refuse a request without a method; the reply is tidings' (failure null, a fresh _unique_id).
    expect(await served(checked, noMethod)).toEqual([]);
    const first = checked.request(1, { msgId: 'm1', replyQueue });
    expect(await served(checked, first)).toMatchObject([[replyQueue, { result: { i: 1 }, failure: null, _msg_id: 'm1' }]]);
    expect(await served(checked, first)).toHaveLength(1);
    // 3: a copy is not run twice, and no reply goes to an address that is not a reply queue.
    expect(await served(windowed, first)).toHaveLength(1);
    expect(await served(windowed, first)).toEqual([]);
    expect(await served(windowed, elsewhere)).toEqual([]);
    expect(await served(windowed, checked.request(2, { msgId: 'm2', replyQueue }))).toHaveLength(1);
    // 4: the client waits through the registry: the reply resolves its call, a failure becomes an error.
    const [[, replyBody]] = await served(checked, checked.request(3, { msgId: 'm3', replyQueue }));
    const resolved = new Promise((resolve) => {
      const deliver = registered.waitFor!('m3', resolve);
      deliver(registered.answer(enveloped(replyBody)).result);
    });
    await expect(resolved).resolves.toMatchObject({ i: 3 });
    const failed = new Promise((resolve) => registered.waitFor!('m4', resolve)(registered.answer(enveloped({ result: null, failure: '{"class":"ValueError","module":"builtins","message":"no","tb":[],"args":["no"],"kwargs":{}}', ending: true, _msg_id: 'm4' })).result));
    await expect(failed).resolves.toBeInstanceOf(Error);
    // 5: the endpoint method of the request runs; an unknown one is answered with a failure, copies are dropped too.
    const fifth = checked.request(5, { msgId: 'm5', replyQueue });
    expect(await served(dispatched, fifth)).toMatchObject([[replyQueue, { result: { i: 5 } }]]);
    expect(await served(dispatched, fifth)).toEqual([]);
    expect(await served(dispatched, enveloped({ method: 'nope', args: {}, _msg_id: 'm6', _reply_q: replyQueue, _unique_id: 'u6' }))).toMatchObject([[replyQueue, { result: null, failure: expect.stringContaining('no method nope') }]]);
  });

  it('loads the raw ioredis baselines, and the protocol-shaped ones in the second column, for redis:// and rediss:// URLs', async () => {
    for (const driver of ['redis', 'rediss']) {
      const redis = await loadBaselines(driver);
      expect(Object.keys(redis.raw), driver).toEqual(NAMES);
      expect(Object.keys(redis.oslo), driver).toEqual(NAMES);
    }
  });

  it('--baselines-only runs every raw redis baseline with tiny counts on 127.0.0.1:6379, no tidings figures', async () => {
    await requireRedis();
    const out: string[] = [];
    await main(['--url', REDIS_URL, '--count', '20', '--baselines-only'], (line) => out.push(line));
    const report = JSON.parse(out.at(-1)!);
    expect(report).toMatchObject({ bench: 'tidings', url: TransportURL.parse(REDIS_URL).toString(), count: 20, baselinesOnly: true });
    expect(Object.keys(report.scenarios)).toEqual(NAMES);
    for (const name of NAMES) {
      const r = report.scenarios[name];
      expect(r.ops, name).toBeUndefined();
      expect(r.ratio, name).toBeUndefined();
      expect(r.baseline.ops, name).toBe(20);
      expect(r.baseline.opsPerSec, name).toBeGreaterThan(0);
    }
    expect(report.scenarios['call-concurrent'].baseline.p50Ms).toBeGreaterThan(0);
    expect(out[0]).toMatch(/raw-client baselines only\)$/);
    expect(out.find((l) => l.startsWith('cast '))).toMatch(/^cast\s+-\s+-\s+-\s+-\s+\d+\s+-/);
  });

  it('a redis:// run with a driver measures every scenario beside its raw ioredis baseline and prints the ratio', async () => {
    await requireRedis();
    // Until tidings ships its Redis driver, the memory driver stands in for it under redis://: the
    // point is the harness pairing each scenario with its raw redis baseline in one run.
    if (!TRANSPORT_SCHEMES.includes('redis')) registerDriver('redis', () => import('../../src/drivers/memory/index.js'));
    const out: string[] = [];
    const report = await main(['--url', REDIS_URL, '--count', '10'], (line) => out.push(line));
    for (const name of NAMES) {
      const r = report!.scenarios[name];
      expect(r.ops, name).toBe(10);
      expect(r.baseline?.ops, name).toBe(10);
      expect(r.ratio, name).toBeCloseTo(r.opsPerSec! / r.baseline!.opsPerSec, 1);
      expect(r.osloBaseline?.ops, name).toBe(10);
      expect(r.osloRatio, name).toBeCloseTo(r.opsPerSec! / r.osloBaseline!.opsPerSec, 1);
    }
    // ops, ops/s, p50, p99, raw ops/s, ratio, per round (one round: none), protocol ops/s, ratio, per round (none), cpu us/op, cpu vs protocol
    expect(out.find((l) => l.startsWith('call-sequential '))).toMatch(/\s\d+\s+\d+\.\d\d\s+-\s+\d+\s+\d+\.\d\d\s+-\s+\d+\.\d\s+\d+\.\d\d$/);
  });

  it('the raw redis baselines UNLINK the keys they list when they end, even when they fail', async () => {
    await requireRedis();
    const keys = [`bench-smoke-${randomUUID()}`, `bench-smoke-${randomUUID()}`];
    const ctx = { url: REDIS_URL, transportUrl: TransportURL.parse(REDIS_URL), count: 1, warmup: 0, inTime: () => true, unique: (p: string) => `${p}-${randomUUID()}` };
    await expect(
      withRedis(ctx, 1, keys, async ([conn]) => {
        await conn.lpush(keys[0], 'x');
        await conn.xadd(keys[1], '*', 'm', 'x');
        throw new Error('scenario failed');
      }),
    ).rejects.toThrow('scenario failed');
    const check = new Redis(REDIS_URL);
    try {
      expect(await check.exists(...keys)).toBe(0);
    } finally {
      check.disconnect();
    }
  });

  it('a raw redis baseline against a Redis that does not answer fails naming Redis and how to start it', async () => {
    const url = 'redis://127.0.0.1:1/';
    await expect(main(['--url', url, '--count', '5', '--scenarios', 'notify-publish', '--baselines-only'], () => {})).rejects.toThrow(/cannot connect to Redis at redis:\/\/127\.0\.0\.1:1\/.*redis-server/);
  });

  it('refuses an unknown scenario name, naming the known ones', async () => {
    await expect(main(['--scenarios', 'cast,warp-speed', '--count', '5'], () => {})).rejects.toThrow(/unknown scenario "warp-speed"; known: call-sequential/);
  });

  it('measureBacklog has the writer put the backlog in while the gate holds the consumer, and times only the consuming after it opens', async () => {
    const gate = new Gate();
    let delivered = 0;
    const held: number[] = [];
    const marks: string[] = [];
    // A consumer behind a closed gate handles nothing.
    const send = async (i: number) => {
      if (gate.isOpen) delivered++;
      else {
        held.push(i);
        void gate.wait().then(() => delivered++);
      }
    };
    const ctx = {
      url: 'memory://',
      transportUrl: TransportURL.parse('memory://'),
      count: 20,
      warmup: 5,
      inTime: () => true,
      unique: (p: string) => p,
      mark: async (m: 'warm' | 'done') => {
        // The window opens with all 20 sent and none of them handled.
        marks.push(`${m} sent=${held.length} delivered=${delivered}`);
      },
    };
    // The writer puts the backlog in the broker: here, records the consumer holds at the closed gate.
    const write = async (from: number, n: number) => {
      for (let i = from; i < from + n; i++) await send(i);
    };
    const m = await measureBacklog(ctx, send, write, () => delivered, gate, 'test deliveries');
    expect(marks).toEqual(['warm sent=20 delivered=5', 'done sent=20 delivered=25']);
    expect(held).toEqual(Array.from({ length: 20 }, (_, i) => 5 + i));
    expect(gate.isOpen).toBe(true);
    expect(m.ops).toBe(20);
  });

  it('measureBacklog writes and drains a backlog above BACKLOG_WINDOW in windows of at most that many, each written behind the closed gate, and sums only the windows', async () => {
    const gate = new Gate();
    let delivered = 0;
    const writes: Array<[number, number, boolean]> = [];
    const send = async () => {
      if (gate.isOpen) delivered++;
      else void gate.wait().then(() => delivered++);
    };
    const count = 2 * BACKLOG_WINDOW + 7;
    const ctx = { url: 'memory://', transportUrl: TransportURL.parse('memory://'), count, warmup: 3, inTime: () => true, unique: (p: string) => p };
    const write = async (from: number, n: number) => {
      writes.push([from, n, gate.isOpen]);
      for (let i = 0; i < n; i++) await send();
      // Untimed: the writer's time is not the consumers'.
      await new Promise((r) => setTimeout(r, 60));
    };
    const m = await measureBacklog(ctx, send, write, () => delivered, gate, 'test deliveries');
    expect(writes).toEqual([
      [3, BACKLOG_WINDOW, false],
      [3 + BACKLOG_WINDOW, BACKLOG_WINDOW, false],
      [3 + 2 * BACKLOG_WINDOW, 7, false],
    ]);
    expect(delivered).toBe(3 + count);
    expect(m.ops).toBe(count);
    expect(m.elapsedMs).toBeLessThan(150);
    // A profile or an instruction count marks one window: more than one is refused before anything is sent.
    await expect(measureBacklog({ ...ctx, mark: async () => {} }, send, write, () => delivered, gate, 'test deliveries')).rejects.toThrow(/3 windows of at most 30000; profile or count instructions with --count 30000 or less/);
  });

  it('a Gate is open until closed, and wait() resolves when it opens again', async () => {
    const gate = new Gate();
    expect(gate.isOpen).toBe(true);
    await gate.wait();
    gate.close();
    gate.close();
    let passed = false;
    const waiting = gate.wait().then(() => (passed = true));
    await new Promise((r) => setImmediate(r));
    expect(passed).toBe(false);
    gate.open();
    await waiting;
    expect(gate.isOpen).toBe(true);
  });

  it('--one <scenario>:<side> runs one side once in a child, telling "warm" and "done" around its window with --handshake', async () => {
    const { code, lines } = await answerMarks(['bench/run.ts', '--one', 'consume-pooled:tidings', '--count', '20', '--warmup', '5', '--handshake'], { TIDINGS_TRANSPORT_URL: 'memory://' });
    expect(code).toBe(0);
    expect(lines.slice(0, 2)).toEqual(['warm', 'done']);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ ops: 20 });
    // A side the URL's broker has no baseline for, and an unknown side, fail naming the problem.
    await expect(main(['--url', 'memory://', '--one', 'consume-plain:raw', '--count', '5'], () => {})).rejects.toThrow('scenario consume-plain has no raw side on memory://');
    await expect(main(['--url', 'memory://', '--one', 'consume-plain:fast', '--count', '5'], () => {})).rejects.toThrow(/--one takes <scenario>:<side>, the side one of tidings, raw, oslo/);
  });

  it('the handshake holds the child at its mark, running nothing, until the parent answers (no stream of its own: it recompiled the window)', async () => {
    // A timer due during the wait: with stdin read as a stream, the event loop ran it before the
    // parent's answer; read by a blocking call, it runs only after.
    const script = `import { sayMark } from ${JSON.stringify(`${ROOT}bench/callgrind.ts`)};
setTimeout(() => console.log('timer'), 0);
await sayMark('warm');
console.log('after');
await sayMark('done');`;
    const { code, lines, seenBeforeAnswer } = await answerMarks(['--input-type=module', '-e', script], {}, 300);
    expect(code).toBe(0);
    expect(seenBeforeAnswer).toEqual([['warm'], ['warm', 'after', 'done']]);
    expect(lines).toEqual(['warm', 'after', 'done', 'timer']);
  });

  it('--profile samples one scenario\'s measured windows and prints self time per operation by owner, then the top functions', async () => {
    const out: string[] = [];
    const report = await main(['--profile', 'consume-plain', '--count', '3000', '--rounds', '2', '--top', '5'], (line) => out.push(line));
    expect(report).toBeUndefined();
    // Round 1 warms up and is not profiled; round 2 is.
    expect(out.filter((l) => l.startsWith('round '))).toEqual([expect.stringMatching(/^round 1\/2 tidings: .*\(warm-up, not profiled\)$/), expect.stringMatching(/^round 2\/2 tidings: \d+ notifications\/s/)]);
    expect(out).toContain('consume-plain: self time per operation over the profiled windows (tidings 3000 ops)');
    const owner = (name: string) => Number(out.find((l) => l.startsWith(`  ${name} `))?.trim().split(/\s+/)[1]);
    expect(owner('tidings')).toBeGreaterThan(0);
    const cpu = Number(out.find((l) => l.startsWith('CPU '))?.trim().split(/\s+/).at(-1));
    expect(cpu).toBeGreaterThan(0);
    const filesAt = out.indexOf("tidings: tidings' self time by source file, µs per operation");
    expect(filesAt).toBeGreaterThan(0);
    expect(out[filesAt + 1]).toMatch(/^source file\s+µs\/op$/);
    expect(out[filesAt + 3]).toMatch(/^\S+\/\S+\.ts\s+\d+\.\d{3}$/);
    const topAt = out.indexOf('tidings: top 5 functions by self time, µs per operation');
    expect(topAt).toBeGreaterThan(filesAt);
    expect(topAt).toBeGreaterThan(0);
    expect(out[topAt + 1]).toMatch(/^function\s+owner\s+µs\/op$/);
    expect(out.slice(topAt + 3)).toHaveLength(5);
    for (const row of out.slice(topAt + 3)) expect(row).toMatch(/\s\d+\.\d{3}$/);
    await expect(main(['--profile', 'consume-plain', '--sides', 'tidings,nope'], () => {})).rejects.toThrow(/--sides takes sides of tidings, raw, oslo; received "nope"/);
    await expect(main(['--profile', 'no-such-scenario'], () => {})).rejects.toThrow(/no-such-scenario/);
  }, 60_000);

  it('--profile charges each sampled function to its owner', () => {
    expect(ownerOf('', '(idle)')).toBe('idle');
    expect(ownerOf('', '(garbage collector)')).toBe('gc');
    expect(ownerOf('', 'writeBuffer')).toBe('native');
    expect(ownerOf('node:internal/buffer', 'slice')).toBe('node');
    expect(ownerOf('file:///work/main/node_modules/kafkajs/src/utils/long.js', 'fromString')).toBe('kafkajs');
    expect(ownerOf('file:///work/main/node_modules/@platformatic/kafka/dist/index.js', 'x')).toBe('@platformatic/kafka');
    expect(ownerOf('file:///work/main/src/structures/dedup.ts', 'begin')).toBe('tidings');
    expect(ownerOf('file:///work/main/bench/oslo-envelope.ts', 'unenvelope')).toBe('bench');
  });

  it('percentile is nearest-rank', () => {
    expect(percentile([5, 1, 4, 2, 3], 50)).toBe(3);
    expect(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 99)).toBe(10);
    expect(percentile([7], 99)).toBe(7);
  });

  it('`npm run bench` (tsx bench/run.ts) prints the JSON object as its last line', async () => {
    const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [TSX, 'bench/run.ts', '--count', '10', '--scenarios', 'call-sequential,consume-batch', '--duration', '5000'], {
        cwd: ROOT,
        env: { ...process.env, TIDINGS_TRANSPORT_URL: 'memory://' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let text = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (text += d));
      const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
      child.once('error', reject);
      child.once('close', (c) => {
        clearTimeout(timer);
        resolve({ code: c, stdout: text });
      });
    });
    expect(code).toBe(0);
    const last = stdout.trim().split('\n').at(-1)!;
    const report = JSON.parse(last);
    expect(Object.keys(report.scenarios)).toEqual(['call-sequential', 'consume-batch']);
    expect(report.durationMs).toBe(5000);
  });

  it('--kafka-mock starts the test broker and measures Kafka scenarios beside raw kafkajs (and, for notifications, kafkajs writing oslo\'s format); --kafka-client needs it', async () => {
    const out: string[] = [];
    const report = await main(['--kafka-mock', '--count', '5', '--scenarios', 'cast,notify-publish,backlog-pooled'], (line) => out.push(line));
    expect(report!.url).toMatch(/^kafka:\/\/127\.0\.0\.1:\d+,127\.0\.0\.1:\d+,127\.0\.0\.1:\d+\/\?/);
    expect(report!.scenarios.cast).toMatchObject({ ops: 5, baseline: { ops: 5 } });
    expect(report!.scenarios.cast.osloBaseline).toBeUndefined();
    expect(report!.scenarios['notify-publish']).toMatchObject({ ops: 5, baseline: { ops: 5 }, osloBaseline: { ops: 5 } });
    // Two members of one group each side, held at the gate while the backlog is written.
    expect(report!.scenarios['backlog-pooled']).toMatchObject({ ops: 5, baseline: { ops: 5 }, osloBaseline: { ops: 5 } });
    await expect(main(['--kafka-client', 'platformatic', '--url', 'memory://'], () => {})).rejects.toThrow(/--kafka-client goes with --kafka-mock/);
  }, 120_000);
});
