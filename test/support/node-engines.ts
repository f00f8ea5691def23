// Reads the `engines.node` ranges of package-lock.json: which Node versions a package and its
// dependencies accept, so the README's Node table and `npm i tidings` can be checked against npm's view.
import { readFileSync } from 'node:fs';

export type Version = readonly [number, number, number];

interface LockEntry {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  dependencies?: Record<string, string>;
  engines?: { node?: string };
}

export const LOCK = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as { packages: Record<string, LockEntry> };

function parse(text: string): Version | undefined {
  const m = /^v?(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?$/.exec(text);
  return m ? [Number(m[1]), Number(m[2]) || 0, Number(m[3]) || 0] : undefined;
}

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/**
 * Whether the semver `range` accepts `v`: the forms engines fields use (`||` alternatives of
 * space-separated `>=`, `>`, `<=`, `<`, `^`, `~` or exact comparators). Anything else throws, so a
 * new form is noticed rather than misread.
 */
export function accepts(range: string, v: Version): boolean {
  return range.split('||').some((alternative) => {
    const comparators = [...alternative.matchAll(/(\^|~|>=|<=|>|<|=)?\s*(v?\d+(?:\.[\dx*]+){0,2})/g)];
    if (comparators.length === 0 || alternative.replace(/(\^|~|>=|<=|>|<|=)?\s*(v?\d+(?:\.[\dx*]+){0,2})/g, '').trim() !== '') throw new Error(`cannot read the engines range ${JSON.stringify(range)}`);
    return comparators.every(([, op = '', text]) => {
      const w = parse(text!)!;
      const c = compare(v, w);
      switch (op) {
        case '>=': return c >= 0;
        case '>': return c > 0;
        case '<=': return c <= 0;
        case '<': return c < 0;
        case '^': return c >= 0 && v[0] === w[0];
        case '~': return c >= 0 && v[0] === w[0] && v[1] === w[1];
        default: return c === 0;
      }
    });
  });
}

/** The lock entries `npm i <name>` puts in place here: the package and its dependencies, by their path in the lock. */
export function installedWith(name: string): Map<string, LockEntry> {
  const found = new Map<string, LockEntry>();
  const visit = (dep: string, from: string): void => {
    // Node's lookup: node_modules/<dep> beside `from`, then in each folder above it.
    for (let base = from; ; base = base.replace(/\/?node_modules\/(?:@[^/]+\/)?[^/]+$/, '')) {
      const path = `${base ? `${base}/` : ''}node_modules/${dep}`;
      const entry = LOCK.packages[path];
      if (entry) {
        if (found.has(path)) return;
        found.set(path, entry);
        for (const next of Object.keys(entry.dependencies ?? {})) visit(next, path);
        return;
      }
      if (!base) throw new Error(`${dep} (needed by ${from || 'the package'}) is not in package-lock.json`);
    }
  };
  visit(name, '');
  return found;
}

/** The oldest Node version every engines range of `entries` accepts (candidates: the versions the ranges name). */
export function nodeFloor(entries: Iterable<LockEntry>): Version | undefined {
  const ranges = [...entries].flatMap((e) => (e.engines?.node ? [e.engines.node] : []));
  const candidates = ranges.flatMap((r) => [...r.matchAll(/\d+(?:\.\d+){0,2}/g)].map((m) => parse(m[0])!));
  return [[0, 0, 0] as Version, ...candidates].sort(compare).find((c) => ranges.every((r) => accepts(r, c)));
}

/** `22.19`, or `20` for 20.0.0. */
export function shortVersion(v: Version): string {
  return v[1] === 0 && v[2] === 0 ? String(v[0]) : v[2] === 0 ? `${v[0]}.${v[1]}` : v.join('.');
}
