// The single-page app's files, built into dist/console-ui/ by scripts/build-console-ui.mjs and
// served from there (nothing is loaded from outside the machine). Without a build, `/` answers
// with a short page that says so.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

/** A file name under /assets/: no directories, no dot files, a known extension. */
const ASSET = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$/;

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tidings console</title></head>
<body><h1>tidings console</h1>
<p>The console's web UI was not built (dist/console-ui/ is missing). Run <code>npm run build</code> in the
tidings checkout. The JSON API works without it: try <a href="api/overview">api/overview</a>.</p>
</body></html>
`;

/** A file to send: its bytes and its Content-Type. */
export interface StaticFile {
  readonly body: Buffer;
  readonly type: string;
}

/**
 * The folder of the built UI: `dist/console-ui/` next to this module's folder in the package
 * (dist/console/ -> dist/console-ui/), or, running from src/ (tests), the built one in dist/.
 */
export function defaultUiDir(): string | undefined {
  for (const rel of ['../console-ui/', '../../dist/console-ui/']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(dir + 'index.html')) return dir;
  }
  return undefined;
}

/** Serves `/` and `/assets/<file>` from `dir`; undefined for anything else (a 404). */
export class StaticFiles {
  constructor(private readonly dir: string | undefined) {}

  /** The file for a request path, or undefined when there is none. */
  async get(path: string): Promise<StaticFile | undefined> {
    if (path === '/' || path === '/index.html') {
      if (this.dir === undefined) return { body: Buffer.from(NOT_BUILT), type: TYPES['.html'] };
      return this.read('index.html');
    }
    if (!path.startsWith('/assets/') || this.dir === undefined) return undefined;
    const name = path.slice('/assets/'.length);
    if (!ASSET.test(name) || name.includes('..')) return undefined;
    return (await this.read(`assets/${name}`)) ?? this.read(name);
  }

  private async read(rel: string): Promise<StaticFile | undefined> {
    const dot = rel.lastIndexOf('.');
    const type = dot < 0 ? undefined : TYPES[rel.slice(dot)];
    if (type === undefined) return undefined;
    try {
      return { body: await readFile(this.dir + rel), type };
    } catch {
      return undefined;
    }
  }
}
