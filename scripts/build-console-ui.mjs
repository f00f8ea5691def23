// Bundles the console's single-page app (console-ui/) into dist/console-ui/: index.html, app.js
// and app.css (Preact, uPlot and its CSS included, minified). Nothing is fetched at run time
// from anywhere but the console itself. Run by `npm run build` after tsc.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { build } from 'esbuild';

const root = new URL('../', import.meta.url);
const out = new URL('dist/console-ui/', root);
mkdirSync(out, { recursive: true });

await build({
  entryPoints: { app: new URL('console-ui/src/main.tsx', root).pathname },
  outdir: out.pathname,
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2022'],
  platform: 'browser',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  tsconfig: new URL('console-ui/tsconfig.json', root).pathname,
  legalComments: 'none',
  logLevel: 'warning',
});
copyFileSync(new URL('console-ui/index.html', root), new URL('index.html', out));

const files = readdirSync(out).sort().join(', ');
if (files !== 'app.css, app.js, index.html') throw new Error(`dist/console-ui holds ${files}, expected app.css, app.js, index.html`);
