// What every Node peer runner shares: its flags, the measurement (tidings' own, bench/measure.ts,
// so every side warms up, keeps calls in flight and times its window the same way) and its
// output, one JSON object on the last line in the shape of tidings' `--one` (bench/harness.ts
// `Stats`). Runners are started by bench/run-peers.ts under tsx, which lets them import the
// bench's TypeScript.
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { measureConcurrentCalls, measureDelivered, measureSequentialCalls, PAYLOAD_TEXT } from '../measure.ts';
import { toStats } from '../harness.ts';

export { PAYLOAD_TEXT };

/** The scenarios a peer runner may be asked for: RPC only (notifications are oslo's, not theirs). */
export const RPC_SCENARIOS = ['call-sequential', 'call-concurrent', 'cast'];

/** A peer runner's flags: `--scenario`, `--count`, `--warmup` (default min(200, count / 10), as tidings). */
export function runnerArgs(argv = process.argv.slice(2)) {
  const { values } = parseArgs({ args: argv, options: { scenario: { type: 'string' }, count: { type: 'string' }, warmup: { type: 'string' } }, strict: true });
  if (!RPC_SCENARIOS.includes(values.scenario)) throw new Error(`--scenario must be one of ${RPC_SCENARIOS.join(', ')}; received ${JSON.stringify(values.scenario)}`);
  const count = Number(values.count ?? 10_000);
  const warmup = values.warmup === undefined ? Math.min(200, Math.ceil(count / 10)) : Number(values.warmup);
  if (!Number.isSafeInteger(count) || count <= 0) throw new Error(`--count must be a positive integer, received ${JSON.stringify(values.count)}`);
  if (!Number.isSafeInteger(warmup) || warmup < 0) throw new Error(`--warmup must be a non-negative integer, received ${JSON.stringify(values.warmup)}`);
  return { scenario: values.scenario, count, warmup };
}

/** A unique name per run, so runs never share queues or channels. */
export const unique = (prefix) => `${prefix}-${randomUUID()}`;

/**
 * Measures `scenario` with a peer's `call(i)`, `cast(i)` and `handled()` (casts its server
 * handled), exactly as bench/scenarios.ts measures tidings', and resolves with its stats.
 */
export async function measureRpc({ scenario, count, warmup }, { call, cast, handled }) {
  const ctx = { count, warmup, inTime: () => true, unique };
  const m =
    scenario === 'call-sequential' ? await measureSequentialCalls(ctx, call)
    : scenario === 'call-concurrent' ? await measureConcurrentCalls(ctx, call)
    : await measureDelivered(ctx, cast, handled, 'casts handled');
  return toStats(m);
}

/**
 * Runs a peer: `main(args)` sets up, measures and tears down, resolving with its stats; prints
 * them as the last line and exits (a framework's leftover timers must not keep the process).
 * A failure is printed and exits 1.
 */
export function runPeer(main) {
  main(runnerArgs()).then(
    (stats) => {
      console.log(JSON.stringify(stats));
      process.exit(0);
    },
    (err) => {
      console.error(`peer: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      process.exit(1);
    },
  );
}

/** Resolves with `promise`, or rejects after `ms` naming `what` (teardown must not hang a run). */
export function within(ms, what, promise) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}

/** The broker addresses, from the environment, as bench/run-peers.ts passes them. */
export const RABBIT_URL = process.env.PEERS_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672/';
export const REDIS_URL = process.env.PEERS_REDIS_URL ?? 'redis://127.0.0.1:6379/';
