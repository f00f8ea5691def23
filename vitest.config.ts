import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Fault tests that hit every client of the machine's RabbitMQ (`rabbitmqctl close_all_connections`)
 * or load it heavily (200,000 queued notifications): they run after everything else, one at a time.
 * Every other fault test breaks only brokers of its own (private redis-server, Kafka mock cluster,
 * proxies, child processes) and runs beside the rest of the suite.
 */
const SHARED_BROKER_FAULTS = ['test/faults/close-all-connections.test.ts', 'test/faults/amqp-rss.test.ts'];

/**
 * Files that take ten seconds or more, with their seconds in a full run on the 2-core machine
 * (2026-11-27, 4 workers; rabbit-cluster with its ~50 s cluster boot; the README snippets, CLI,
 * examples, screenshot, delivery-metrics and examples-rabbit files from a slower run of
 * 2026-11-28, where they had started late): started longest first, so
 * that no long file starts late and runs alone at the end (longest-processing-time order: the
 * run's files in 4 workers need ~490 s this way; started as vitest orders them, a 68 s
 * conformance file started at 484 s and the run took 572 s). A fresh clone has no timing cache,
 * and vitest would then start the largest files first: these are small (the conformance suite
 * lives in src/testing), so they ran last. Files not listed run after these, in vitest's order.
 */
const SLOW_FIRST: ReadonlyArray<readonly [path: string, seconds: number]> = [
  ['test/integration/kafka-wire.conformance.test.ts', 176],
  ['test/integration/rabbit-cluster.test.ts', 170],
  ['test/integration/kafka-lifecycle.conformance.test.ts', 132],
  ['test/integration/kafka-rpc.conformance.test.ts', 123],
  ['test/integration/kafka-delivery.test.ts', 117],
  ['test/integration/kafka-notify.conformance.test.ts', 116],
  ['test/integration/redis-cluster.conformance.test.ts', 91],
  ['test/integration/amqp-quorum.conformance.test.ts', 72],
  ['test/unit/readme-snippets.test.ts', 72],
  ['test/integration/amqp.conformance.test.ts', 71],
  ['test/integration/redis.conformance.test.ts', 68],
  ['test/integration/console-api.test.ts', 62],
  ['test/unit/cli/cli.test.ts', 52],
  ['test/package/pack.test.ts', 41],
  ['test/unit/examples.test.ts', 37],
  ['test/integration/amqp-stream.conformance.test.ts', 34],
  ['test/integration/kafka-reply-address.test.ts', 33],
  ['test/integration/kafka-dead-letters.test.ts', 32],
  ['test/faults/kafka-faults.test.ts', 30],
  ['test/unit/bench-smoke.test.ts', 30],
  ['test/conformance/registered-driver.test.ts', 27],
  ['test/integration/memory.conformance.test.ts', 27],
  ['test/interop/kafka-notifications.test.ts', 26],
  ['test/integration/kafka-broker.test.ts', 24],
  ['test/faults/abuse.test.ts', 21],
  ['test/integration/redis-sentinel.test.ts', 20],
  ['test/unit/contract/batch-stopwatch-cases.test.ts', 20],
  ['test/integration/kafka-dead-letter-cap.test.ts', 20],
  ['test/interop/kafka-oslo-format.test.ts', 20],
  ['test/browser/console-screenshot.browser.test.ts', 19],
  ['test/integration/kafka-producer.test.ts', 18],
  ['test/integration/delivery-metrics.test.ts', 17],
  ['test/faults/kafka-broker-gone.test.ts', 15],
  ['test/conformance/broken-drivers.test.ts', 15],
  ['test/integration/kafka-rpc.test.ts', 15],
  ['test/integration/examples-rabbit.test.ts', 15],
  ['test/conformance/masked-capabilities.test.ts', 14],
  ['test/integration/redis-servers.test.ts', 11],
  ['test/nestjs/brokers.test.ts', 11],
  ['test/faults/amqp-broker-gone.test.ts', 10],
  ['test/integration/kafka-tls.test.ts', 10],
];

class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const group = (f: TestSpecification) => f.project.config.sequence.groupOrder;
    const seconds = (f: TestSpecification) => SLOW_FIRST.find(([path]) => f.moduleId.endsWith(path))?.[1] ?? 0;
    // Array sort is stable: the files not listed keep vitest's order.
    return sorted.sort((a, b) => group(a) - group(b) || seconds(b) - seconds(a));
  }
}

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores, but most files wait on brokers (group joins, timeouts, cluster boots) far more
    // than they compute: four at once, the slow ones first (three took the suite to 13 minutes
    // once the console's API and browser tests came).
    maxWorkers: 4,
    sequence: { sequencer: SlowFirst },
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: { name: 'main', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...SHARED_BROKER_FAULTS], sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        test: {
          name: 'faults',
          include: SHARED_BROKER_FAULTS,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
          env: { TIDINGS_FAULTS_CLOSE_ALL: '1' },
        },
      },
    ],
  },
});
