// The README's screenshot is taken by this test's recipe: `npm run console:screenshot` runs
// scripts/console-screenshot.ts, which this test runs into a temporary file, checking that a PNG of
// the page's width comes out (the script waits for the pools page to show the drained backlog and
// the chart, so a broken page fails here). Needs `npm run build` (dist/console-ui).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tidings-screenshot-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('scripts/console-screenshot.ts photographs the pools page (the README picture)', async () => {
  const out = join(dir, 'console.png');
  await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/console-screenshot.ts'], { cwd: ROOT, env: { ...process.env, CONSOLE_SCREENSHOT: out }, timeout: 90_000 });
  const png = readFileSync(out);
  expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
  expect(png.subarray(12, 16).toString('ascii')).toBe('IHDR');
  expect(png.readUInt32BE(16)).toBe(1100); // the width the script asks for
  expect(png.length).toBeGreaterThan(20_000); // a page with a table and a chart, not a blank one
}, 120_000);
