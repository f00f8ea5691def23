// The benchmark harness: named scenarios, each with up to two raw-client baselines measured in
// the same run (plain "raw", and "raw-oslo": the raw client doing the oslo wire protocol's work),
// summarised as a table and one machine-readable JSON line (always the last line).
import { randomUUID } from 'node:crypto';
import { TransportURL } from '../src/index.js';
import type { Mark } from './callgrind.js';

/** What a scenario (or its baseline) is given. */
export interface BenchContext {
  /** The transport URL as given, credentials included: for connecting only, never for output. */
  readonly url: string;
  readonly transportUrl: TransportURL;
  /** Operations to attempt (after warm-up). */
  readonly count: number;
  /** Warm-up operations a scenario SHOULD run before measuring (connections, JIT, queues). */
  readonly warmup: number;
  /** True while the scenario may start more operations (the --duration cap has not passed). */
  readonly inTime: () => boolean;
  /** A unique name for topics, queues and pools, so runs never share state. */
  unique(prefix: string): string;
  /**
   * Told as the measured window opens ("warm") and once it closed ("done"), when a parent process
   * counts instructions over the window only (`--instructions`, see callgrind.ts); absent otherwise.
   * `measureWindow` calls it.
   */
  readonly mark?: (mark: Mark) => Promise<void>;
}

/** What a scenario measured. */
export interface Measurement {
  /** Operations completed in the measured window. */
  readonly ops: number;
  /** Length of the measured window in ms. */
  readonly elapsedMs: number;
  /** Per-operation latencies in ms, when the scenario measures them. */
  readonly latenciesMs?: readonly number[];
  /** CPU time (user + system) of the whole process over the measured window, µs (`TimedWindow`). */
  readonly windowCpuUs?: number;
}

/** A scenario's measured window: its wall time and the process's CPU time over it, from construction to `end()`. */
export class TimedWindow {
  private readonly startMs = performance.now();
  private readonly startCpu = process.cpuUsage();

  /** The measurement of `ops` operations done in the window (with their latencies when measured). */
  end(ops: number, latenciesMs?: readonly number[]): Measurement {
    const cpu = process.cpuUsage(this.startCpu);
    const elapsedMs = performance.now() - this.startMs;
    return { ops, elapsedMs, windowCpuUs: cpu.user + cpu.system, ...(latenciesMs ? { latenciesMs } : {}) };
  }
}

/**
 * Runs `body` as a scenario's measured window (`TimedWindow`), telling `ctx.mark` as the window
 * opens and after it closed. `body` resolves with the operations done in it (and their latencies).
 */
export async function measureWindow(ctx: BenchContext, body: () => Promise<{ ops: number; latenciesMs?: readonly number[] }>): Promise<Measurement> {
  await ctx.mark?.('warm');
  const window = new TimedWindow();
  const { ops, latenciesMs } = await body();
  const measured = window.end(ops, latenciesMs);
  await ctx.mark?.('done');
  return measured;
}

export type ScenarioFn = (ctx: BenchContext) => Promise<Measurement>;

/** A named scenario. Its `name` is the key a raw-client baseline registers under. */
export interface Scenario {
  readonly name: string;
  readonly description: string;
  /** What one operation is, for the table: "calls", "casts", "notifications". */
  readonly unit: string;
  readonly run: ScenarioFn;
  /** The drivers (URL schemes) it runs on; absent: every one. */
  readonly drivers?: readonly string[];
}

/** Raw-client equivalents of scenarios for one broker, keyed by scenario name. */
export type BaselineSet = Readonly<Record<string, ScenarioFn>>;

export interface Stats {
  ops: number;
  elapsedMs: number;
  opsPerSec: number;
  /**
   * CPU time (user + system) of this process per operation, in µs, over the measured window when
   * the scenario reports it (`TimedWindow`: every built-in scenario and baseline), else over the
   * whole run (setup and warm-up included). Independent of how fast the broker answers, so it
   * compares tidings' own work with a baseline's on a machine whose broker latency wanders.
   */
  cpuUsPerOp?: number;
  p50Ms?: number;
  p99Ms?: number;
  /** With several rounds: ops/s of every round this side ran, the warm-up first (the median of the rest is reported). */
  roundsOpsPerSec?: number[];
}

/** A scenario's tidings figures (absent in a `baselinesOnly` run) and its baselines'. */
export interface ScenarioResult extends Partial<Stats> {
  unit: string;
  description: string;
  /** The raw-client baseline measured in the same run, when one is registered. */
  baseline?: Stats;
  /** tidings ops/s divided by baseline ops/s. */
  ratio?: number;
  /**
   * With several rounds: the median of tidings/raw taken round by round (the warm-up left out).
   * Both sides of a round run back to back, so a slow spell of the machine or the broker that
   * spans a round slows both and cancels out, where the ratio of the two medians keeps it.
   */
  roundRatio?: number;
  /** tidings CPU per operation divided by the oslo-shaped baseline's (lower is better). */
  osloCpuRatio?: number;
  /** The oslo-shaped raw baseline (the raw client doing the protocol work tidings must do), when registered. */
  osloBaseline?: Stats;
  /** tidings ops/s divided by osloBaseline ops/s: tidings' own overhead. */
  osloRatio?: number;
  /** With several rounds: the median of tidings/raw-oslo taken round by round, as `roundRatio`. */
  osloRoundRatio?: number;
}

export interface BenchReport {
  bench: 'tidings';
  /** Redacted. */
  url: string;
  date: string;
  node: string;
  count: number;
  durationMs: number | null;
  /** True when only the raw-client baselines ran (no tidings figures, no ratios). */
  baselinesOnly: boolean;
  /** Rounds per scenario (see BenchOptions.rounds); the first of several is a warm-up. */
  rounds: number;
  scenarios: Record<string, ScenarioResult>;
}

export interface BenchOptions {
  url: string;
  count: number;
  /** Per-scenario cap in ms; null = no cap. */
  durationMs: number | null;
  /** Scenario names to run, in this order; empty = all. */
  only: readonly string[];
  scenarios: readonly Scenario[];
  baselines: BaselineSet;
  /** oslo-shaped raw baselines, keyed by scenario name; run after `baselines`. @default {} */
  osloBaselines?: BaselineSet;
  /**
   * Runs only the baselines of the selected scenarios (those without one are left out), e.g. to
   * measure a broker's raw client before tidings has a driver for it. @default false
   */
  baselinesOnly?: boolean;
  /**
   * Rounds per scenario: each round measures tidings and its baselines back to back, in
   * alternating order (tidings first in odd rounds, last in even ones). With more than one, the
   * first round only warms up (the JIT, connections, the broker) and each side reports the run
   * with the median ops/s of the others. @default 1
   */
  rounds?: number;
  /** Warm-up operations per scenario. @default min(200, count / 10) */
  warmup?: number;
  /** Where the table and the JSON line go. */
  print(line: string): void;
}

/** Nearest-rank percentile of unsorted samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

const round = (n: number, digits: number) => Number(n.toFixed(digits));

export function toStats(m: Measurement, cpuUs?: number): Stats {
  const stats: Stats = { ops: m.ops, elapsedMs: round(m.elapsedMs, 1), opsPerSec: m.elapsedMs > 0 ? Math.round((m.ops * 1000) / m.elapsedMs) : 0 };
  const windowCpuUs = m.windowCpuUs ?? cpuUs;
  if (windowCpuUs !== undefined && m.ops > 0) stats.cpuUsPerOp = round(windowCpuUs / m.ops, 1);
  if (m.latenciesMs?.length) {
    stats.p50Ms = round(percentile(m.latenciesMs, 50), 3);
    stats.p99Ms = round(percentile(m.latenciesMs, 99), 3);
  }
  return stats;
}

/** The warm-up operations per scenario of a run: `options.warmup`, else min(200, count / 10). */
export function warmupOf(options: Pick<BenchOptions, 'count' | 'warmup'>): number {
  return options.warmup ?? Math.min(200, Math.ceil(options.count / 10));
}

/** A fresh context for one run of a scenario or baseline. */
export function contextFor(options: Pick<BenchOptions, 'url' | 'count' | 'warmup' | 'durationMs'>, transportUrl: TransportURL): BenchContext {
  const started = performance.now();
  return {
    url: options.url,
    transportUrl,
    count: options.count,
    warmup: warmupOf(options),
    inTime: () => options.durationMs === null || performance.now() - started < options.durationMs,
    unique: (prefix) => `${prefix}-${randomUUID()}`,
  };
}

/**
 * Selects scenarios by name for a URL's driver; an unknown name is an error naming the known ones.
 * Without names, every scenario that runs on `driver` (see `Scenario.drivers`); a named one that
 * does not is an error saying where it runs.
 */
export function selectScenarios(all: readonly Scenario[], only: readonly string[], driver: string): Scenario[] {
  const runsHere = (s: Scenario) => s.drivers === undefined || s.drivers.includes(driver);
  if (only.length === 0) return all.filter(runsHere);
  return only.map((name) => {
    const found = all.find((s) => s.name === name);
    if (!found) throw new Error(`unknown scenario ${JSON.stringify(name)}; known: ${all.map((s) => s.name).join(', ')}`);
    if (!runsHere(found)) throw new Error(`scenario ${name} runs on ${found.drivers!.map((d) => `${d}://`).join(', ')} only, not on ${driver}://`);
    return found;
  });
}

/** Runs the scenarios (each followed by its baselines), prints the table, then the JSON line. */
export async function runBench(options: BenchOptions): Promise<BenchReport> {
  const transportUrl = TransportURL.parse(options.url);
  const baselinesOnly = options.baselinesOnly ?? false;
  let selected = selectScenarios(options.scenarios, options.only, transportUrl.driver);
  if (baselinesOnly) {
    selected = selected.filter((s) => options.baselines[s.name] || options.osloBaselines?.[s.name]);
    if (selected.length === 0) throw new Error(`no raw-client baseline for the selected scenarios on ${transportUrl.driver}:// (see bench/baselines.ts)`);
  }
  const report: BenchReport = {
    bench: 'tidings',
    url: transportUrl.toString(),
    date: new Date().toISOString(),
    node: process.version,
    count: options.count,
    durationMs: options.durationMs,
    baselinesOnly,
    rounds: options.rounds ?? 1,
    scenarios: {},
  };
  for (const scenario of selected) {
    const stats = await measureRounds(sidesOf(options, scenario), report.rounds, () => contextFor(options, transportUrl));
    const result: ScenarioResult = { ...stats.tidings, unit: scenario.unit, description: scenario.description };
    if (stats.raw) {
      result.baseline = stats.raw;
      if (result.opsPerSec !== undefined && result.baseline.opsPerSec > 0) result.ratio = round(result.opsPerSec / result.baseline.opsPerSec, 2);
      const paired = roundByRound(result.roundsOpsPerSec, result.baseline.roundsOpsPerSec);
      if (paired !== undefined) result.roundRatio = round(paired, 2);
    }
    if (stats.oslo) {
      result.osloBaseline = stats.oslo;
      if (result.opsPerSec !== undefined && result.osloBaseline.opsPerSec > 0) result.osloRatio = round(result.opsPerSec / result.osloBaseline.opsPerSec, 2);
      const paired = roundByRound(result.roundsOpsPerSec, result.osloBaseline.roundsOpsPerSec);
      if (paired !== undefined) result.osloRoundRatio = round(paired, 2);
      if (result.cpuUsPerOp !== undefined && result.osloBaseline.cpuUsPerOp) result.osloCpuRatio = round(result.cpuUsPerOp / result.osloBaseline.cpuUsPerOp, 2);
    }
    report.scenarios[scenario.name] = result;
  }
  for (const line of formatTable(report)) options.print(line);
  options.print(JSON.stringify(report));
  return report;
}

/** The median of `a[i] / b[i]` over the rounds after the warm-up; undefined without two rounds of both. */
export function roundByRound(a: readonly number[] | undefined, b: readonly number[] | undefined): number | undefined {
  if (!a || !b || a.length !== b.length || a.length < 2) return undefined;
  const ratios = a.slice(1).flatMap((x, i) => (b[i + 1] > 0 ? [x / b[i + 1]] : []));
  return ratios.length > 0 ? percentile(ratios, 50) : undefined;
}

/** tidings, its raw-client baseline, or its oslo-shaped raw baseline. */
export type Side = 'tidings' | 'raw' | 'oslo';
export const SIDES: readonly Side[] = ['tidings', 'raw', 'oslo'];

/** The sides a scenario has in a run: tidings (unless `baselinesOnly`) and its registered baselines. */
export function sidesOf(options: BenchOptions, scenario: Scenario): Array<[Side, ScenarioFn]> {
  const sides: Array<[Side, ScenarioFn]> = [];
  const baseline = options.baselines[scenario.name];
  const osloBaseline = options.osloBaselines?.[scenario.name];
  if (!options.baselinesOnly) sides.push(['tidings', scenario.run]);
  if (baseline) sides.push(['raw', baseline]);
  if (osloBaseline) sides.push(['oslo', osloBaseline]);
  return sides;
}

/**
 * Runs one side of one scenario once and returns its stats: a child process of
 * `--instructions`, whose `mark` is the callgrind handshake.
 */
export async function runSide(options: BenchOptions, name: string, side: Side, mark: (m: Mark) => Promise<void>): Promise<Stats> {
  const transportUrl = TransportURL.parse(options.url);
  const [scenario] = selectScenarios(options.scenarios, [name], transportUrl.driver);
  const fn = sidesOf(options, scenario).find(([s]) => s === side)?.[1];
  if (!fn) throw new Error(`scenario ${name} has no ${side} side on ${transportUrl.driver}://`);
  return measured(fn, { ...contextFor(options, transportUrl), mark });
}

/**
 * Measures each side `rounds` times, alternating the order round by round; with several rounds
 * the first is dropped (warm-up) and each side keeps its run with the median ops/s.
 */
async function measureRounds(sides: ReadonlyArray<[Side, ScenarioFn]>, rounds: number, ctx: () => BenchContext): Promise<Partial<Record<Side, Stats>>> {
  const runs = await runRounds(sides, rounds, ctx);
  const out: Partial<Record<Side, Stats>> = {};
  for (const [side, all] of runs) {
    const kept = (all.length > 1 ? all.slice(1) : all).sort((a, b) => a.opsPerSec - b.opsPerSec);
    out[side] = all.length > 1 ? { ...kept[Math.floor((kept.length - 1) / 2)], roundsOpsPerSec: all.map((s) => s.opsPerSec) } : kept[0];
  }
  return out;
}

/**
 * Runs each side `rounds` times, in the listed order in odd rounds and reversed in even ones, so a
 * slow spell of the machine falls on every side in turn; `onRun` hears of each run as it ends.
 * Returns every run of each side, the first round included.
 */
export async function runRounds<K extends string>(sides: ReadonlyArray<readonly [K, ScenarioFn]>, rounds: number, ctx: () => BenchContext, onRun?: (side: K, round: number, stats: Stats) => void): Promise<Map<K, Stats[]>> {
  const runs = new Map<K, Stats[]>(sides.map(([side]) => [side, []]));
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? sides : [...sides].reverse();
    for (const [side, fn] of order) {
      const stats = await measured(fn, ctx());
      runs.get(side)!.push(stats);
      onRun?.(side, r, stats);
    }
  }
  return runs;
}

/** Runs one scenario or baseline and its stats, with the process CPU time it took. */
export async function measured(fn: ScenarioFn, ctx: BenchContext): Promise<Stats> {
  const cpu = process.cpuUsage();
  const m = await fn(ctx);
  const used = process.cpuUsage(cpu);
  return toStats(m, used.user + used.system);
}

/** The human-readable table. */
export function formatTable(report: BenchReport): string[] {
  const header = ['scenario', 'ops', 'ops/s', 'p50 ms', 'p99 ms', 'raw ops/s', 'tidings/raw', 'per round', 'raw-oslo ops/s', 'tidings/raw-oslo', 'per round', 'cpu us/op', 'cpu vs raw-oslo'];
  const rows = Object.entries(report.scenarios).map(([name, r]) => [
    name,
    r.ops !== undefined ? String(r.ops) : '-',
    r.opsPerSec !== undefined ? `${r.opsPerSec} ${r.unit}/s` : '-',
    r.p50Ms?.toFixed(3) ?? '-',
    r.p99Ms?.toFixed(3) ?? '-',
    r.baseline ? String(r.baseline.opsPerSec) : '-',
    r.ratio !== undefined ? r.ratio.toFixed(2) : '-',
    r.roundRatio !== undefined ? r.roundRatio.toFixed(2) : '-',
    r.osloBaseline ? String(r.osloBaseline.opsPerSec) : '-',
    r.osloRatio !== undefined ? r.osloRatio.toFixed(2) : '-',
    r.osloRoundRatio !== undefined ? r.osloRoundRatio.toFixed(2) : '-',
    r.cpuUsPerOp !== undefined ? r.cpuUsPerOp.toFixed(1) : '-',
    r.osloCpuRatio !== undefined ? r.osloCpuRatio.toFixed(2) : '-',
  ]);
  return [
    `tidings bench on ${report.url} (node ${report.node}, count ${report.count}${report.durationMs !== null ? `, duration cap ${report.durationMs} ms` : ''}${report.baselinesOnly ? ', raw-client baselines only' : ''}${report.rounds > 1 ? `, ${report.rounds} rounds, the first a warm-up` : ''})`,
    ...textTable(header, rows),
  ];
}

/** Columns of text under a header and a rule of dashes: the first column left-aligned, the others right-aligned. */
export function textTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
}
