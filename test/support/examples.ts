// Runs the files of examples/ with tsx against a transport URL (the unit test on memory://, the
// integration test on RabbitMQ) and holds the key lines each must print.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

export const EXPECTED: Record<string, RegExp[]> = {
  'quick-start.ts': [/^1 \+ 2 = 3$/m, /^calc\.added from calc\.host-1: \{ sum: 3 \}$/m],
  'rpc-basic.ts': [/^add\(2, 3\) = 5$/m, /^whoami on host-2 = host-2$/m, /^divide by zero -> RangeError: division by zero$/m, /^unknown method -> NoSuchMethod$/m, /^rpc-basic done$/m],
  'notifications-pools.ts': [/^pool billing: billing-1 got \d, billing-2 got \d \(4 in total\)$/m, /^pool audit: audit-1 got 4$/m, /^notifications-pools done$/m],
  'batch-listener.ts': [/^received 25 samples in \d+ batches: /m, /^batch-listener done$/m],
  'typed-client.ts': [/^apples in stock: 3$/m, /^take 5 -> OutOfStock: only 1 apple left$/m, /^typed-client done$/m],
};

export function runExample(file: string, url = 'memory://'): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // The given URL whatever the caller's environment says.
    const env = { ...process.env, TIDINGS_TRANSPORT_URL: url };
    const child = spawn(process.execPath, [TSX, `examples/${file}`], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
