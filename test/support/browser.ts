// Debian's Chromium (/usr/bin/chromium, headless) driven by playwright-core, for the console's
// browser tests and screenshot. Playwright never downloads a browser here: playwright-core has
// none, and the executable is always given.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Where Debian's `chromium` package puts the browser (.ci/run installs it). */
export const CHROMIUM = process.env.TIDINGS_CHROMIUM ?? '/usr/bin/chromium';

/** Flags for a quiet, offline-friendly headless run in a container. */
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export interface Browser {
  readonly context: BrowserContext;
  /** A new tab. */
  page(): Promise<Page>;
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

/** Throws (failing the suite, never skipping it) when Chromium is not installed. */
export function requireChromium(): void {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not at ${CHROMIUM}. Install it with \`apt-get install -y chromium\` (.ci/run does), or set TIDINGS_CHROMIUM.`);
}

/** Starts headless Chromium with a fresh profile in a temporary folder. */
export async function launchChromium(viewport = { width: 1200, height: 800 }): Promise<Browser> {
  requireChromium();
  const profile = mkdtempSync(join(tmpdir(), 'tidings-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport });
  return {
    context,
    page: () => context.newPage(),
    close: async () => {
      try {
        await context.close();
      } finally {
        rmSync(profile, { recursive: true, force: true });
      }
    },
  };
}
