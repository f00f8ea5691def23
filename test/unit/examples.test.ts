// Runs every example with tsx on memory:// and checks its key output, so the examples never rot.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXPECTED, exampleFiles, quickStartAsPackageUser, runExample } from '../support/examples.js';

describe('examples/', () => {
  it('every example has expectations here', () => {
    expect(exampleFiles().sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it("README.md's quick start is examples/quick-start.ts, importing from 'tidings'", () => {
    const body = quickStartAsPackageUser();
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
