// Runs the files of examples/ with tsx against a transport URL (the unit test on memory://, the
// integration test on RabbitMQ) and holds the key lines each must print. The examples import
// 'tidings' as an app does; here that is the package's self-reference, so they run the BUILT dist/.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { runProcess, type ProcessResult } from './process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

export const EXPECTED: Record<string, RegExp[]> = {
  'quick-start.ts': [/^1 \+ 2 = 3$/m, /^calc\.added from calc\.host-1: \{ sum: 3 \}$/m],
  'rpc-basic.ts': [/^add\(2, 3\) = 5$/m, /^whoami on host-2 = host-2$/m, /^divide by zero -> RangeError: division by zero$/m, /^unknown method -> NoSuchMethod$/m, /^rpc-basic done$/m],
  'notifications-pools.ts': [/^pool billing: billing-1 got \d, billing-2 got \d \(4 in total\)$/m, /^pool audit: audit-1 got 4$/m, /^notifications-pools done$/m],
  'batch-listener.ts': [/^received 25 samples in \d+ batches: /m, /^batch-listener done$/m],
  'middleware-auth.ts': [/^whoami with a token: alice$/m, /^whoami without a token -> Unauthorized: whoami: missing or unknown auth_token$/m, /^refusal is an Unauthorized: true$/m, /^middleware-auth done$/m],
  'health-check.ts': [/^GET \/healthz -> 200$/m, /^transport: \{"connected":true,"blocked":false,"reconnecting":false\}$/m, /^servers: worker-1$/m, /^health-check done$/m],
  'typed-client.ts': [/^apples in stock: 3$/m, /^take 5 -> OutOfStock: only 1 apple left$/m, /^typed-client done$/m],
  'graceful-shutdown.ts': [/^SIGTERM: closing with 3 request\(s\) in flight$/m, /^closed: 3 request\(s\) finished$/m, /^a\.png resized$/m, /^graceful-shutdown done$/m],
};

/** Fails with the fix when dist/ has not been built (`npm test` builds first). */
export function requireBuiltPackage(): void {
  const entry = fileURLToPath(new URL('../../dist/index.js', import.meta.url));
  if (!existsSync(entry)) throw new Error(`${entry} is missing: the examples import 'tidings', which is dist/; run \`npm run build\` first (\`npm test\` builds before testing)`);
}

/** Runs `examples/<file>` with tsx against `url`, whatever the caller's environment says. */
export function runExample(file: string, url = 'memory://'): Promise<ProcessResult> {
  requireBuiltPackage();
  return runProcess(process.execPath, [TSX, `examples/${file}`], { cwd: ROOT, env: { ...process.env, TIDINGS_TRANSPORT_URL: url } });
}

/** examples/quick-start.ts without its opening comment: the README's code block. */
export function quickStartAsPackageUser(): string {
  const example = readFileSync(new URL('../../examples/quick-start.ts', import.meta.url), 'utf8');
  return example.slice(example.indexOf('import '));
}

/** The modules `source` imports or re-exports, as the TypeScript compiler reads them. */
export function importsOf(source: string): string[] {
  return ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName);
}
