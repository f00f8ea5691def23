// `npm run bench -- --instructions`: instructions per operation of tidings and of each raw
// baseline, counted by valgrind's callgrind over the measured window only (see callgrind.ts). Each
// side of each scenario runs in its own process (`--one <scenario>:<side>`) with V8 on one thread,
// rounds alternate the order of the sides, and each side reports the median of its rounds. Where a
// side's rate is bounded by its main thread's CPU (a consume scenario on a machine whose broker has
// a core of its own), the inverse ratio of instructions is what its rate ratio tends to, without
// the ±10-40% that wall-clock rounds on this 2-core machine move by.
import { fileURLToPath } from 'node:url';
import { TransportURL } from '../src/index.js';
import { countRounds, singleThreadedTsx } from './callgrind.js';
import { percentile, selectScenarios, sidesOf, textTable, warmupOf, type BenchOptions, type Side } from './harness.js';

const RUN = fileURLToPath(new URL('./run.ts', import.meta.url));

/** One side's counts. */
export interface SideInstructions {
  /** Median instructions per operation over the rounds. */
  perOp: number;
  /** Instructions per operation of every round, in the order run. */
  rounds: number[];
}

export interface InstructionsResult {
  unit: string;
  tidings?: SideInstructions;
  raw?: SideInstructions;
  oslo?: SideInstructions;
  /** raw's instructions per op ÷ tidings': the rate ratio tidings/raw this count predicts for a CPU-bound side. */
  ratio?: number;
  /** The same against the oslo-shaped baseline: tidings' own overhead. */
  osloRatio?: number;
  /** raw's ÷ raw-oslo's: what the wire format alone leaves of raw's rate. */
  osloFormatRatio?: number;
}

export interface InstructionsReport {
  bench: 'tidings-instructions';
  /** Redacted. */
  url: string;
  date: string;
  node: string;
  count: number;
  warmup: number;
  rounds: number;
  scenarios: Record<string, InstructionsResult>;
}

/** The command line of a child measuring one side of one scenario (its URL comes in the environment). */
function childCommand(scenario: string, side: Side, count: number, warmup: number): string[] {
  return singleThreadedTsx(RUN, ['--one', `${scenario}:${side}`, '--count', String(count), '--warmup', String(warmup), '--handshake']);
}

const ratio = (a: SideInstructions | undefined, b: SideInstructions | undefined) => (a && b ? Number((a.perOp / b.perOp).toFixed(3)) : undefined);

/**
 * Counts every side of the selected scenarios `rounds` times, alternating their order round by
 * round, prints a table and then the report as one JSON line.
 */
export async function runInstructions(options: BenchOptions, redactedUrl: string): Promise<InstructionsReport> {
  const rounds = options.rounds ?? 1;
  const warmup = warmupOf(options);
  const report: InstructionsReport = { bench: 'tidings-instructions', url: redactedUrl, date: new Date().toISOString(), node: process.version, count: options.count, warmup, rounds, scenarios: {} };
  for (const scenario of selectScenarios(options.scenarios, options.only, TransportURL.parse(options.url).driver)) {
    const sides = sidesOf(options, scenario).map(([side]): [Side, string[]] => [side, childCommand(scenario.name, side, options.count, warmup)]);
    const counts = await countRounds(sides, rounds, { ...process.env, TIDINGS_TRANSPORT_URL: options.url });
    const result: InstructionsResult = { unit: scenario.unit };
    // The lower median (nearest rank), as bench:cost reports.
    for (const [side, all] of counts) result[side] = { perOp: percentile(all, 50), rounds: all };
    result.ratio = ratio(result.raw, result.tidings);
    result.osloRatio = ratio(result.oslo, result.tidings);
    result.osloFormatRatio = ratio(result.raw, result.oslo);
    report.scenarios[scenario.name] = result;
  }
  for (const line of formatInstructions(report)) options.print(line);
  options.print(JSON.stringify(report));
  return report;
}

/** The human-readable table. */
export function formatInstructions(report: InstructionsReport): string[] {
  const header = ['scenario', 'tidings instr/op', 'raw instr/op', 'raw-oslo instr/op', 'raw/tidings', 'raw-oslo/tidings', 'raw/raw-oslo'];
  const cell = (n: number | undefined, digits = 0) => (n === undefined ? '-' : n.toFixed(digits));
  const rows = Object.entries(report.scenarios).map(([name, r]) => [name, cell(r.tidings?.perOp), cell(r.raw?.perOp), cell(r.oslo?.perOp), cell(r.ratio, 3), cell(r.osloRatio, 3), cell(r.osloFormatRatio, 3)]);
  return [
    `tidings instructions per operation on ${report.url} (callgrind, node ${report.node} --single-threaded, count ${report.count} after ${report.warmup} warm-up, median of ${report.rounds} round${report.rounds === 1 ? '' : 's'})`,
    ...textTable(header, rows),
  ];
}
