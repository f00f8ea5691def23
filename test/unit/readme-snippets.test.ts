// Type-checks the code blocks of README.md and docs/ marked ```ts check against the source (the
// package name `tidings` mapped to src/), so a renamed option or method breaks the build, not users.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeBlocks, markdownFiles, ROOT, type CodeBlock } from '../support/markdown.js';

const TS_LANGS = ['ts', 'typescript'];

/** A block that must not type-check: proves a passing run means something. */
const CANARY: CodeBlock = {
  file: 'canary.md',
  line: 1,
  lang: 'ts',
  flags: ['check'],
  code: "import { getRpcClient, notExported } from 'tidings';\nconst n: number = getRpcClient;\n",
};

/** README's quick start is examples/quick-start.ts; test/unit/examples.test.ts runs it. */
function isQuickStart(block: CodeBlock): boolean {
  const example = readFileSync(join(ROOT, 'examples', 'quick-start.ts'), 'utf8');
  return block.code === example.slice(example.indexOf('import '));
}

/**
 * Type-checks every block as its own module; returns `file:line: message` per error. Blocks
 * flagged `decorators` (```` ```ts check decorators ````, NestJS code) are checked with
 * TypeScript's legacy decorators, as a NestJS application compiles.
 */
function typecheck(blocks: readonly CodeBlock[], dir: string, legacyDecorators = false): string[] {
  const names = blocks.map((_, i) => join(dir, `snippet-${i}.ts`));
  blocks.forEach((b, i) => writeFileSync(names[i], b.code));
  const fromDir = (path: string) => relative(dir, join(ROOT, path)).split('\\').join('/');
  const config = {
    extends: fromDir('tsconfig.json'),
    compilerOptions: {
      noEmit: true,
      ...(legacyDecorators ? { experimentalDecorators: true, emitDecoratorMetadata: true } : {}),
      paths: { tidings: [fromDir('src/index.ts')], 'tidings/driver': [fromDir('src/contract/index.ts')], 'tidings/testing': [fromDir('src/testing/index.ts')], 'tidings/nestjs': [fromDir('src/nestjs/index.ts')], 'tidings/console': [fromDir('src/console/index.ts')] },
    },
    include: ['*.ts'],
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(config));
  const parsed = ts.getParsedCommandLineOfConfigFile(join(dir, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); } });
  if (!parsed) throw new Error('could not read the snippet tsconfig');
  const program = ts.createProgram({ rootNames: names, options: parsed.options });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    const index = d.file ? names.indexOf(d.file.fileName) : -1;
    if (index < 0 || d.start === undefined) return `${d.file ? relative(ROOT, d.file.fileName) : 'config'}: ${text}`;
    const line = d.file!.getLineAndCharacterOfPosition(d.start).line;
    return `${blocks[index].file}:${blocks[index].line + line}: ${text}`;
  });
}

describe('code blocks of README.md and docs/', () => {
  const blocks = markdownFiles().flatMap(codeBlocks);
  const checkable = blocks.filter((b) => TS_LANGS.includes(b.lang) && b.flags.includes('check'));
  let dir: string;
  let decoratedDir: string;
  let errors: string[];

  const decorated = checkable.filter((b) => b.flags.includes('decorators'));

  beforeAll(() => {
    mkdirSync(join(ROOT, '.tmp'), { recursive: true });
    // Inside the repository, so `typescript` and `@types/node` resolve from its node_modules.
    dir = mkdtempSync(join(ROOT, '.tmp', 'snippets-'));
    errors = typecheck([...checkable.filter((b) => !decorated.includes(b)), CANARY], dir);
  }, 60_000);

  // A second program (its own compiler options), with its own time.
  beforeAll(() => {
    decoratedDir = mkdtempSync(join(ROOT, '.tmp', 'snippets-'));
    errors.push(...typecheck(decorated, decoratedDir, true));
  }, 60_000);

  afterAll(() => {
    for (const d of [dir, decoratedDir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('README.md and docs/guide.md have checkable TypeScript blocks', () => {
    expect(checkable.filter((b) => b.file === 'README.md').length).toBeGreaterThanOrEqual(3);
    expect(checkable.filter((b) => b.file === 'docs/guide.md').length).toBeGreaterThanOrEqual(10);
  });

  it('every TypeScript block is checked (or is the quick start, which examples.test.ts runs)', () => {
    const unchecked = blocks.filter((b) => TS_LANGS.includes(b.lang) && !b.flags.includes('check') && !isQuickStart(b));
    expect(unchecked.map((b) => `${b.file}:${b.line}`)).toEqual([]);
  });

  it('the checker reports errors in a broken block', () => {
    const canary = errors.filter((e) => e.startsWith('canary.md:'));
    expect(canary.some((e) => /notExported/.test(e))).toBe(true);
    expect(canary.some((e) => /not assignable to type 'number'/.test(e))).toBe(true);
  });

  it('every checkable block type-checks against src/', () => {
    expect(errors.filter((e) => !e.startsWith('canary.md:'))).toEqual([]);
  });
});
