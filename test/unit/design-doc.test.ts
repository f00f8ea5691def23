// Keeps docs/design.md's "Layers" honest: every folder and top-level file of src/ is on a floor,
// every file of the contract and structures floors is named, every src/ path the page names
// exists, and the floors come in the order the import checker (.dependency-cruiser.cjs) enforces.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);
const design = readFileSync(new URL('docs/design.md', root), 'utf8');

/** The rows of the Layers block: floor number, the src/ path it starts with, and all of its text. */
function floors(): { floor: number; path: string; text: string }[] {
  const block = /## Layers\n[\s\S]*?```\n([\s\S]*?)```/.exec(design)?.[1];
  if (block === undefined) throw new Error('docs/design.md has no code block under "## Layers"');
  const rows: { floor: number; path: string; text: string }[] = [];
  for (const line of block.split('\n')) {
    const head = /^\s*(\d+)\s+(src\/\S*)/.exec(line);
    if (head) rows.push({ floor: Number(head[1]), path: head[2]!, text: line });
    else if (rows.length > 0 && line.trim() !== '') rows[rows.length - 1]!.text += ` ${line}`;
  }
  return rows;
}

/** The paths a row names: `src/rpc/, src/notify/` gives both; `src/drivers/<name>/` stands for the folder. */
function pathsOf(row: { text: string }): string[] {
  return [...row.text.matchAll(/src\/[\w./<>-]*/g)].map((m) => m[0].replace(/<name>\/$/, '').replace(/[.,]$/, ''));
}

/** The floors of the import checker, lowest first, with the pattern of the files each covers. */
function checkerFloors(): { name: string; path: RegExp }[] {
  const config = createRequire(import.meta.url)('../../.dependency-cruiser.cjs') as { forbidden: { name: string; from: { path?: string } }[] };
  return config.forbidden
    .filter((rule) => rule.name.startsWith('no-import-up-from-'))
    .map((rule) => ({ name: rule.name.slice('no-import-up-from-'.length), path: new RegExp(rule.from.path!) }));
}

describe('docs/design.md "Layers"', () => {
  it('puts every folder and top-level file of src/ on a floor', () => {
    const named = new Set(floors().flatMap(pathsOf).map((p) => p.replace(/\/$/, '')));
    const children = readdirSync(new URL('src/', root)).map((name) => `src/${name}`);
    expect(children.filter((child) => !named.has(child))).toEqual([]);
  });

  it('names every file of src/contract and src/structures on its row', () => {
    const missing: string[] = [];
    for (const folder of ['src/contract/', 'src/structures/']) {
      const row = floors().find((r) => r.path === folder);
      if (!row) throw new Error(`no row for ${folder}`);
      for (const file of readdirSync(new URL(folder, root))) {
        const name = file.replace(/\.ts$/, '');
        if (name !== 'index' && !new RegExp(`(^|[^\\w-])${name}([^\\w-]|$)`).test(row.text)) missing.push(folder + file);
      }
    }
    expect(missing).toEqual([]);
  });

  it('names only src/ paths that exist', () => {
    const paths = [...design.matchAll(/\bsrc\/[\w./-]*\w/g)].map((m) => m[0]);
    expect(paths.length).toBeGreaterThan(10);
    expect([...new Set(paths)].filter((p) => !existsSync(new URL(p, root)))).toEqual([]);
  });

  it('orders the floors as the import checker does, and covers each of its floors', () => {
    const rows = floors();
    const checker = checkerFloors();
    expect(checker.length).toBeGreaterThan(8);
    const floorOf = (path: RegExp): number => {
      const row = rows.find((r) => pathsOf(r).some((p) => path.test(statSync(new URL(p, root)).isDirectory() ? `${p.replace(/\/?$/, '/')}x.ts` : p)));
      if (!row) throw new Error(`the checker's floor ${path} is not in docs/design.md`);
      return row.floor;
    };
    const numbers = checker.map((f) => floorOf(f.path));
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
  });
});
