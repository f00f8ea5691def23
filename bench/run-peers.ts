// `npm run bench:peers`: tidings beside its peers on the same machine, brokers and scenarios:
// NestJS microservices (RMQ, Redis), Moleculer (AMQP, Redis), Python oslo.messaging (RabbitMQ)
// and the raw-client baselines (raw-oslo, raw ioredis). Every side of every scenario runs in a
// process of its own, interleaved in rounds (each round runs every side of a scenario back to
// back, the order reversed in every other round); the table gives each side's median and its ratio
// to tidings on the same broker. The peers' packages live in bench/peers (their own package.json,
// installed here with `npm ci --prefix bench/peers` when missing), never in the library's.
// See bench/README.md, "tidings beside its peers".
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { percentile } from './harness.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PEERS_DIR = fileURLToPath(new URL('./peers/', import.meta.url));

/** The scenarios of the peers table, in its column order, with their column headings. */
export const PEER_SCENARIOS = [
  { name: 'call-sequential', heading: 'calls/s, sequential' },
  { name: 'call-concurrent', heading: 'calls/s, 16 in flight' },
  { name: 'cast', heading: 'casts/s' },
  { name: 'notify-publish', heading: 'notifications published/s' },
  { name: 'consume-plain', heading: 'notifications consumed/s' },
] as const;

const RPC = ['call-sequential', 'call-concurrent', 'cast'];
const ALL = PEER_SCENARIOS.map((s) => s.name as string);

/** Where the brokers are. */
export interface Brokers {
  /** RabbitMQ as a tidings / oslo transport URL (rabbit://user:pass@host:port/). */
  rabbit: string;
  /** Redis as a transport URL (redis://host:port/). */
  redis: string;
}

/** One side of the table: how to run one of its scenarios in a process of its own. */
export interface Peer {
  readonly name: string;
  /** The row's label. */
  readonly label: string;
  readonly broker: 'RabbitMQ' | 'Redis';
  /** The peer its ratio is taken against (tidings on the same broker); itself for tidings. */
  readonly reference: string;
  readonly scenarios: readonly string[];
  /** Whether it needs bench/peers' packages installed. */
  readonly needsPeerPackages: boolean;
  command(scenario: string, count: number, warmup: number, brokers: Brokers): { file: string; args: string[]; env: Record<string, string> };
}

const countArgs = (count: number, warmup: number) => ['--count', String(count), '--warmup', String(warmup)];
/** The rabbit:// URL as an amqp:// one, for amqplib-based peers (same host, credentials and vhost). */
const amqpUrl = (rabbit: string) => rabbit.replace(/^[a-z]+:/, 'amqp:');

/** tidings' bench (`bench/run.ts --one`), one side of one scenario, on a URL. */
function tidingsSide(name: string, label: string, broker: Peer['broker'], side: 'tidings' | 'raw' | 'oslo', reference: string, scenarios: readonly string[] = ALL, env: Record<string, string> = {}): Peer {
  return {
    name,
    label,
    broker,
    reference,
    scenarios,
    needsPeerPackages: false,
    command: (scenario, count, warmup, brokers) => ({
      file: process.execPath,
      args: ['--import', 'tsx', 'bench/run.ts', '--one', `${scenario}:${side}`, ...countArgs(count, warmup)],
      env: { TIDINGS_TRANSPORT_URL: broker === 'RabbitMQ' ? brokers.rabbit : brokers.redis, ...env },
    }),
  };
}

/** A Node peer runner in bench/peers (run under tsx, so it measures with bench/measure.ts). */
function nodePeer(name: string, label: string, broker: Peer['broker'], file: string, flag: string[], reference: string): Peer {
  return {
    name,
    label,
    broker,
    reference,
    scenarios: RPC,
    needsPeerPackages: true,
    command: (scenario, count, warmup, brokers) => ({
      file: process.execPath,
      args: ['--import', 'tsx', `bench/peers/${file}`, ...flag, '--scenario', scenario, ...countArgs(count, warmup)],
      env: { PEERS_AMQP_URL: amqpUrl(brokers.rabbit), PEERS_REDIS_URL: brokers.redis },
    }),
  };
}

/** Every side of the table, in its row order (RabbitMQ first, then Redis). */
export const PEERS: readonly Peer[] = [
  tidingsSide('tidings-rabbit', 'tidings, RabbitMQ', 'RabbitMQ', 'tidings', 'tidings-rabbit'),
  tidingsSide('raw-oslo', "raw amqplib doing oslo's protocol (raw-oslo)", 'RabbitMQ', 'oslo', 'tidings-rabbit'),
  // What Moleculer and NestJS skip: raw-oslo on plain channels (bench/raw-amqp-oslo.ts, NO_CONFIRMS).
  tidingsSide('raw-oslo-noconfirm', 'raw-oslo without publisher confirms', 'RabbitMQ', 'oslo', 'tidings-rabbit', [...RPC, 'notify-publish'], { TIDINGS_BENCH_OSLO_NO_CONFIRMS: '1' }),
  nodePeer('nest-rmq', 'NestJS microservices, RMQ transport', 'RabbitMQ', 'nest.mjs', ['--transport', 'rmq'], 'tidings-rabbit'),
  nodePeer('moleculer-amqp', 'Moleculer, AMQP transporter (prefetch 64, noDelay)', 'RabbitMQ', 'moleculer.mjs', ['--transporter', 'amqp'], 'tidings-rabbit'),
  {
    name: 'oslo-python',
    label: 'Python oslo.messaging, threading executor',
    broker: 'RabbitMQ',
    reference: 'tidings-rabbit',
    scenarios: ALL,
    needsPeerPackages: false,
    command: (scenario, count, warmup, brokers) => ({
      file: '/usr/bin/python3',
      args: ['bench/peers/oslo_bench.py', '--scenario', scenario, ...countArgs(count, warmup), '--url', brokers.rabbit],
      env: {},
    }),
  },
  tidingsSide('tidings-redis', 'tidings, Redis', 'Redis', 'tidings', 'tidings-redis'),
  tidingsSide('raw-ioredis', 'raw ioredis (list request/reply; streams for casts and notifications)', 'Redis', 'raw', 'tidings-redis'),
  nodePeer('nest-redis', 'NestJS microservices, Redis transport', 'Redis', 'nest.mjs', ['--transport', 'redis'], 'tidings-redis'),
  nodePeer('moleculer-redis', 'Moleculer, Redis transporter', 'Redis', 'moleculer.mjs', ['--transporter', 'redis'], 'tidings-redis'),
];

/** One measured run of one side of one scenario (a child's last line), or why it failed. */
export interface PeerRun {
  opsPerSec?: number;
  p50Ms?: number;
  /** CPU time (user + system, every thread) of the side's process per operation over its window, µs. */
  cpuUsPerOp?: number;
  error?: string;
}

/** Every run of a side, by scenario, in round order. */
export type PeerRuns = Record<string, Record<string, PeerRun[]>>;

/** A side's median ops/s of a scenario over its successful runs, or undefined without one. */
export function medianOf(runs: readonly PeerRun[] | undefined): number | undefined {
  const rates = (runs ?? []).flatMap((r) => (r.opsPerSec !== undefined && r.error === undefined ? [r.opsPerSec] : []));
  return rates.length > 0 ? percentile(rates, 50) : undefined;
}

/** 16461 -> "16,461". */
const thousands = (n: number) => Math.round(n).toLocaleString('en-US');

/**
 * The markdown table: a row per side, a column per scenario, each cell the median ops/s and its
 * ratio to the side's reference (tidings on the same broker), `-` where the side has no such
 * scenario or no successful run, `failed` where every run failed.
 */
export function formatPeersTable(peers: readonly Peer[], scenarios: readonly string[], runs: PeerRuns): string[] {
  const columns = PEER_SCENARIOS.filter((s) => scenarios.includes(s.name));
  const header = `| side | broker | ${columns.map((c) => c.heading).join(' | ')} |`;
  const rule = `| --- | --- | ${columns.map(() => '---:').join(' | ')} |`;
  const rows = peers.map((peer) => {
    const cells = columns.map(({ name }) => {
      const own = runs[peer.name]?.[name];
      const median = medianOf(own);
      if (median === undefined) return own?.length ? 'failed' : '-';
      const reference = medianOf(runs[peer.reference]?.[name]);
      return reference ? `${thousands(median)} (${(median / reference).toFixed(2)})` : thousands(median);
    });
    return `| ${peer.label} | ${peer.broker} | ${cells.join(' | ')} |`;
  });
  return [header, rule, ...rows];
}

/** Runs one child to its end: its last line's stats, or an error naming its exit and last output. */
function runChild(command: { file: string; args: string[]; env: Record<string, string> }, timeoutMs: number): Promise<PeerRun> {
  return new Promise((resolve) => {
    const child = spawn(command.file, command.args, { cwd: ROOT, env: { ...process.env, ...command.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-2000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      resolve({ error: e.message });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const last = out.trim().split('\n').at(-1) ?? '';
      try {
        if (code !== 0) throw new Error(`exited ${signal ?? code}`);
        const stats = JSON.parse(last) as { opsPerSec: number; p50Ms?: number; cpuUsPerOp?: number };
        resolve({ opsPerSec: stats.opsPerSec, ...(stats.p50Ms !== undefined ? { p50Ms: stats.p50Ms } : {}), ...(stats.cpuUsPerOp !== undefined ? { cpuUsPerOp: stats.cpuUsPerOp } : {}) });
      } catch (e) {
        const tail = (err.trim() || last).split('\n').slice(-3).join(' / ');
        resolve({ error: `${e instanceof Error ? e.message : String(e)}${tail ? `: ${tail}` : ''}` });
      }
    });
  });
}

/** Installs bench/peers' locked packages when one is missing (`npm ci --prefix bench/peers`). */
function ensurePeerPackages(print: (line: string) => void): void {
  const { dependencies } = JSON.parse(readFileSync(`${PEERS_DIR}package.json`, 'utf8')) as { dependencies: Record<string, string> };
  if (Object.keys(dependencies).every((name) => existsSync(`${PEERS_DIR}node_modules/${name}/package.json`))) return;
  print('installing bench/peers packages (npm ci --prefix bench/peers)');
  const done = spawnSync('npm', ['ci', '--prefix', PEERS_DIR, '--no-audit', '--no-fund'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  if (done.status !== 0) throw new Error(`npm ci --prefix bench/peers failed (exit ${done.status ?? done.signal})`);
}

const HELP = `Usage: npm run bench:peers -- [--rounds N] [--count N] [--warmup N] [--peers a,b] [--scenarios a,b]
                                  [--rabbit-url <url>] [--redis-url <url>] [--timeout <ms>]

  --rounds <N>        rounds (default $PEERS_ROUNDS, else 3); every side of a scenario runs once a
                      round, back to back, in reversed order every other round; medians of all rounds
  --count <N>         operations per run after the warm-up (default $PEERS_COUNT, else 10000)
  --warmup <N>        unmeasured operations first (default min(2000, count / 5): every side at steady state)
  --peers <a,b>       sides to run (default all): ${PEERS.map((p) => p.name).join(', ')}
  --scenarios <a,b>   scenarios (default all): ${ALL.join(', ')}
  --rabbit-url <url>  RabbitMQ (default rabbit://guest:guest@127.0.0.1:5672/)
  --redis-url <url>   Redis (default redis://127.0.0.1:6379/)
  --timeout <ms>      a run still going after this is killed and reported failed (default 300000)

Prints a progress line per run, the markdown table (median ops/s and, in parentheses, the ratio to
tidings on the same broker), then one JSON object on the last line.`;

/**
 * Unmeasured operations before a run's window: 2,000 (a fifth of a shorter run). Every run is a
 * fresh process, and V8 is still compiling after a few hundred operations: tidings' sequential
 * calls cost twice the CPU in a process that has made 200 as once it has made thousands
 * (bench/README.md), and the same holds, less, for every side. Services run for days: the table
 * compares the sides at steady state.
 */
export const defaultWarmup = (count: number) => Math.min(2000, Math.ceil(count / 5));

function positiveInt(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined || text === '') return fallback;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${flag} must be a positive integer, received ${JSON.stringify(text)}`);
  return n;
}

/** Names from a comma-separated flag, each checked against `known`; all of `known` when absent. */
export function pick(flag: string, text: string | undefined, known: readonly string[]): string[] {
  if (text === undefined) return [...known];
  const names = text.split(',').map((s) => s.trim()).filter(Boolean);
  const wrong = names.find((n) => !known.includes(n));
  if (wrong !== undefined) throw new Error(`${flag}: unknown ${JSON.stringify(wrong)}; known: ${known.join(', ')}`);
  return names;
}

/** Runs the peers bench with command-line style arguments; resolves with every run. */
export async function main(argv: readonly string[], print: (line: string) => void = console.log): Promise<PeerRuns | undefined> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      rounds: { type: 'string' },
      count: { type: 'string' },
      warmup: { type: 'string' },
      peers: { type: 'string' },
      scenarios: { type: 'string' },
      'rabbit-url': { type: 'string' },
      'redis-url': { type: 'string' },
      timeout: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    print(HELP);
    return undefined;
  }
  const rounds = positiveInt('--rounds', values.rounds ?? process.env.PEERS_ROUNDS, 3);
  const count = positiveInt('--count', values.count ?? process.env.PEERS_COUNT, 10_000);
  const warmup = values.warmup === '0' ? 0 : positiveInt('--warmup', values.warmup, defaultWarmup(count));
  const timeoutMs = positiveInt('--timeout', values.timeout, 300_000);
  const names = pick('--peers', values.peers, PEERS.map((p) => p.name));
  const peers = PEERS.filter((p) => names.includes(p.name));
  const scenarios = pick('--scenarios', values.scenarios, ALL);
  const brokers: Brokers = { rabbit: values['rabbit-url'] ?? 'rabbit://guest:guest@127.0.0.1:5672/', redis: values['redis-url'] ?? 'redis://127.0.0.1:6379/' };
  if (peers.some((p) => p.needsPeerPackages)) ensurePeerPackages(print);

  const runs: PeerRuns = Object.fromEntries(peers.map((p) => [p.name, {}]));
  const started = new Date();
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? peers : [...peers].reverse();
    for (const scenario of scenarios) {
      for (const peer of order) {
        if (!peer.scenarios.includes(scenario)) continue;
        const run = await runChild(peer.command(scenario, count, warmup, brokers), timeoutMs);
        (runs[peer.name][scenario] ??= []).push(run);
        print(`round ${r + 1}/${rounds} ${scenario} ${peer.name}: ${run.error !== undefined ? `FAILED ${run.error}` : `${run.opsPerSec} ops/s`}`);
      }
    }
  }
  print('');
  print(`tidings beside its peers: median ops/s of ${rounds} round${rounds > 1 ? 's' : ''} of ${count} operations (after ${warmup} unmeasured), each run a process of its own; in parentheses the ratio to tidings on the same broker (node ${process.version}, ${started.toISOString()})`);
  print('');
  for (const line of formatPeersTable(peers, scenarios, runs)) print(line);
  print('');
  const medians = Object.fromEntries(peers.map((p) => [p.name, Object.fromEntries(scenarios.flatMap((s) => { const m = medianOf(runs[p.name][s]); return m === undefined ? [] : [[s, m]]; }))]));
  print(JSON.stringify({ bench: 'tidings-peers', date: started.toISOString(), node: process.version, rounds, count, warmup, medians, runs }));
  return runs;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`bench:peers: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
