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
 * Files that take a minute or more, longest first (seconds on the 2-core machine, quiet): started
 * first, so that none is left running alone at the end. A fresh clone has no timing cache, and
 * vitest would then start the largest files first: these are small (the conformance suite lives
 * in src/testing), so they ran last and the suite waited ~8 minutes on the Kafka conformance file.
 */
const SLOW_FIRST = [
  'test/integration/rabbit-cluster.test.ts', // ~200 (cluster boot, conformance suite, node loss)
  'test/integration/kafka-notify.conformance.test.ts', // ~130
  'test/integration/kafka-wire.conformance.test.ts', // ~150
  'test/integration/kafka-lifecycle.conformance.test.ts', // ~130
  'test/integration/kafka-rpc.conformance.test.ts', // ~125
  'test/integration/kafka-delivery.test.ts', // ~105
  'test/integration/kafka-reply-address.test.ts', // ~70-120
  'test/integration/redis-cluster.conformance.test.ts', // ~95
  'test/integration/amqp-quorum.conformance.test.ts', // ~80
  'test/integration/amqp.conformance.test.ts', // ~70
];

class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const group = (f: TestSpecification) => f.project.config.sequence.groupOrder;
    const rank = (f: TestSpecification) => {
      const i = SLOW_FIRST.findIndex((path) => f.moduleId.endsWith(path));
      return i < 0 ? SLOW_FIRST.length : i;
    };
    // Array sort is stable: files of one rank keep vitest's order.
    return sorted.sort((a, b) => group(a) - group(b) || rank(a) - rank(b));
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
