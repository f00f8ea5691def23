// Runs every example with tsx on memory:// and checks its key output, so the examples never rot.
import { builtinModules } from 'node:module';
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { EXPECTED, exampleFiles, importsOf, quickStartAsPackageUser, requireBuiltPackage, runExample } from '../support/examples.js';

const EXAMPLES = new URL('../../examples/', import.meta.url);
/** What the NestJS example needs besides tidings: the packages the README tells a NestJS app to install. */
const NESTJS_PACKAGES = /^(@nestjs\/(common|core|microservices)|rxjs|reflect-metadata)$/;

describe('examples/', () => {
  beforeAll(requireBuiltPackage);

  it('every example has expectations here', () => {
    expect(exampleFiles().sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it("every example imports only 'tidings' (or its subpath exports) and node: built-ins, so it can be copied into an app as it is; the NestJS one also NestJS", () => {
    const isTidings = (m: string) => m === 'tidings' || m.startsWith('tidings/');
    const foreign = Object.keys(EXPECTED).flatMap((file) => {
      const imports = importsOf(readFileSync(new URL(file, EXAMPLES), 'utf8'));
      expect(imports.some(isTidings), `${file} imports tidings`).toBe(true);
      const allowed = (m: string) => isTidings(m) || (m.startsWith('node:') && builtinModules.includes(m.slice(5))) || (file.startsWith('nestjs/') && NESTJS_PACKAGES.test(m));
      return imports.filter((m) => !allowed(m)).map((m) => `${file}: ${m}`);
    });
    expect(foreign).toEqual([]);
  });

  it('importsOf finds a relative import, a bare side-effect import and a multi-line one', () => {
    expect(importsOf("import { a } from '../src/index.js';\nimport 'side';\nimport {\n  b,\n  type C,\n} from \"tidings\";\n")).toEqual(['../src/index.js', 'side', 'tidings']);
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
