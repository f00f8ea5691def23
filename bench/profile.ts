// `npm run bench -- --profile`: where each side's CPU goes in a scenario's measured windows. V8's
// sampling profiler runs inside each window only (rounds alternate the sides' order, as timed
// runs do; the first round warms up and is not profiled), and the self time of every sample is
// summed per operation by who owns the code: tidings (`src/`), a client library (its npm
// package), the baseline's own code (`bench/`), Node's internals, the garbage collector, idle.
// Sampling costs CPU of its own and charges inlined functions to their callers, so the figures
// are for comparing sides in one run, not absolute: the timed bench gives the rates.
import { Session } from 'node:inspector/promises';
import type { Mark } from './callgrind.js';
import { runSide, selectScenarios, sidesOf, textTable, type BenchOptions, type Side } from './harness.js';
import { TransportURL } from '../src/index.js';

/** Sampling interval, µs: fine enough for functions of a microsecond over windows of 100 ms and more. */
const SAMPLING_INTERVAL_US = 100;

/** The part of a V8 CPU profile read here. Times are µs of the monotonic clock `process.hrtime` reads. */
interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The monotonic clock V8's profiles are timed with, µs. */
const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** Self time, µs, by owner and by function, summed over a side's profiled windows. */
export class SelfTimes {
  readonly byOwner = new Map<string, number>();
  readonly byFunction = new Map<string, number>();
  /** tidings' own self time by source file (`driver/dedup.ts`...). */
  readonly byTidingsFile = new Map<string, number>();
  /** Operations in the profiled windows. */
  ops = 0;
  /** CPU time of the profiled windows, µs (every thread of the process). */
  cpuUs = 0;

  /**
   * Adds the samples of `profile` taken from `fromUs` to `toUs`: the window, without the
   * profiler's own start (tens of ms inside `Profiler.start`, charged to its `dispatch`).
   */
  add(profile: CpuProfile, fromUs: number, toUs: number, ops: number, cpuUs: number): void {
    this.ops += ops;
    this.cpuUs += cpuUs;
    const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
    let at = profile.startTime;
    for (let i = 0; i < profile.samples.length; i++) {
      const us = profile.timeDeltas[i] ?? 0;
      at += us;
      const frame = frames.get(profile.samples[i]);
      if (!frame || us <= 0 || at < fromUs || at > toUs) continue;
      const owner = ownerOf(frame.url, frame.functionName);
      this.byOwner.set(owner, (this.byOwner.get(owner) ?? 0) + us);
      const name = `${frame.functionName || '(anonymous)'} ${shortUrl(frame.url)}`;
      this.byFunction.set(`${owner}\0${name}`, (this.byFunction.get(`${owner}\0${name}`) ?? 0) + us);
      if (owner === 'tidings') {
        const file = shortUrl(frame.url);
        this.byTidingsFile.set(file, (this.byTidingsFile.get(file) ?? 0) + us);
      }
    }
  }

  /** `us` of the profiled windows, per operation. */
  spread(us: number): number {
    return this.ops > 0 ? us / this.ops : 0;
  }

  /** µs per operation of `owner` (0 when it never showed). */
  perOp(owner: string): number {
    return this.spread(this.byOwner.get(owner) ?? 0);
  }
}

/**
 * Who owns a sampled function: `idle`, `gc`, `tidings` (src/), `bench`, the npm package of a
 * client library, `node` (Node's own JavaScript) or `native` (V8 and Node's C++, e.g. a socket
 * write or the program itself).
 */
export function ownerOf(url: string, functionName: string): string {
  if (url === '') return functionName === '(idle)' ? 'idle' : functionName === '(garbage collector)' ? 'gc' : 'native';
  if (url.startsWith('node:')) return 'node';
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1];
  if (url.includes('/src/')) return 'tidings';
  if (url.includes('/bench/')) return 'bench';
  return 'other';
}

/** The last two parts of a script's path, enough to tell files apart. */
function shortUrl(url: string): string {
  return url.split('/').slice(-2).join('/');
}

/**
 * Profiles scenario `name` (each side of it in `sides`, default all) over `options.rounds`
 * rounds and prints, per operation, each owner's self time beside each side's CPU, then the
 * `top` functions of each side by self time.
 */
export async function runProfile(options: BenchOptions, name: string, only: readonly Side[], top: number): Promise<Map<Side, SelfTimes>> {
  const [scenario] = selectScenarios(options.scenarios, [name], TransportURL.parse(options.url).driver);
  if (!scenario) throw new Error(`--profile: no scenario ${JSON.stringify(name)} on this driver`);
  const sides = sidesOf(options, scenario)
    .map(([side]) => side)
    .filter((side) => only.length === 0 || only.includes(side));
  if (sides.length === 0) throw new Error(`--profile: scenario ${name} has none of the sides ${only.join(', ')} here`);
  const rounds = Math.max(2, options.rounds ?? 2);
  const session = new Session();
  session.connect();
  const times = new Map<Side, SelfTimes>(sides.map((side) => [side, new SelfTimes()]));
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: SAMPLING_INTERVAL_US });
    for (let round = 0; round < rounds; round++) {
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        let profile: CpuProfile | undefined;
        let from = 0;
        let to = 0;
        const mark = async (m: Mark) => {
          if (round === 0) return;
          if (m === 'warm') {
            await session.post('Profiler.start');
            from = nowUs();
          } else {
            to = nowUs();
            profile = (await session.post('Profiler.stop')).profile as CpuProfile;
          }
        };
        const stats = await runSide(options, name, side, mark);
        if (profile) times.get(side)!.add(profile, from, to, stats.ops, (stats.cpuUsPerOp ?? 0) * stats.ops);
        options.print(`round ${round + 1}/${rounds} ${side}: ${stats.opsPerSec} ${scenario.unit}/s, ${stats.cpuUsPerOp ?? '-'} µs CPU each${round === 0 ? ' (warm-up, not profiled)' : ''}`);
      }
    }
  } finally {
    await session.post('Profiler.disable').catch(() => undefined);
    session.disconnect();
  }
  for (const line of formatProfile(name, times, top)) options.print(line);
  return times;
}

/** The owners table, then per side tidings' time by source file and the top functions. */
export function formatProfile(name: string, times: ReadonlyMap<Side, SelfTimes>, top: number): string[] {
  const sides = [...times.keys()];
  const of = (side: Side) => times.get(side)!;
  const owners = new Set<string>();
  for (const t of times.values()) for (const owner of t.byOwner.keys()) owners.add(owner);
  const weight = (owner: string) => Math.max(...sides.map((s) => of(s).perOp(owner)));
  const rows = [
    ['CPU (process.cpuUsage, every thread)', ...sides.map((s) => fixed(of(s).spread(of(s).cpuUs)))],
    ['sampled, main thread (all below)', ...sides.map((s) => fixed(of(s).spread([...of(s).byOwner.values()].reduce((a, b) => a + b, 0))))],
    ...[...owners].sort((a, b) => weight(b) - weight(a)).map((owner) => [`  ${owner}`, ...sides.map((s) => fixed(of(s).perOp(owner)))]),
  ];
  const lines = [`${name}: self time per operation over the profiled windows (${sides.map((s) => `${s} ${of(s).ops} ops`).join(', ')})`, ...textTable(['µs per operation', ...sides], rows)];
  for (const side of sides) {
    const t = of(side);
    if (t.byTidingsFile.size > 0) {
      lines.push('', `${side}: tidings' self time by source file, µs per operation`);
      const files = [...t.byTidingsFile].sort((a, b) => b[1] - a[1]);
      lines.push(...textTable(['source file', 'µs/op'], files.map(([file, us]) => [file, fixed(t.spread(us))])));
    }
    lines.push('', `${side}: top ${top} functions by self time, µs per operation`);
    const fns = [...t.byFunction].sort((a, b) => b[1] - a[1]).slice(0, top);
    lines.push(...textTable(['function', 'owner', 'µs/op'], fns.map(([key, us]) => {
      const [owner, fn] = key.split('\0');
      return [fn, owner, fixed(t.spread(us))];
    })));
  }
  return lines;
}

function fixed(n: number): string {
  return n.toFixed(3);
}
