// `npm run bench:scale`: what tidings costs as work grows (issue 30). Each run is a process of its
// own (`--child`); this one starts them, prints markdown tables and merges the figures into
// bench/results/scale-<driver>.json, from which `npm run bench:scale:plot` draws the SVGs.
import { spawn, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { TransportURL } from '../src/index.js';
import { createTopicsWithAdmin, MOCK_RPC_MAX_WAIT_MS, SHORT_GROUP_QUERY, startKafkaMock } from '../test/support/kafka-broker.js';
import { backlogTopic, kafkaBacklogPartitions, runBacklog, runSoak, runTopics, type BacklogResult, type RunSpec, type SoakResult, type TopicsRow } from './scale-runs.js';
import { RABBIT_NODE_ENV, sweepBroker } from './scale-probes.js';
import { startRabbitNode, type RabbitNode } from '../test/support/rabbit-node.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSX = fileURLToPath(new URL('../node_modules/tsx/dist/esm/index.mjs', import.meta.url));
export const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

export const DRIVERS = ['memory', 'rabbit', 'redis', 'kafka'] as const;
export type ScaleDriver = (typeof DRIVERS)[number];
const MODES = ['topics', 'soak', 'backlog'] as const;
type Mode = (typeof MODES)[number];
const SOAK_KINDS = ['notifications', 'calls'] as const;

const DEFAULT_URLS: Record<Exclude<ScaleDriver, 'kafka'>, string> = {
  memory: 'memory://',
  rabbit: 'rabbit://guest:guest@127.0.0.1:5672/',
  redis: 'redis://127.0.0.1:6379/',
};

const HELP = `Usage: npm run bench:scale -- --driver memory|rabbit|redis|kafka --mode topics|soak|backlog[,...]
                            [--print] [--sizes 1,10,100,1000] [--messages N] [--calls N] [--idle-ms N] [--soak notifications,calls] [--url <url>] [--no-save]

  --driver <d>     memory (memory://), rabbit (rabbit://guest:guest@127.0.0.1:5672/), redis
                   (redis://127.0.0.1:6379/, each run under a key_prefix of its own) or kafka
                   (starts librdkafka's mock cluster, 3 brokers, with the tests' short group timings)
  --url <url>      connect there instead (same driver)
  --rabbit-node    with --driver rabbit: start a RabbitMQ node of the bench's own (free loopback ports,
                   a temp dir, 4 GB memory watermark, the bench's open-file limit) instead of the
                   shared one, whose ~830 sockets cannot hold 1,000 topics (~2,000 connections)
  --kafka-client <c>  with --driver kafka: tidings' Kafka client, kafkajs (default) or platformatic
  --mock-query <q>    with --driver kafka: the mock URL's query instead of the tests' short timings
                      (${SHORT_GROUP_QUERY}&rpc_max_wait_ms=${MOCK_RPC_MAX_WAIT_MS})
  --mode <m,...>   topics: for each size N, N RPC servers and N pooled listeners on N topics in one
                   process: start-up, memory, broker objects, timers and handles per server/listener,
                   idle CPU and requests, calls/s with all alive, stop time
                   soak: --messages notifications through a pooled listener and --messages calls,
                   memory, timers, handles and collection sizes sampled ${40} times
                   backlog: --messages notifications published while one listener waits, then drained
  --sizes <a,b>    topics per run of the topics mode (default 1,10,100,1000)
  --messages <N>   soak operations per kind (default 1000000) and, unless --backlog is given,
                   backlog size (default 100000)
  --backlog <N>    backlog size
  --calls <N>      calls timed with every topic alive in the topics mode (default 5000)
  --idle-ms <N>    how long the idle process is watched in the topics mode (default 5000)
  --soak <k,...>   which soak runs (default notifications,calls)
  --no-save        print only; do not merge into bench/results/scale-<driver>.json
  --print          print the tables recorded in bench/results/scale-<driver>.json (of --mode, else
                   all), measuring nothing

Every run is a process of its own; RabbitMQ queues and Redis keys of a run are deleted after it.`;

export interface ScaleResults {
  bench: 'tidings-scale';
  driver: ScaleDriver;
  /** Redacted. */
  url: string;
  node: string;
  /** One row per topic count, the latest run of each (a run replaces the rows of its sizes only). */
  topics?: { rows: Array<TopicsRow & Stamp & { calls: number; idleMs: number }> };
  /** The latest run of each kind. */
  soak?: { runs: Array<SoakResult & Stamp> };
  backlog?: { result: BacklogResult & Stamp };
}

/** When and on which commit a figure was measured. */
export interface Stamp {
  date: string;
  commit: string;
}

function positiveInt(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text.replace(/_/g, ''));
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${flag} must be a positive integer, received ${JSON.stringify(text)}`);
  return n;
}

function listOf<T extends string>(flag: string, text: string, allowed: readonly T[]): T[] {
  const items = text.split(',').map((s) => s.trim()).filter(Boolean);
  const wrong = items.find((s) => !allowed.includes(s as T));
  if (wrong !== undefined || items.length === 0) throw new Error(`${flag} takes ${allowed.join(', ')} (comma-separated); received ${JSON.stringify(text)}`);
  return items as T[];
}

/** The commit measured, `+dirty` when src/ or bench/ has changes. */
function commitOf(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', 'src', 'bench/scale.ts', 'bench/scale-runs.ts', 'bench/scale-probes.ts'], { cwd: ROOT, encoding: 'utf8' }).trim();
    return dirty ? `${head}+dirty` : head;
  } catch {
    return 'unknown';
  }
}

export async function main(argv: readonly string[], print: (line: string) => void = console.log): Promise<ScaleResults | undefined> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      driver: { type: 'string' },
      mode: { type: 'string' },
      sizes: { type: 'string' },
      messages: { type: 'string' },
      backlog: { type: 'string' },
      calls: { type: 'string' },
      'idle-ms': { type: 'string' },
      soak: { type: 'string' },
      url: { type: 'string' },
      'kafka-client': { type: 'string' },
      'mock-query': { type: 'string' },
      'rabbit-node': { type: 'boolean' },
      'no-save': { type: 'boolean' },
      print: { type: 'boolean' },
      child: { type: 'string' },
      prefix: { type: 'string' },
      size: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    print(HELP);
    return undefined;
  }
  if (values.child) {
    // One run in this process: its result as the last line.
    const spec: RunSpec = {
      url: values.url ?? 'memory://',
      prefix: values.prefix ?? `scale-${randomUUID().slice(0, 8)}`,
      size: positiveInt('--size', values.size, 1),
      calls: positiveInt('--calls', values.calls, 5000),
      idleMs: positiveInt('--idle-ms', values['idle-ms'], 5000),
    };
    const result = values.child === 'topics' ? await runTopics(spec) : values.child === 'backlog' ? await runBacklog(spec) : await runSoak(spec, values.child === 'soak-calls' ? 'calls' : 'notifications');
    print(JSON.stringify(result));
    return undefined;
  }
  const driver = listOf('--driver', values.driver ?? '', DRIVERS);
  if (driver.length !== 1) throw new Error('--driver takes one driver');
  if (values.print) {
    // The tables of what was recorded, measuring nothing.
    const file = `${RESULTS_DIR}scale-${driver[0]}.json`;
    if (!existsSync(file)) throw new Error(`no results recorded for ${driver[0]} (${file})`);
    const recorded = JSON.parse(readFileSync(file, 'utf8')) as ScaleResults;
    for (const line of formatResults(recorded, values.mode ? listOf('--mode', values.mode, MODES) : MODES)) print(line);
    return recorded;
  }
  const modes = listOf('--mode', values.mode ?? '', MODES);
  const sizes = (values.sizes ?? '1,10,100,1000').split(',').map((s) => positiveInt('--sizes', s.trim(), 1));
  const messages = positiveInt('--messages', values.messages, 1_000_000);
  const backlog = positiveInt('--backlog', values.backlog, values.messages !== undefined ? messages : 100_000);
  const calls = positiveInt('--calls', values.calls, 5000);
  const idleMs = positiveInt('--idle-ms', values['idle-ms'], 5000);
  const soakKinds = listOf('--soak', values.soak ?? SOAK_KINDS.join(','), SOAK_KINDS);
  if (values['kafka-client'] !== undefined && (driver[0] !== 'kafka' || values.url)) throw new Error('--kafka-client goes with --driver kafka and its mock (with --url, put ?client= in the URL)');
  if (values['mock-query'] !== undefined && (driver[0] !== 'kafka' || values.url)) throw new Error('--mock-query goes with --driver kafka and its mock');
  if (values['rabbit-node'] && (driver[0] !== 'rabbit' || values.url)) throw new Error('--rabbit-node goes with --driver rabbit and no --url');
  return run({ driver: driver[0], modes, sizes, messages, backlog, calls, idleMs, soakKinds, url: values.url, kafkaClient: values['kafka-client'], mockQuery: values['mock-query'], rabbitNode: !!values['rabbit-node'], save: !values['no-save'], print });
}

interface Plan {
  driver: ScaleDriver;
  modes: readonly Mode[];
  sizes: readonly number[];
  messages: number;
  backlog: number;
  calls: number;
  idleMs: number;
  soakKinds: ReadonlyArray<(typeof SOAK_KINDS)[number]>;
  url?: string;
  kafkaClient?: string;
  mockQuery?: string;
  rabbitNode: boolean;
  save: boolean;
  print: (line: string) => void;
}

async function run(plan: Plan): Promise<ScaleResults> {
  const mock = plan.driver === 'kafka' && !plan.url ? await startKafkaMock({ spreadLeaders: true }) : undefined;
  let rabbit: RabbitNode | undefined;
  try {
    if (plan.rabbitNode) {
      plan.print('starting a RabbitMQ node of its own ...');
      rabbit = await startRabbitNode({ config: ['vm_memory_high_watermark.absolute = 4GB'] });
      process.env[RABBIT_NODE_ENV] = `${rabbit.nodeName} ${rabbit.dir}`;
    }
    const client = plan.kafkaClient ? `&client=${encodeURIComponent(plan.kafkaClient)}` : '';
    const base = mock
      ? `${mock.url}/?${plan.mockQuery ?? `${SHORT_GROUP_QUERY}&rpc_max_wait_ms=${MOCK_RPC_MAX_WAIT_MS}`}${client}`
      : rabbit
        ? rabbit.url.replace(/^amqp:/, 'rabbit:')
        : (plan.url ?? DEFAULT_URLS[plan.driver as Exclude<ScaleDriver, 'kafka'>]);
    const parsed = TransportURL.parse(base);
    if (parsed.driver !== plan.driver && !(plan.driver === 'rabbit' && ['amqp', 'kombu'].includes(parsed.driver))) throw new Error(`--url ${parsed.toString()} is not a ${plan.driver} URL`);
    const file = `${RESULTS_DIR}scale-${plan.driver}.json`;
    const results: ScaleResults = plan.save && existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ScaleResults) : { bench: 'tidings-scale', driver: plan.driver, url: '', node: '' };
    Object.assign(results, { url: parsed.toString(), node: process.version });
    const commit = commitOf();
    const child = async <T>(kind: string, size: number): Promise<T> => {
      const prefix = `scale-${randomUUID().slice(0, 8)}`;
      const url = plan.driver === 'redis' ? withQuery(base, 'key_prefix', prefix) : base;
      if (kind === 'backlog' && plan.driver === 'kafka') {
        // More partitions than the mock's 4 by default, so that it keeps the whole backlog.
        const spec = { name: `${backlogTopic(prefix)}.info`, partitions: kafkaBacklogPartitions(size) };
        if (mock) await mock.createTopic(spec);
        else await createTopicsWithAdmin(parsed.hosts.map((h) => `${h.hostname}:${h.port ?? 9092}`), [spec]);
      }
      try {
        return await runChild<T>(['--child', kind, '--url', url, '--prefix', prefix, '--size', String(size), '--calls', String(plan.calls), '--idle-ms', String(plan.idleMs)]);
      } finally {
        await sweepBroker(parsed, url, prefix);
      }
    };
    for (const mode of plan.modes) {
      const stamp = (): Stamp => ({ date: new Date().toISOString(), commit });
      if (mode === 'topics') {
        const rows = (results.topics?.rows ?? []).filter((row) => !plan.sizes.includes(row.topics));
        for (const size of plan.sizes) {
          plan.print(`topics: ${size} ...`);
          const s = stamp();
          rows.push({ ...(await child<TopicsRow>('topics', size)), calls: plan.calls, idleMs: plan.idleMs, ...s });
        }
        results.topics = { rows: rows.sort((a, b) => a.topics - b.topics) };
      } else if (mode === 'soak') {
        const runs = (results.soak?.runs ?? []).filter((run) => !plan.soakKinds.includes(run.kind));
        for (const kind of plan.soakKinds) {
          plan.print(`soak: ${plan.messages} ${kind} ...`);
          const s = stamp();
          runs.push({ ...(await child<SoakResult>(kind === 'calls' ? 'soak-calls' : 'soak-notifications', plan.messages)), ...s });
        }
        results.soak = { runs: runs.sort((a, b) => a.kind.localeCompare(b.kind)).reverse() };
      } else {
        plan.print(`backlog: ${plan.backlog} ...`);
        const s = stamp();
        results.backlog = { result: { ...(await child<BacklogResult>('backlog', plan.backlog)), ...s } };
      }
    }
    for (const line of formatResults(results, plan.modes)) plan.print(line);
    if (plan.save) {
      mkdirSync(RESULTS_DIR, { recursive: true });
      writeFileSync(file, `${JSON.stringify(results, null, 1)}\n`);
      plan.print(`written ${file}`);
    }
    return results;
  } finally {
    await mock?.stop();
    await rabbit?.stop();
    delete process.env[RABBIT_NODE_ENV];
  }
}

function withQuery(url: string, key: string, value: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}${key}=${encodeURIComponent(value)}`;
}

/** Runs one `--child` in a process of its own and parses its last line. */
function runChild<T>(args: readonly string[]): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX, fileURLToPath(import.meta.url), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`scale run ${args[1]} failed (exit ${code}): ${err.trim().split('\n').slice(-8).join('\n')}`));
      else resolve(JSON.parse(line) as T);
    });
  });
}

// --- tables -------------------------------------------------------------------------------

/** `2026-11-27 07:39-07:41 UTC, commit abc1234` for the runs of a table. */
function stamps(runs: readonly Stamp[]): string {
  const dates = runs.map((x) => x.date).sort();
  const day = dates[0].slice(0, 10);
  const span = dates[0].slice(11, 16) === dates[dates.length - 1].slice(11, 16) ? dates[0].slice(11, 16) : `${dates[0].slice(11, 16)}-${dates[dates.length - 1].slice(11, 16)}`;
  const commits = [...new Set(runs.map((x) => x.commit))];
  return `${day} ${span} UTC, commit${commits.length > 1 ? 's' : ''} ${commits.join(', ')}`;
}

const fmt = (n: number | undefined, digits = 0) => (n === undefined ? '-' : n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }));
const row = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
const table = (header: readonly string[], rows: ReadonlyArray<readonly string[]>) => [row(header), row(header.map((_, i) => (i === 0 ? '---' : '---:'))), ...rows.map(row)];

/** The markdown tables of `modes` (all three when absent). */
export function formatResults(r: ScaleResults, modes: readonly Mode[] = MODES): string[] {
  const out: string[] = [];
  if (modes.includes('topics') && r.topics) {
    const redis = r.topics.rows.some((x) => x.idleBrokerCmdsPerSec !== undefined);
    out.push('', `**${r.driver}: topics** (${r.url}; ${stamps(r.topics.rows)}; calls timed ${[...new Set(r.topics.rows.map((x) => fmt(x.calls)))].join(', ')}, idle watched ${[...new Set(r.topics.rows.map((x) => fmt(x.idleMs)))].join(', ')} ms)`, '');
    out.push(...table(
      ['topics', 'start servers ms', 'start listeners ms', 'RSS KB/server', 'heap KB/server', 'RSS KB/listener', 'heap KB/listener', 'broker objects/pair', 'timers/pair', 'handles/pair', 'idle CPU %', 'idle writes/s', ...(redis ? ['idle Redis cmds/s'] : []), 'calls/s', 'p50 ms', 'p99 ms', 'stop ms', 'stop CPU ms'],
      r.topics.rows.map((x) => [
        fmt(x.topics), fmt(x.serversStartMs), fmt(x.listenersStartMs), fmt(x.rssKbPerServer), fmt(x.heapKbPerServer, 1), fmt(x.rssKbPerListener), fmt(x.heapKbPerListener, 1),
        Object.entries(x.brokerPerPair).map(([k, v]) => `${fmt(v, 2)} ${k}`).join(', ') || '-',
        fmt(x.timersPerPair, 2), fmt(x.handlesPerPair, 2), fmt(x.idleCpuPct, 2), fmt(x.idleWritesPerSec, 1), ...(redis ? [fmt(x.idleBrokerCmdsPerSec, 1)] : []),
        fmt(x.callsPerSec), fmt(x.callP50Ms, 2), fmt(x.callP99Ms, 2), fmt(x.stopMs), fmt(x.stopCpuMs),
      ]),
    ));
    const named = r.topics.rows.filter((x) => x.idleBrokerCmdsByName);
    if (named.length) {
      out.push('', 'Idle Redis commands per second and pair, by command (scripts\' commands counted too; every client of the server):', '');
      out.push(...table(['topics', 'commands/s per pair'], named.map((x) => [fmt(x.topics), Object.entries(x.idleBrokerCmdsByName ?? {}).map(([k, v]) => `${k.replace('|', ' ')} ${fmt(v / x.topics, 2)}`).join(', ')])));
    }
  }
  if (modes.includes('soak') && r.soak) {
    out.push('', `**${r.driver}: soak** (${stamps(r.soak.runs)}; warm-up = first 10%)`, '');
    out.push(...table(
      ['run', 'count', 'per s', 'RSS MB at warm-up end → highest after', 'RSS growth (last quarter vs after warm-up)', 'heap MB at warm-up end → highest after', 'heap growth', 'timers warm → end', 'handles warm → end', 'pending replies at end', 'collections grown (highest after warm-up → in last quarter)'],
      r.soak.runs.map((s) => {
        const w = s.samples[s.warmIndex];
        const end = s.samples[s.samples.length - 1];
        const after = s.samples.slice(s.warmIndex);
        const grown = Object.entries(s.grownCollections).map(([p, [a, b]]) => `${p} ${a}→${b}`);
        return [
          s.kind, fmt(s.count), fmt(s.perSec),
          `${fmt(w.rssMb, 1)} → ${fmt(Math.max(...after.map((x) => x.rssMb)), 1)}`, `${s.rssGrowthPct >= 0 ? '+' : ''}${fmt(s.rssGrowthPct, 1)}%`,
          `${fmt(w.heapMb, 1)} → ${fmt(Math.max(...after.map((x) => x.heapMb)), 1)}`, `${s.heapGrowthPct >= 0 ? '+' : ''}${fmt(s.heapGrowthPct, 1)}%`,
          `${w.timers} → ${end.timers}`, `${w.handles} → ${end.handles}`, fmt(end.pendingReplies),
          grown.length ? grown.join('; ') : `none of ${s.watchedCollections}`,
        ];
      }),
    ));
  }
  if (modes.includes('backlog') && r.backlog) {
    const b = r.backlog.result;
    out.push('', `**${r.driver}: backlog** (${stamps([b])})`, '');
    out.push(...table(
      ['messages', 'publish s', 'drain s', 'drained/s', 'RSS MB before', 'RSS MB loaded', 'RSS MB peak draining', 'RSS MB after', 'heap MB before', 'heap MB loaded', 'heap MB peak draining', 'heap MB after'],
      [[`${fmt(b.messages)}${b.partitions ? ` (${b.partitions} partitions)` : ''}`, fmt(b.publishMs / 1000, 1), fmt(b.drainMs / 1000, 2), fmt(b.drainPerSec), fmt(b.before.rssMb, 1), fmt(b.loaded.rssMb, 1), fmt(b.peakRssMb, 1), fmt(b.after.rssMb, 1), fmt(b.before.heapMb, 1), fmt(b.loaded.heapMb, 1), fmt(b.peakHeapMb, 1), fmt(b.after.heapMb, 1)]],
    ));
  }
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`bench:scale: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
