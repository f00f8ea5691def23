// The package as a user gets it: `npm pack`, install the tarball into a fresh app, then typecheck,
// import, require, run the bin and read stack traces there. Guards exports, types and files.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireBuiltBinary } from '../unit/cli/bin.js';
import { EXPECTED, quickStartAsPackageUser } from '../support/examples.js';
import { runProcess, type ProcessResult } from '../support/process.js';
import { linksLeavingThePackage } from './shipped-links.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const repoPkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
const SLOW = 300_000;

// npm run exports npm_* settings (prefix, local prefix, ...) that would point the app's npm at
// this repository; the app's npm must see only its own folder.
const ENV: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== 'INIT_CWD'));

let work = '';
let app = '';
let packed: { filename: string; files: { path: string }[] };

function explain(what: string, r: ProcessResult): string {
  return `${what} exited ${r.code ?? r.signal}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
}

function inApp(command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<ProcessResult> {
  return runProcess(command, args, { cwd: app, env: { ...ENV, ...env }, timeoutMs: 120_000 });
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((f) => join(dir, f));
}

beforeAll(async () => {
  requireBuiltBinary();
  work = mkdtempSync(join(tmpdir(), 'tidings-pack-'));
  // --ignore-scripts: prepack would rebuild dist/ while other test files run dist/cli/main.js;
  // `npm test` has just built it.
  const pack = await runProcess('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], { cwd: ROOT, env: ENV, timeoutMs: 120_000 });
  if (pack.code !== 0) throw new Error(explain('npm pack', pack));
  [packed] = JSON.parse(pack.stdout) as (typeof packed)[];

  app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'tidings-pack-app', private: true, type: 'module' }));
  // vitest: the optional peer that tidings/testing runs under.
  const deps = [join(work, packed.filename), ...['typescript', '@types/node', 'vitest'].map((name) => `${name}@${repoPkg.devDependencies[name]}`)];
  const install = await inApp('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...deps]);
  if (install.code !== 0) {
    throw new Error(`${explain(`npm install ${deps.join(' ')}`, install)}\nThis test needs the npm registry or a warm npm cache (~/.npm) holding typescript, @types/node, vitest and eventemitter3.`);
  }
}, SLOW);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('npm pack', () => {
  it('packs dist, src, docs/*.md, examples, README.md, LICENSE and package.json, and nothing else', () => {
    const paths = packed.files.map((f) => f.path);
    expect(new Set(paths.map((p) => p.split('/')[0]))).toEqual(new Set(['dist', 'src', 'docs', 'examples', 'README.md', 'LICENSE', 'package.json']));
    expect(paths).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/index.js.map', 'dist/index.d.ts.map', 'dist/contract/index.js', 'dist/testing/index.js', 'dist/testing/index.d.ts', 'dist/cli/main.js', 'src/index.ts', 'src/testing/index.ts']));
    expect(paths).toEqual(expect.arrayContaining(['docs/guide.md', 'docs/writing-a-driver.md', 'docs/drivers.md', 'docs/design.md', 'examples/quick-start.ts']));
    expect(paths.filter((p) => /(^|\/)(test|bench|\.ci)\/|^docs\/api\/|\.test\.[jt]s$/.test(p))).toEqual([]);
  });

  it('resolves every relative link of the packed README.md and docs/*.md to a packed file', () => {
    const paths = packed.files.map((f) => f.path);
    expect(linksLeavingThePackage(paths)).toEqual([]);
  });
});

describe('the installed package', () => {
  it('typechecks the README quick start (ESM), a tidings/testing consumer and a CommonJS consumer (strict, nodenext, lib check on), then runs it on memory://', async () => {
    writeFileSync(join(app, 'index.ts'), quickStartAsPackageUser());
    writeFileSync(
      join(app, 'kit.ts'),
      [
        "import { registerDriver, type DriverLoader } from 'tidings';",
        "import { memoryConformanceSubject, type ConformanceSubject } from 'tidings/testing';",
        "export const subject: ConformanceSubject = memoryConformanceSubject({ scheme: 'memtest', timeScale: 2 });",
        "export const register = (load: DriverLoader): void => registerDriver('memtest', load);",
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(app, 'consumer.cts'),
      [
        "import tidings = require('tidings');",
        "import driver = require('tidings/driver');",
        "export const target: tidings.Target = new tidings.Target({ topic: 'calc' });",
        'export const watch: driver.StopWatch = new driver.StopWatch();',
        '',
      ].join('\n'),
    );
    const compilerOptions = { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', types: ['node'], skipLibCheck: false, outDir: 'out' };
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['index.ts', 'kit.ts', 'consumer.cts'] }));
    const tsc = await inApp(process.execPath, [join(app, 'node_modules/typescript/bin/tsc'), '-p', '.']);
    expect(tsc.code, explain('tsc -p .', tsc)).toBe(0);

    const r = await inApp(process.execPath, [join(app, 'out/index.js')], { TIDINGS_TRANSPORT_URL: 'memory://' });
    expect(r.code, explain('node out/index.js', r)).toBe(0);
    expect(r.stderr).toBe('');
    for (const p of EXPECTED['quick-start.ts']!) expect(r.stdout).toMatch(p);
  }, SLOW);

  it('can be required from CommonJS (tidings and tidings/driver) and its exports used', async () => {
    const script = "const t = require('tidings'); const d = require('tidings/driver'); console.log(new t.Target({ topic: 'calc' }).topic, new d.StopWatch() instanceof d.StopWatch);";
    const r = await inApp(process.execPath, ['-e', script]);
    expect(r.code, explain('node -e <require>', r)).toBe(0);
    expect(r.stdout).toBe('calc true\n');
  });

  it('runs the conformance suite from tidings/testing under vitest against memory://', async () => {
    writeFileSync(
      join(app, 'memory.conformance.test.mjs'),
      "import { memoryConformanceSubject, runConformanceSuite } from 'tidings/testing';\nrunConformanceSuite(memoryConformanceSubject());\n",
    );
    const r = await inApp(join(app, 'node_modules/.bin/vitest'), ['run', '--root', app, 'memory.conformance.test.mjs'], { NO_COLOR: '1', CI: '1' });
    expect(r.code, explain('vitest run memory.conformance.test.mjs', r)).toBe(0);
    expect(r.stdout).toMatch(/Tests\s+\d+ passed/);
    expect(r.stdout).not.toMatch(/failed|skipped/);
  }, SLOW);

  it('runs the tidings bin', async () => {
    const r = await inApp(join(app, 'node_modules/.bin/tidings'), ['--help']);
    expect(r.code, explain('tidings --help', r)).toBe(0);
    expect(r.stdout).toContain('Usage: tidings <command>');
  });

  it.each([
    { what: 'new Target({ topic: 1 })', code: "import { Target } from 'tidings'; new Target({ topic: 1 });", file: 'core/target.ts' },
    { what: "TransportURL.parse('bogus')", code: "import { TransportURL } from 'tidings'; TransportURL.parse('bogus');", file: 'core/transport-url.ts' },
  ])('with --enable-source-maps, an error from $what points at where it is made in the shipped src/$file', async ({ code, file }) => {
    const r = await inApp(process.execPath, ['--enable-source-maps', '--input-type=module', '-e', code]);
    expect(r.code).not.toBe(0);
    const frame = /\((\/[^()]*\/node_modules\/tidings\/src\/([\w/-]+\.ts)):(\d+):\d+\)/.exec(r.stderr);
    expect(frame, `no src/*.ts frame in:\n${r.stderr}`).not.toBeNull();
    const [, path, relative, line] = frame!;
    expect(relative).toBe(file);
    expect(existsSync(path!)).toBe(true);
    // The top frame is where the error object is constructed (a throw, or a helper returning it).
    expect(readFileSync(path!, 'utf8').split('\n')[Number(line) - 1]).toMatch(/\bnew (InvalidTarget|InvalidTransportURL|InvalidArgument)\(/);
  });

  it('tidings/nestjs: examples/nestjs/main.ts as a package user writes it typechecks (NestJS installed beside, lib check on) and runs on memory://', async () => {
    // The NestJS packages are optional peers: installed here as a NestJS application has them.
    const nest = ['@nestjs/common', '@nestjs/core', '@nestjs/microservices', 'rxjs', 'reflect-metadata'].map((name) => `${name}@${repoPkg.devDependencies[name]}`);
    const install = await inApp('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...nest]);
    expect(install.code, explain(`npm install ${nest.join(' ')}`, install)).toBe(0);
    const example = readFileSync(join(ROOT, 'examples/nestjs/main.ts'), 'utf8');
    writeFileSync(join(app, 'nestjs.ts'), example.replace("from '../../src/nestjs/index.js'", "from 'tidings/nestjs'"));
    const compilerOptions = { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', types: ['node'], skipLibCheck: false, experimentalDecorators: true, emitDecoratorMetadata: true, outDir: 'out-nestjs' };
    writeFileSync(join(app, 'tsconfig.nestjs.json'), JSON.stringify({ compilerOptions, include: ['nestjs.ts'] }));
    const tsc = await inApp(process.execPath, [join(app, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.nestjs.json']);
    expect(tsc.code, explain('tsc -p tsconfig.nestjs.json', tsc)).toBe(0);
    const r = await inApp(process.execPath, [join(app, 'out-nestjs/nestjs.js')], { TIDINGS_TRANSPORT_URL: 'memory://' });
    expect(r.code, explain('node out-nestjs/nestjs.js', r)).toBe(0);
    expect(r.stderr).toBe('');
    for (const p of EXPECTED['nestjs/main.ts']!) expect(r.stdout).toMatch(p);
  }, SLOW);

  it('has a source for every .js.map and .d.ts.map (go to definition lands in src/)', () => {
    const dist = join(app, 'node_modules/tidings/dist');
    const files = filesUnder(dist);
    const declarations = files.filter((f) => f.endsWith('.d.ts'));
    const maps = files.filter((f) => f.endsWith('.map'));
    expect(maps.filter((f) => f.endsWith('.d.ts.map'))).toHaveLength(declarations.length);
    const missing: string[] = [];
    for (const map of maps) {
      const { sources, sourceRoot = '' } = JSON.parse(readFileSync(map, 'utf8')) as { sources: string[]; sourceRoot?: string };
      for (const s of sources) if (!existsSync(resolve(dirname(map), sourceRoot, s))) missing.push(`${map} -> ${s}`);
    }
    expect(missing).toEqual([]);
  });
});
