// The relative links of the Markdown the package ships (README.md, docs/*.md), checked against
// the files of the tarball: a link that works on GitHub but not in node_modules/tidings is dead.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';
import { proseOf, ROOT } from '../support/markdown.js';

const LINK_PATTERNS = [
  // [text](target "title") and ![alt](target)
  /!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g,
  // [label]: target
  /^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/gm,
  // <a href="..."> and <img src="...">
  /\b(?:href|src)="([^"]+)"/g,
];

/** `file:line: target` for each relative link of the shipped Markdown that leads to no packed file or folder. */
export function linksLeavingThePackage(packed: readonly string[]): string[] {
  const files = new Set(packed);
  const folders = new Set(packed.flatMap((p) => p.split('/').slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join('/'))));
  const problems: string[] = [];
  for (const file of packed.filter((p) => p.endsWith('.md'))) {
    const text = proseOf(file);
    for (const pattern of LINK_PATTERNS) {
      for (const m of text.matchAll(pattern)) {
        const target = m[1];
        if (target.startsWith('#') || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const path = posix.normalize(posix.join(posix.dirname(file), decodeURI(target.replace(/[#?].*$/, '')))).replace(/\/$/, '');
        if (!files.has(path) && !folders.has(path)) problems.push(`${file}:${text.slice(0, m.index).split('\n').length}: ${target}`);
      }
    }
  }
  return problems;
}

/** The repository's files a `files` list of package.json selects (a folder, `folder/*.ext`, or a file), as npm packs them. */
export function selectedBy(entries: readonly string[]): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(`${dir}/${e.name}`) : [`${dir}/${e.name}`]));
  return entries.flatMap((entry) => {
    const glob = /^(.+)\/\*(\.\w+)$/.exec(entry);
    if (glob) return readdirSync(join(ROOT, glob[1]), { withFileTypes: true }).filter((e) => e.isFile() && e.name.endsWith(glob[2])).map((e) => `${glob[1]}/${e.name}`);
    if (!existsSync(join(ROOT, entry))) return [];
    return statSync(join(ROOT, entry)).isDirectory() ? walk(entry) : [entry];
  });
}
