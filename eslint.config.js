// Lint: typescript-eslint's recommended rules plus the import directions of style.md.
import tseslint from 'typescript-eslint';

const TEST_KIT = { patterns: ['**/testing/**', 'vitest'], message: 'Only src/testing (tidings/testing) uses the test kit and vitest; nothing else in src/ imports it.' };

// One no-restricted-imports per file (a later block would replace an earlier one), so every
// src/ block also carries TEST_KIT.
const restrict = (patterns, message, extra = [TEST_KIT]) => ({
  'no-restricted-imports': ['error', { patterns: [{ patterns, message }, ...extra].flatMap((g) => g.patterns.map((group) => ({ group: [group], message: g.message }))) }],
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
  {
    files: ['src/driver/**/*.ts'],
    rules: restrict(['**/drivers/**', '**/rpc/**', '**/notify/**', '**/cli/**', '**/transport.js', 'amqplib', 'ioredis', 'kafkajs'], 'src/driver/ is the contract: it imports only core modules.'),
  },
  {
    files: ['src/rpc/**/*.ts', 'src/notify/**/*.ts'],
    rules: restrict(['**/drivers/**', '**/cli/**', 'amqplib', 'ioredis', 'kafkajs'], 'Façades talk to the driver contract (src/driver), never to a driver.'),
  },
  { files: ['src/drivers/memory/**/*.ts'], rules: restrict(['**/rpc/**', '**/notify/**', '**/cli/**', '**/transport.js', '../amqp/**', '../redis/**', '../kafka/**', 'amqplib', 'ioredis', 'kafkajs'], 'A driver imports src/driver, core and its own broker library only.') },
  { files: ['src/drivers/amqp/**/*.ts'], rules: restrict(['**/rpc/**', '**/notify/**', '**/cli/**', '**/transport.js', '../memory/**', '../redis/**', '../kafka/**', 'ioredis', 'kafkajs'], 'A driver imports src/driver, core and its own broker library only.') },
  { files: ['src/drivers/redis/**/*.ts'], rules: restrict(['**/rpc/**', '**/notify/**', '**/cli/**', '**/transport.js', '../memory/**', '../amqp/**', '../kafka/**', 'amqplib', 'kafkajs'], 'A driver imports src/driver, core and its own broker library only.') },
  { files: ['src/drivers/kafka/**/*.ts'], rules: restrict(['**/rpc/**', '**/notify/**', '**/cli/**', '**/transport.js', '../memory/**', '../amqp/**', '../redis/**', 'amqplib', 'ioredis'], 'A driver imports src/driver, core and its own broker library only.') },
  {
    files: ['src/*.ts'],
    ignores: ['src/transport.ts'],
    rules: restrict(['**/drivers/**', 'amqplib', 'ioredis', 'kafkajs'], 'Only src/transport.ts knows drivers, and loads them lazily.'),
  },
  { files: ['src/transport.ts', 'src/cli/**/*.ts'], rules: restrict([], '') },
  {
    files: ['src/testing/**/*.ts'],
    rules: restrict(['**/cli/**', '**/drivers/amqp/**', '**/drivers/redis/**', '**/drivers/kafka/**', 'amqplib', 'ioredis', 'kafkajs'], 'tidings/testing drives the public API; of the drivers it knows only memory:// (for its test hooks).', []),
  },
);
