// Lint: typescript-eslint's recommended rules plus the import directions of style.md.
import tseslint from 'typescript-eslint';

const restrict = (patterns, message) => ({
  'no-restricted-imports': ['error', { patterns: patterns.map((group) => ({ group: [group], message })) }],
});

export default tseslint.config(
  { ignores: ['dist/**', 'dist-bench/**', 'node_modules/**', '.tmp/**', 'coverage/**'] },
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
);
