import { configDefaults, defineConfig } from 'vitest/config';

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
