import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: broker-backed files contend for the same RabbitMQ/Redis, keep it modest.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
