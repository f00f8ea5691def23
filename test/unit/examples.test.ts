// Runs every example with tsx on memory:// and checks its key output, so the examples never rot.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

const EXPECTED: Record<string, RegExp[]> = {
  'quick-start.ts': [/^1 \+ 2 = 3$/m, /^calc\.added from calc\.host-1: \{ sum: 3 \}$/m],
  'rpc-basic.ts': [/^add\(2, 3\) = 5$/m, /^whoami on host-2 = host-2$/m, /^divide by zero -> RangeError: division by zero$/m, /^unknown method -> NoSuchMethod$/m, /^rpc-basic done$/m],
  'notifications-pools.ts': [/^pool billing: billing-1 got \d, billing-2 got \d \(4 in total\)$/m, /^pool audit: audit-1 got 4$/m, /^notifications-pools done$/m],
  'batch-listener.ts': [/^received 25 samples in \d+ batches: /m, /^batch-listener done$/m],
  'typed-client.ts': [/^apples in stock: 3$/m, /^take 5 -> OutOfStock: only 1 apple left$/m, /^typed-client done$/m],
};

function runExample(file: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // memory:// whatever the caller's environment says.
    const env = { ...process.env, TIDINGS_TRANSPORT_URL: 'memory://' };
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

describe('examples/', () => {
  it('every example has expectations here', () => {
    const files = readdirSync(new URL('../../examples', import.meta.url)).filter((f) => f.endsWith('.ts'));
    expect(files.sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it("README.md's quick start is examples/quick-start.ts, importing from 'tidings'", () => {
    const example = readFileSync(new URL('../../examples/quick-start.ts', import.meta.url), 'utf8');
    const body = example.slice(example.indexOf('import ')).replace("from '../src/index.js'", "from 'tidings'");
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    expect(readme).toContain('```ts\n' + body + '```');
  });

  it.each(Object.entries(EXPECTED))('%s runs on memory:// and prints its key lines', async (file, patterns) => {
    const r = await runExample(file);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    for (const p of patterns) expect(r.stdout).toMatch(p);
  });
});
