// How close tidings' Kafka consumers can come to raw-oslo at all (issue 30 asks for 0.95):
// raw-oslo's backlog consumer (raw-kafka-oslo.ts: kafkajs, oslo's Kafka format, both JSON layers
// decoded, offsets resolved per record and committed on tidings' interval) with tidings' per
// notification contract added to its handler one piece at a time, then tidings itself, in
// interleaved rounds on one mock cluster. Each rung does what the one before did and:
//
// 1. raw-oslo: decodes both layers (the bench's raw-oslo column).
// 2. + wire checks: decodes and checks the body as tidings does (`decodeBody`, `parseNotification`:
//    an object, the envelope's version, `event_type`/`priority` strings, a `payload`, string
//    ids, the nested `_context` moved out with no key that reaches a prototype).
// 3. + duplicate window: `message_id` through tidings' window of 4,096 ids (`begin` before the
//    handler, `add` once it returned), so a copy read again is not run twice.
// 4. + dispatch: the handler is the endpoint method of the notification's priority, called in a
//    `try` (a handler that throws must not stop the consumer).
//
// The top rung is the floor of any consumer that keeps tidings' promises with this format and
// client; tidings / rung 4 is what tidings' own machinery (listener, pipeline, executor, offset
// tracking per record) costs beyond it. `npx tsx bench/kafka-contract-cost.ts [--scenario
// backlog-plain|backlog-pooled|backlog-batch] [--count 120000] [--rounds 7]`; see bench/README.md.
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { decodeBody } from '../src/contract/envelope.js';
import { parseNotification } from '../src/contract/wire.js';
import { PRIORITIES } from '../src/core/types.js';
import { TransportURL } from '../src/index.js';
import { DuplicateMessageChecker } from '../src/structures/dedup.js';
import { MOCK_RPC_MAX_WAIT_MS, SHORT_GROUP_QUERY, startKafkaMock } from '../test/support/kafka-broker.js';
import { contextFor, type ScenarioFn } from './harness.js';
import { ladderCounts, printLadder, runLadder, type LadderRow } from './ladder.js';
import { osloKafkaNotificationText, unenvelope } from './oslo-envelope.js';
import { notificationBaselines, type NotificationShape } from './raw-kafka.js';
import { SCENARIOS } from './scenarios.js';

const SCENARIO_NAMES = ['backlog-plain', 'backlog-pooled', 'backlog-batch'] as const;
type ScenarioName = (typeof SCENARIO_NAMES)[number];

/** An endpoint of the bench's handlers, by lowercase priority, as tidings' dispatcher looks them up. */
type Endpoint = Readonly<Record<string, ((n: unknown) => unknown) | undefined>>;

/** oslo's priorities as they come on the wire (upper-case), and the endpoint method each goes to. */
const METHOD = new Map(PRIORITIES.map((p) => [p.toUpperCase(), p]));

/** The rungs' record handling, from raw-oslo's up (see the file comment); each call makes fresh duplicate windows. */
export function rungs(): Array<[string, NotificationShape]> {
  const checked = (value: string) => parseNotification(decodeBody(value));
  const windowed = () => {
    const window = new DuplicateMessageChecker(4096);
    return (value: string, handle: (n: unknown) => unknown) => {
      const parsed = checked(value);
      const id = parsed.uniqueId;
      if (id !== undefined && !window.begin(id)) return undefined;
      const result = handle(parsed.notification);
      if (id !== undefined) window.add(id);
      return result;
    };
  };
  const counted = (n: unknown) => n;
  const endpoint: Endpoint = { info: counted };
  const dedupOnly = windowed();
  const dispatched = windowed();
  return [
    ['1 raw-oslo', { encode: osloKafkaNotificationText, decode: unenvelope }],
    ['2 + wire checks', { encode: osloKafkaNotificationText, decode: checked }],
    ['3 + duplicate window', { encode: osloKafkaNotificationText, decode: (v) => dedupOnly(v, counted) }],
    [
      '4 + dispatch',
      {
        encode: osloKafkaNotificationText,
        decode: (v) =>
          dispatched(v, (n) => {
            const method = endpoint[METHOD.get((n as { priority: string }).priority) ?? ''];
            try {
              return method?.(n);
            } catch (err) {
              return err;
            }
          }),
      },
    ],
  ];
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { scenario: { type: 'string', default: 'backlog-plain' }, count: { type: 'string', default: '120000' }, rounds: { type: 'string', default: '7' }, warmup: { type: 'string' } } });
  const scenario = values.scenario as ScenarioName;
  if (!SCENARIO_NAMES.includes(scenario)) throw new Error(`--scenario is one of ${SCENARIO_NAMES.join(', ')}; received ${JSON.stringify(values.scenario)}`);
  const { count, rounds, warmup } = ladderCounts(values);
  const tidings = SCENARIOS.find((s) => s.name === scenario)!;
  const sides: Array<[string, ScenarioFn]> = [...rungs().map(([name, shape]): [string, ScenarioFn] => [name, notificationBaselines(shape)[scenario]]), ['5 tidings', tidings.run]];
  const mock = await startKafkaMock({ spreadLeaders: true });
  let rows: LadderRow[];
  try {
    const url = `${mock.url}/?${SHORT_GROUP_QUERY}&rpc_max_wait_ms=${MOCK_RPC_MAX_WAIT_MS}`;
    const transportUrl = TransportURL.parse(url);
    const options = { url, count, durationMs: null, warmup };
    rows = await runLadder(sides, rounds, 'notifications', () => contextFor(options, transportUrl));
  } finally {
    await mock.stop();
  }
  printLadder('kafka-contract-cost', 'notifications', rows, { scenario, count, rounds });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
