// Every relative link in README.md and docs/ resolves to a file of this repository, a link to this
// repository on GitHub (blob/main) names a file of this checkout, and no link or path points outside
// it (a clone or an npm tarball has no ../shared/...), so the docs cannot rot.
import { existsSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { markdownFiles, proseOf, ROOT } from '../support/markdown.js';

interface Link {
  file: string;
  line: number;
  target: string;
}

const PATTERNS = [
  // [text](target "title") and ![alt](target)
  /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g,
  // [label]: target
  /^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/gm,
  // <a href="..."> and <img src="...">
  /\b(?:href|src)="([^"]+)"/g,
  // a path climbing out of its folder, linked or not (`../shared/reference/style.md`)
  /(?<![\w./])((?:\.\.\/)+[^\s`'")\]]*)/g,
];

function linksOf(file: string): Link[] {
  const text = proseOf(file);
  const links: Link[] = [];
  for (const pattern of PATTERNS) {
    for (const m of text.matchAll(pattern)) {
      links.push({ file, line: text.slice(0, m.index).split('\n').length, target: m[1] });
    }
  }
  return links;
}

/** This repository on GitHub: a link there names a file of this checkout, which must exist. */
const OWN_BLOB = 'https://github.com/tidings-js/tidings/blob/main/';

/** Why `link` is wrong, or undefined when it is fine. */
function problemOf(link: Link): string | undefined {
  const { target } = link;
  if (target.startsWith('#')) return undefined;
  if (target.startsWith(OWN_BLOB)) {
    const path = target.slice(OWN_BLOB.length).replace(/[#?].*$/, '');
    return existsSync(join(ROOT, decodeURI(path))) ? undefined : `points to ${path} of this repository, which does not exist`;
  }
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(target)?.[1].toLowerCase();
  if (scheme) return ['http', 'https', 'mailto'].includes(scheme) ? undefined : `uses the ${scheme}: scheme`;
  if (target.startsWith('/')) return 'is an absolute path (outside any clone)';
  const path = resolve(dirname(join(ROOT, link.file)), decodeURI(target.replace(/[#?].*$/, '')));
  if (!(path + sep).startsWith(ROOT)) return `leaves the repository (${relative(ROOT, path)})`;
  if (!existsSync(path)) return `points to ${relative(ROOT, path) || '.'}, which does not exist`;
  return undefined;
}

describe('links in README.md and docs/', () => {
  const files = markdownFiles();
  const links = files.flatMap(linksOf);

  it('finds the Markdown files and their links', () => {
    expect(files).toContain('README.md');
    expect(files).toContain('docs/guide.md');
    expect(files.some((f) => f.startsWith('docs/api/'))).toBe(false);
    expect(links.filter((l) => l.file === 'README.md' && !/^[a-z]+:/.test(l.target)).length).toBeGreaterThan(0);
  });

  it('every relative link resolves to a file inside the repository', () => {
    const problems = links.flatMap((l) => {
      const problem = problemOf(l);
      return problem ? [`${l.file}:${l.line}: ${l.target} ${problem}`] : [];
    });
    expect(problems).toEqual([]);
  });

  it("README's comparison table links every cell to the doc, issue or test that shows it", () => {
    const readme = proseOf('README.md');
    const section = readme.slice(readme.indexOf('## Compared with'), readme.indexOf('\n## ', readme.indexOf('## Compared with') + 1));
    const rows = section.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| |'));
    expect(rows.length).toBeGreaterThanOrEqual(6);
    const header = section.split('\n').find((l) => l.startsWith('| |'))!;
    expect(header.split('|').map((c) => c.trim())).toEqual(['', '', 'tidings', 'NestJS microservices', 'Moleculer', 'oslo.messaging (Python)', '']);
    const bare = rows.flatMap((row) => row.split('|').slice(2, -1).flatMap((cell, i) => (/\]\([^)\s]+\)/.test(cell) ? [] : [`${row.split('|')[1]!.trim()}, column ${i + 1}`])));
    expect(bare).toEqual([]);
  });

  it('flags a link out of the repository, a missing file and a file: URL', () => {
    expect(problemOf({ file: 'docs/design.md', line: 1, target: '../../shared/reference/style.md' })).toMatch(/leaves the repository/);
    expect(problemOf({ file: 'docs/design.md', line: 1, target: 'no-such-page.md' })).toMatch(/does not exist/);
    expect(problemOf({ file: 'README.md', line: 1, target: 'file:///etc/passwd' })).toMatch(/file: scheme/);
    expect(problemOf({ file: 'README.md', line: 1, target: '/work/shared/reference/oslo-wire.md' })).toMatch(/absolute path/);
    expect(problemOf({ file: 'README.md', line: 1, target: 'docs/guide.md#rpc-servers' })).toBeUndefined();
    expect(problemOf({ file: 'README.md', line: 1, target: `${OWN_BLOB}test/unit/no-such.test.ts` })).toMatch(/does not exist/);
    expect(problemOf({ file: 'README.md', line: 1, target: `${OWN_BLOB}test/unit/docs-links.test.ts#L1` })).toBeUndefined();
  });
});
