// What the contract-cost ladders share (kafka-contract-cost.ts, amqp-contract-cost.ts): raw-oslo
// with tidings' contract added one rung at a time, then tidings, in interleaved rounds, reported
// as round ratios (the first round dropped) against raw-oslo and against the rung above.
import { countRounds, sayMark, singleThreadedTsx } from './callgrind.js';
import { measured, percentile, runRounds, textTable, type BenchContext, type ScenarioFn, type Stats } from './harness.js';

/**
 * `--count`, `--rounds` and `--warmup` of a ladder's command line. Timed rounds need at least 2 (the
 * first is a warm-up); with `--instructions` each run has its warm-up inside, and 1 will do.
 */
export function ladderCounts(values: { readonly count?: string; readonly rounds?: string; readonly warmup?: string; readonly instructions?: boolean }): { count: number; rounds: number; warmup?: number } {
  const count = Number(values.count);
  const rounds = Number(values.rounds);
  const least = values.instructions === true ? 1 : 2;
  if (!Number.isInteger(count) || count < 1 || !Number.isInteger(rounds) || rounds < least) throw new Error(`--count must be a positive integer and --rounds at least ${least}${least === 2 ? ' (the first is a warm-up)' : ''}`);
  return values.warmup === undefined ? { count, rounds } : { count, rounds, warmup: Number(values.warmup) };
}

/** One rung and its runs, round by round. */
export interface LadderRow {
  readonly name: string;
  readonly runs: readonly Stats[];
}

/** Runs the rungs (`sides`, raw-oslo first) in alternating order, `rounds` times, saying each run in `unit`. */
export async function runLadder(sides: ReadonlyArray<readonly [string, ScenarioFn]>, rounds: number, unit: string, ctx: () => BenchContext): Promise<LadderRow[]> {
  const runs = await runRounds(sides, rounds, ctx, (name, r, stats) =>
    console.log(`round ${r + 1}/${rounds} ${name}: ${stats.opsPerSec} ${unit}/s, ${stats.cpuUsPerOp} µs CPU each${r === 0 ? ' (warm-up)' : ''}`),
  );
  return sides.map(([name]) => ({ name, runs: runs.get(name)! }));
}

/** The ladder's table (rate and CPU, each against raw-oslo and the rung above, by rounds), then one JSON line with every run. */
export function printLadder(bench: string, unit: string, rows: readonly LadderRow[], fields: Readonly<Record<string, unknown>>): void {
  const kept = (row: LadderRow) => row.runs.slice(1);
  const ratios = (a: LadderRow, b: LadderRow) => kept(a).map((s, i) => s.opsPerSec / kept(b)[i].opsPerSec);
  const cpuRatios = (a: LadderRow, b: LadderRow) => kept(a).map((s, i) => (s.cpuUsPerOp ?? NaN) / (kept(b)[i].cpuUsPerOp ?? NaN));
  const range = (xs: number[]) => `${percentile(xs, 50).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
  const table = rows.map((row, i) => [
    row.name,
    String(percentile(kept(row).map((s) => s.opsPerSec), 50)),
    range(ratios(row, rows[0])),
    i === 0 ? '-' : range(ratios(row, rows[i - 1])),
    percentile(kept(row).map((s) => s.cpuUsPerOp ?? NaN), 50).toFixed(1),
    range(cpuRatios(row, rows[0])),
    i === 0 ? '-' : range(cpuRatios(row, rows[i - 1])),
  ]);
  const header = ['rung', `${unit}/s (median)`, '/ raw-oslo by rounds', '/ rung above by rounds', 'CPU µs each (median)', 'CPU / raw-oslo by rounds', 'CPU / rung above'];
  for (const line of textTable(header, table)) console.log(line);
  console.log(JSON.stringify({ bench, ...fields, date: new Date().toISOString(), node: process.version, sides: rows.map((r) => ({ name: r.name, opsPerSec: r.runs.map((s) => s.opsPerSec), cpuUsPerOp: r.runs.map((s) => s.cpuUsPerOp) })) }));
}

/**
 * `--instructions`: each rung (`names`, raw-oslo first) counted in a child process of its own
 * (`<script> --one <rung> --handshake`, then `args`: count, warm-up, URL, scenario) under
 * callgrind, over its measured window only (callgrind.ts), `rounds` times in alternating order;
 * prints instructions per operation of each, against raw-oslo and the rung above (medians of the
 * rounds), then one JSON line.
 */
export async function countLadder(bench: string, script: string, names: readonly string[], rounds: number, args: readonly string[], fields: Readonly<Record<string, unknown>>): Promise<void> {
  const children = names.map((_, i): [number, string[]] => [i, singleThreadedTsx(script, ['--one', String(i), '--handshake', ...args])]);
  const counts = await countRounds(children, rounds, process.env, (i, r, perOp) => console.log(`round ${r + 1}/${rounds} ${names[i]}: ${perOp} instructions per operation`));
  const perOp = names.map((_, i) => percentile(counts.get(i)!, 50));
  const table = names.map((name, i) => [name, String(perOp[i]), (perOp[i] / perOp[0]).toFixed(3), i === 0 ? '-' : (perOp[i] / perOp[i - 1]).toFixed(3), i === 0 ? '-' : String(perOp[i] - perOp[i - 1])]);
  for (const line of textTable(['rung', 'instructions per operation (median)', '/ raw-oslo', '/ rung above', 'added'], table)) console.log(line);
  console.log(JSON.stringify({ bench: `${bench}-instructions`, ...fields, rounds, date: new Date().toISOString(), node: process.version, sides: names.map((name, i) => ({ name, perOp: perOp[i], rounds: counts.get(i) })) }));
}

/** A ladder's child (`--one <rung>`): measures that rung once, saying the callgrind handshake with `--handshake`, and prints its stats as JSON. */
export async function runRung(fn: ScenarioFn, ctx: BenchContext, handshake: boolean): Promise<void> {
  console.log(JSON.stringify(await measured(fn, handshake ? { ...ctx, mark: sayMark } : ctx)));
}
