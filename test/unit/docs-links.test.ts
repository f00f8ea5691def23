// Every relative link in README.md and docs/ resolves to a file of this repository, and no link or
// path points outside it (a clone or an npm tarball has no ../shared/...), so the docs cannot rot.
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

/** Why `link` is wrong, or undefined when it is fine. */
function problemOf(link: Link): string | undefined {
  const { target } = link;
  if (target.startsWith('#')) return undefined;
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

  it('flags a link out of the repository, a missing file and a file: URL', () => {
    expect(problemOf({ file: 'docs/design.md', line: 1, target: '../../shared/reference/style.md' })).toMatch(/leaves the repository/);
    expect(problemOf({ file: 'docs/design.md', line: 1, target: 'no-such-page.md' })).toMatch(/does not exist/);
    expect(problemOf({ file: 'README.md', line: 1, target: 'file:///etc/passwd' })).toMatch(/file: scheme/);
    expect(problemOf({ file: 'README.md', line: 1, target: '/work/shared/reference/oslo-wire.md' })).toMatch(/absolute path/);
    expect(problemOf({ file: 'README.md', line: 1, target: 'docs/guide.md#rpc-servers' })).toBeUndefined();
  });
});
