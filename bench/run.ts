// `npm run bench`: parses the flags, runs the selected scenarios against one transport URL and
// prints a table, then one JSON object as the last line (see bench/README.md).
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { DriverLoadFailure, TransportURL } from '../src/index.js';
import { loadBaselines } from './baselines.js';
import { sayMark } from './callgrind.js';
import { SIDES, runBench, runSide, type BenchOptions, type BenchReport, type Side } from './harness.js';
import { runInstructions } from './instructions.js';
import { runProfile } from './profile.js';
import { SCENARIOS } from './scenarios.js';
import { MOCK_RPC_MAX_WAIT_MS, SHORT_GROUP_QUERY, startKafkaMock } from '../test/support/kafka-broker.js';

/** Operations per scenario when --count is not given. */
export const DEFAULT_COUNT = 10_000;

const HELP = `Usage: npm run bench -- [--url <url> | --kafka-mock] [--scenarios a,b] [--count N] [--warmup N] [--rounds N] [--duration ms]
                            [--baselines-only] [--instructions] [--profile <scenario> [--sides a,b] [--top N]]

  --url <url>          transport URL (default: $TIDINGS_TRANSPORT_URL, else memory://)
  --kafka-mock         start librdkafka's mock cluster (3 brokers, as the tests do; needs
                       librdkafka-dev and gcc) and run on kafka:// against it, with the tests'
                       short group timings and rpc_max_wait_ms=20; each new topic's leaders
                       spread over the brokers as Kafka spreads them; stopped at the end
  --kafka-client <c>   with --kafka-mock: tidings' Kafka client, kafkajs (default) or platformatic
  --scenarios <a,b>    scenarios to run, in order (default: all)
                       ${SCENARIOS.map((s) => s.name).join(', ')}
  --count <N>          operations per scenario after warm-up (default ${DEFAULT_COUNT})
  --warmup <N>         warm-up operations per scenario (default min(200, count / 10))
  --rounds <N>         measure tidings and its baselines N times each, in alternating order;
                       the first round is a warm-up, the median of the rest is reported
                       (default 1: one run each, tidings first)
  --duration <ms>      stop starting new operations in a scenario after ms (default: no cap)
  --baselines-only     run only the raw-client baselines of the URL's broker (no tidings
                       scenarios, no ratios), e.g. before tidings has a driver for it
  --instructions       count instructions per operation instead of timing: each side of each
                       scenario in its own process under valgrind's callgrind, V8 on one
                       thread, over the measured window only; rounds alternate the sides and
                       each reports its median (slow: use counts of a few thousand)
  --profile <scenario> instead of timing: V8's sampling profiler over the measured windows of
                       one scenario (rounds alternate the sides; the first is not profiled),
                       self time per operation by owner (tidings, the client library, the
                       baseline's code, Node, GC, idle) and each side's top functions
  --sides <a,b>        with --profile: the sides to profile, of tidings, raw, oslo (default all)
  --top <N>            with --profile: functions listed per side (default 25)

Prints a table, then one JSON object on the last line (--profile prints its tables only).`;

function positiveInt(flag: string, text: string | undefined, fallback: number | null): number | null {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${flag} must be a positive integer, received ${JSON.stringify(text)}`);
  return n;
}

/** Runs the bench with command-line style arguments. */
export async function main(argv: readonly string[], print: (line: string) => void = console.log): Promise<BenchReport | undefined> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      url: { type: 'string' },
      scenarios: { type: 'string' },
      count: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      rounds: { type: 'string' },
      'baselines-only': { type: 'boolean' },
      instructions: { type: 'boolean' },
      one: { type: 'string' },
      handshake: { type: 'boolean' },
      profile: { type: 'string' },
      sides: { type: 'string' },
      top: { type: 'string' },
      'kafka-mock': { type: 'boolean' },
      'kafka-client': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    print(HELP);
    return undefined;
  }
  if (values['kafka-mock'] && values.url) throw new Error('--kafka-mock starts its own broker: give it or --url, not both');
  if (values['kafka-client'] !== undefined && !values['kafka-mock']) throw new Error('--kafka-client goes with --kafka-mock (with --url, put ?client= in the URL)');
  const mock = values['kafka-mock'] ? await startKafkaMock({ spreadLeaders: true }) : undefined;
  try {
    const client = values['kafka-client'] ? `&client=${encodeURIComponent(values['kafka-client'])}` : '';
    const url = mock ? `${mock.url}/?${SHORT_GROUP_QUERY}&rpc_max_wait_ms=${MOCK_RPC_MAX_WAIT_MS}${client}` : (values.url ?? process.env.TIDINGS_TRANSPORT_URL ?? 'memory://');
    return await runWith(url, values, print);
  } finally {
    await mock?.stop();
  }
}

interface RunFlags {
  count?: string;
  warmup?: string;
  duration?: string;
  rounds?: string;
  scenarios?: string;
  'baselines-only'?: boolean;
  instructions?: boolean;
  one?: string;
  handshake?: boolean;
  profile?: string;
  sides?: string;
  top?: string;
}

/** Runs the bench (or, with --instructions or --one, counts instructions: their report is printed only). */
async function runWith(url: string, values: RunFlags, print: (line: string) => void): Promise<BenchReport | undefined> {
  const transportUrl = TransportURL.parse(url);
  const { raw, oslo } = await loadBaselines(transportUrl.driver);
  const count = positiveInt('--count', values.count, DEFAULT_COUNT) ?? DEFAULT_COUNT;
  const warmup = values.warmup === '0' ? 0 : positiveInt('--warmup', values.warmup, null);
  const options: BenchOptions = {
    url,
    count,
    ...(warmup !== null ? { warmup } : {}),
    durationMs: positiveInt('--duration', values.duration, null),
    only: values.scenarios ? values.scenarios.split(',').map((s) => s.trim()).filter(Boolean) : [],
    scenarios: SCENARIOS,
    baselines: raw,
    osloBaselines: oslo,
    baselinesOnly: values['baselines-only'] ?? false,
    rounds: positiveInt('--rounds', values.rounds, 1) ?? 1,
    print,
  };
  if (values.one) {
    // A child of --instructions: one side of one scenario, its stats as the last line.
    const [name, side] = values.one.split(':');
    if (!SIDES.includes(side as Side)) throw new Error(`--one takes <scenario>:<side>, the side one of ${SIDES.join(', ')}; received ${JSON.stringify(values.one)}`);
    print(JSON.stringify(await runSide(options, name, side as Side, values.handshake ? sayMark : async () => {})));
    return undefined;
  }
  if (values.instructions) {
    await runInstructions(options, transportUrl.toString());
    return undefined;
  }
  if (values.profile !== undefined) {
    const sides = (values.sides ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    const wrong = sides.find((s) => !SIDES.includes(s as Side));
    if (wrong !== undefined) throw new Error(`--sides takes sides of ${SIDES.join(', ')}; received ${JSON.stringify(wrong)}`);
    await runProfile(options, values.profile, sides as Side[], positiveInt('--top', values.top, 25) ?? 25);
    return undefined;
  }
  return runBench(options);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`bench: ${err instanceof Error ? err.message : String(err)}`);
      // A URL whose driver tidings does not ship yet can still measure its raw client.
      if (err instanceof DriverLoadFailure) console.error('bench: add --baselines-only to measure only the raw-client baselines');
      process.exit(1);
    },
  );
}
