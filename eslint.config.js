// Lint: typescript-eslint's recommended rules plus the import directions of style.md.
import tseslint from 'typescript-eslint';

const TEST_KIT = { patterns: ['**/testing/**', 'vitest'], message: 'Only src/testing (tidings/testing) uses the test kit and vitest; nothing else in src/ imports it.' };

const NESTJS = {
  patterns: ['@nestjs/*', 'rxjs', 'rxjs/*', 'reflect-metadata', '**/nestjs/**'],
  message: 'Only src/nestjs (tidings/nestjs) imports NestJS and rxjs, optional peers: the core never loads them.',
};

// One no-restricted-imports per file (a later block would replace an earlier one), so every
// src/ block also carries TEST_KIT, and every one but src/nestjs's carries NESTJS.
const restrict = (patterns, message, extra = [TEST_KIT], nestjs = NESTJS) => ({
  'no-restricted-imports': [
    'error',
    { patterns: [{ patterns, message }, ...extra, ...(nestjs ? [nestjs] : [])].filter((g) => g.patterns.length > 0).map((g) => ({ group: g.patterns, message: g.message })) },
  ],
});

export default tseslint.config(
  { ignores: ['dist/**', 'dist-bench/**', 'node_modules/**', '.tmp/**', 'coverage/**', 'docs/api/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-empty-function': 'off',
    },
  },
  { files: ['src/core/**/*.ts'], rules: restrict(['../*', '!../core', '../../*', 'amqplib', 'ioredis', 'kafkajs'], 'src/core is the ground floor: it imports nothing else of tidings.') },
  { files: ['src/structures/**/*.ts'], rules: restrict(['../*', '!../core', '!../structures', 'amqplib', 'ioredis', 'kafkajs'], 'src/structures holds data structures: they import only core.') },
  {
    files: ['src/contract/**/*.ts'],
    rules: restrict(['../*', '!../core', '!../structures', '!../contract', 'amqplib', 'ioredis', 'kafkajs'], 'src/contract is the driver contract: it imports only core and structures.'),
  },
  {
    files: ['src/middleware/**/*.ts'],
    rules: restrict(['../*', '!../core', '!../structures', '!../contract', '!../middleware', 'amqplib', 'ioredis', 'kafkajs'], 'Middleware takes its types from below (core, contract), never from a façade.'),
  },
  {
    files: ['src/observability/**/*.ts'],
    rules: restrict(['../*', '!../core', '!../structures', '!../contract', '!../middleware', '!../observability', 'amqplib', 'ioredis', 'kafkajs'], 'Observability takes its types from below (core, contract, middleware), never from a façade.'),
  },
  {
    files: ['src/rpc/**/*.ts', 'src/notify/**/*.ts', 'src/server/**/*.ts'],
    rules: restrict(['**/drivers/**', '**/cli/**', 'amqplib', 'ioredis', 'kafkajs'], 'Façades talk to the driver contract (src/contract), never to a driver.'),
  },
  { files: ['src/drivers/memory/**/*.ts'], rules: restrict(['**/rpc/**', '**/notify/**', '**/server/**', '**/middleware/**', '**/observability/**', '**/cli/**', '**/transport.js', '../amqp/**', '../redis/**', '../kafka/**', 'amqplib', 'ioredis', 'kafkajs'], 'A driver imports src/contract, src/structures, core and its own broker library only.') },
  { files: ['src/drivers/amqp/**/*.ts'], rules: restrict(['**/rpc/**', '**/notify/**', '**/server/**', '**/middleware/**', '**/observability/**', '**/cli/**', '**/transport.js', '../memory/**', '../redis/**', '../kafka/**', 'ioredis', 'kafkajs'], 'A driver imports src/contract, src/structures, core and its own broker library only.') },
  { files: ['src/drivers/redis/**/*.ts'], rules: restrict(['**/rpc/**', '**/notify/**', '**/server/**', '**/middleware/**', '**/observability/**', '**/cli/**', '**/transport.js', '../memory/**', '../amqp/**', '../kafka/**', 'amqplib', 'kafkajs'], 'A driver imports src/contract, src/structures, core and its own broker library only.') },
  { files: ['src/drivers/kafka/**/*.ts'], rules: restrict(['**/rpc/**', '**/notify/**', '**/server/**', '**/middleware/**', '**/observability/**', '**/cli/**', '**/transport.js', '../memory/**', '../amqp/**', '../redis/**', 'amqplib', 'ioredis'], 'A driver imports src/contract, src/structures, core and its own broker library only.') },
  {
    files: ['src/*.ts'],
    ignores: ['src/transport.ts'],
    rules: restrict(['**/drivers/**', 'amqplib', 'ioredis', 'kafkajs'], 'Only src/transport.ts knows drivers, and loads them lazily.'),
  },
  { files: ['src/transport.ts', 'src/cli/**/*.ts'], rules: restrict([], '') },
  {
    files: ['src/console/**/*.ts'],
    rules: restrict(['**/drivers/**', '**/cli/**', '**/server/**', 'amqplib', 'ioredis', 'kafkajs'], 'src/console (tidings/console) works through the public API, the transport, the façades and the driver contract; never a driver, never the CLI.'),
  },
  {
    files: ['src/nestjs/**/*.ts'],
    rules: restrict(['../*', '!../index.js', '../../*', 'amqplib', 'ioredis', 'kafkajs'], 'tidings/nestjs is built on the public API (src/index.ts), as a user would build it.', [TEST_KIT], null),
  },
  {
    files: ['src/testing/**/*.ts'],
    rules: restrict(['**/cli/**', '**/drivers/amqp/**', '**/drivers/redis/**', '**/drivers/kafka/**', 'amqplib', 'ioredis', 'kafkajs'], 'tidings/testing drives the public API; of the drivers it knows only memory:// (for its test hooks).', []),
  },
);
