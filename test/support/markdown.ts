// The repository's Markdown as the docs tests see it: which files count (README.md and docs/,
// never the generated docs/api), their fenced code blocks, and their text outside code.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, with a trailing separator. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Generated, gitignored output: checked by `npm run docs`, not by these tests. */
const GENERATED = join(ROOT, 'docs', 'api');

/** README.md and every docs/**\/*.md, as paths relative to the root, sorted. */
export function markdownFiles(): string[] {
  const found = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory() && path !== GENERATED) walk(path);
      else if (entry.isFile() && entry.name.endsWith('.md')) found.push(relative(ROOT, path));
    }
  };
  walk(join(ROOT, 'docs'));
  return found.sort();
}

/** A fenced code block: ```` ```ts check ```` has lang `ts` and flags `['check']`. */
export interface CodeBlock {
  file: string;
  /** 1-based line of the first code line (after the opening fence). */
  line: number;
  lang: string;
  flags: string[];
  code: string;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

/** The fenced code blocks of `file` (relative to the root), in order. */
export function codeBlocks(file: string): CodeBlock[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]);
    if (!open) continue;
    const [lang = '', ...flags] = open[2].trim().split(/\s+/).filter(Boolean);
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = FENCE.exec(lines[j]);
      if (close && close[1][0] === open[1][0] && close[1].length >= open[1].length && close[2].trim() === '') break;
      body.push(lines[j]);
    }
    blocks.push({ file, line: i + 2, lang, flags, code: body.join('\n') + '\n' });
    i = j;
  }
  return blocks;
}

/** The text of `file` with every fenced block blanked out; line numbers stay the same. */
export function proseOf(file: string): string {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  let fence: string | undefined;
  return lines
    .map((line) => {
      const m = FENCE.exec(line);
      if (fence === undefined && m) {
        fence = m[1];
        return '';
      }
      if (fence !== undefined) {
        if (m && m[1][0] === fence[0] && m[1].length >= fence.length && m[2].trim() === '') fence = undefined;
        return '';
      }
      return line;
    })
    .join('\n');
}
