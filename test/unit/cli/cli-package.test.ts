// The `tidings` binary as installed from the packed tarball (npm pack), with only its runtime
// dependency next to it: --version reads the package's own package.json, and a broker library
// that is not installed is a failure (exit 1), unlike a scheme no driver is registered for (exit 2).
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lines, requireBuiltBinary } from './bin.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
let dir: string;
let bin: string;

beforeAll(async () => {
  requireBuiltBinary();
  dir = mkdtempSync(join(tmpdir(), 'tidings-pack-'));
  // --ignore-scripts: prepack would rebuild dist/ while other test files import it.
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: ROOT });
  const [{ filename }] = JSON.parse(stdout) as Array<{ filename: string }>;
  await run('tar', ['-xzf', join(dir, filename), '-C', dir]);
  // An install brings the one runtime dependency; the optional broker libraries stay out.
  mkdirSync(join(dir, 'package', 'node_modules'));
  symlinkSync(realpathSync(join(ROOT, 'node_modules', 'eventemitter3')), join(dir, 'package', 'node_modules', 'eventemitter3'), 'dir');
  bin = join(dir, 'package', 'dist', 'cli', 'main.js');
}, 60_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function runPacked(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { env: { PATH: process.env.PATH }, timeout: 20_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('the packed tidings binary', () => {
  it.each(['--version', '-V'])('%s prints the version from its package.json and exits 0', async (flag) => {
    const r = await runPacked([flag]);
    expect(r).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
  });

  it('without amqplib installed, a rabbit:// command fails with exit 1 naming the package', async () => {
    const r = await runPacked(['cast', 'ping', '--topic', 't', '--url', 'rabbit://guest:s3cret-pw@127.0.0.1:5672/']);
    expect(r.code).toBe(1);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/^tidings cast: DriverLoadFailure: Could not load the rabbit driver .*the package "amqplib" is not installed/);
    expect(r.stderr).not.toContain('s3cret-pw');
  });
});
