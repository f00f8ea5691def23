import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Fault tests that hit every client of the machine's RabbitMQ (`rabbitmqctl close_all_connections`)
 * or load it heavily (200,000 queued notifications): they run after everything else, one at a time.
 * Every other fault test breaks only brokers of its own (private redis-server, Kafka mock cluster,
 * proxies, child processes) and runs beside the rest of the suite.
 */
const SHARED_BROKER_FAULTS = ['test/faults/close-all-connections.test.ts', 'test/faults/amqp-rss.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: broker-backed files contend for the same RabbitMQ/Redis, keep it modest.
    maxWorkers: 2,
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
