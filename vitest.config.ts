import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Longest files first, so that the two workers finish together. vitest orders files by their
 * durations in its cache; a fresh clone (CI) has none and started the Kafka conformance file
 * (about 6 minutes of group joins on the mock) last, leaving one worker idle for minutes. Within
 * each project the broker conformance files go first, Kafka's before the others.
 */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => (/kafka\.conformance\.test\.ts$/.test(f.moduleId) ? 0 : /\.conformance\.test\.ts$/.test(f.moduleId) ? 1 : 2);
    // Array sort is stable: vitest's order stays within a rank, and its project order stays first.
    return (await super.sort(files)).sort(
      (a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || (a.project.name === b.project.name ? rank(a) - rank(b) : 0),
    );
  }
}

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: broker-backed files contend for the same RabbitMQ/Redis, keep it modest.
    maxWorkers: 2,
    reporters: ['default'],
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        test: { name: 'main', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, 'test/faults/**'], sequence: { groupOrder: 0 } },
      },
      {
        // Broker faults hit every client of the broker (`rabbitmqctl close_all_connections`), so
        // they run after everything else, one file at a time.
        extends: true,
        test: {
          name: 'faults',
          include: ['test/faults/**/*.test.ts'],
          fileParallelism: false,
          sequence: { groupOrder: 1 },
          env: { TIDINGS_FAULTS_CLOSE_ALL: '1' },
        },
      },
    ],
  },
});
