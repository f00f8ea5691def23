// startConsole(): the node:http server of the console. Routes requests to the static UI and the
// JSON API (api.ts) behind the guards of security.ts; starts the pool sampler and the traffic
// recorder and stops them on close(). It never closes the transport: that is its owner's.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { hostname, networkInterfaces } from 'node:os';
import { redactUrlsIn } from '../core/transport-url.js';
import type { Transport } from '../index.js';
import { ConsoleApi, statusOf } from './api.js';
import { DriverInspector, PoolSampler } from './inspect.js';
import { CONSOLE_DEFAULTS, resolveConsoleOptions, type ConsoleOptions } from './options.js';
import { allowedHosts, checkHost, checkWrite, HttpError, readJsonBody, secretScrubber, SECURITY_HEADERS } from './security.js';
import { defaultUiDir, StaticFiles } from './static.js';
import { TrafficRecorder } from './traffic.js';

/** A running console, from {@link startConsole}. */
export interface ConsoleHandle {
  /** Where it listens, e.g. `http://127.0.0.1:8640/`. */
  readonly url: string;
  /** The token write requests need in `X-Tidings-Token`; only when started with `allowWrite`. */
  readonly token?: string;
  /** Stops listening (open connections are closed), sampling and recording. Idempotent; leaves the transport open. */
  close(): Promise<void>;
}

type Handler = (api: ConsoleApi, query: URLSearchParams) => unknown;

const READS: Readonly<Record<string, Handler>> = {
  '/api/overview': (api) => api.overview(),
  '/api/health': (api) => api.health(),
  '/api/topics': (api) => api.topics(),
  '/api/servers': (api, q) => api.servers(q),
  '/api/pools': (api, q) => api.pools(q),
  '/api/pools/history': (api, q) => api.poolHistory(q),
  '/api/dead-letters': (api, q) => api.deadLetters(q),
  '/api/dead-letters/body': (api, q) => api.deadLetterBody(q),
  '/api/traffic': (api) => api.traffic(),
};

const WRITES: Readonly<Record<string, (api: ConsoleApi, body: Record<string, unknown>) => Promise<unknown>>> = {
  '/api/dead-letters/replay': (api, body) => api.replay(body),
  '/api/dead-letters/purge': (api, body) => api.purge(body),
};

/**
 * Serves the console for `transport`: the single-page app and its JSON API (docs/console.md).
 * Binds `options.host` (loopback by default); read-only unless `options.allowWrite`, and then
 * every write needs the token. No response carries the URL's password or the token.
 *
 * Resolves once it listens. Rejects with InvalidArgument for a bad option, or with the listen
 * error (EADDRINUSE, ...) of node:http.
 */
export async function startConsole(transport: Transport, options: ConsoleOptions = {}): Promise<ConsoleHandle> {
  const resolved = resolveConsoleOptions(options);
  const logger = resolved.logger ?? transport.logger.child({ component: 'console' });
  const inspector = new DriverInspector(transport);
  const sampler = new PoolSampler(inspector, resolved.notificationTopics, resolved.pools, resolved.refreshMs, CONSOLE_DEFAULTS.historyMs, logger);
  const traffic = new TrafficRecorder(CONSOLE_DEFAULTS.historyMs);
  const api = new ConsoleApi({ transport, options: { ...resolved, logger }, inspector, sampler, traffic, version: packageVersion() });
  const scrub = secretScrubber([...transport.driver.url.hosts.map((h) => h.password), resolved.token]);
  const files = new StaticFiles(defaultUiDir());
  let hosts: ReadonlySet<string> = new Set();

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger.error('console: request failed', { err, path: pathOf(req) });
      if (!res.headersSent) sendJson(res, 500, { error: 'Internal error' });
      else res.destroy();
    });
  });
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;

  function sendJson(res: ServerResponse, status: number, value: unknown): void {
    const body = scrub(JSON.stringify(value));
    res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  }

  function fail(res: ServerResponse, err: unknown): void {
    const status = statusOf(err);
    if (status === 500) {
      logger.error('console: unexpected failure', { err });
      return sendJson(res, 500, { error: 'Internal error' });
    }
    if (status >= 500) logger.warn('console: API request failed', { status, err });
    sendJson(res, status, { error: redactUrlsIn((err as Error).message) });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = pathOf(req);
    const query = new URL(req.url ?? '/', 'http://console.invalid').searchParams;
    try {
      checkHost(req, hosts);
      if (path.startsWith('/api/')) return sendJson(res, 200, await route(req, path, query));
    } catch (err) {
      if (err instanceof HttpError && err.status === 413) res.setHeader('Connection', 'close');
      return fail(res, err);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...SECURITY_HEADERS, Allow: 'GET', 'Content-Type': 'text/plain; charset=utf-8' });
      return void res.end('Method not allowed\n');
    }
    const file = await files.get(path);
    if (file === undefined) {
      res.writeHead(404, { ...SECURITY_HEADERS, 'Content-Type': 'text/plain; charset=utf-8' });
      return void res.end('Not found\n');
    }
    res.writeHead(200, { ...SECURITY_HEADERS, 'Content-Type': file.type, 'Cache-Control': 'no-cache', 'Content-Length': file.body.length });
    res.end(req.method === 'HEAD' ? undefined : file.body);
  }

  async function route(req: IncomingMessage, path: string, query: URLSearchParams): Promise<unknown> {
    const read = READS[path];
    if (read !== undefined) {
      if (req.method !== 'GET') throw new HttpError(405, `${path} takes GET`);
      return read(api, query);
    }
    const write = WRITES[path];
    if (write === undefined) throw new HttpError(404, 'No such API endpoint');
    if (req.method !== 'POST') throw new HttpError(405, `${path} takes POST`);
    checkWrite(req, resolved.allowWrite, hosts, resolved.token);
    const body = await readJsonBody(req);
    const result = await write(api, body);
    logger.info('console: dead letters changed', { action: path.slice(path.lastIndexOf('/') + 1), address: body.address, result });
    return result;
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(resolved.port, resolved.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : resolved.port;
  hosts = hostsFor(resolved.host, port);
  traffic.start();
  sampler.start();
  const shown = resolved.host === '0.0.0.0' ? '127.0.0.1' : resolved.host === '::' ? '::1' : resolved.host;
  const url = `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}/`;
  logger.info('console: listening', { url, writable: resolved.allowWrite });

  let closed: Promise<void> | undefined;
  return {
    url,
    ...(resolved.allowWrite ? { token: resolved.token } : {}),
    close() {
      closed ??= (async () => {
        traffic.stop();
        await sampler.stop();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
      })();
      return closed;
    },
  };
}

/** The Host values of the console's own origin; a wildcard bind also answers to this machine's names and addresses. */
function hostsFor(host: string, port: number): ReadonlySet<string> {
  if (host !== '0.0.0.0' && host !== '::') return allowedHosts(host, port);
  const all = new Set(allowedHosts(host, port));
  const names = [hostname(), ...Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address))];
  for (const name of names) for (const h of allowedHosts(name, port)) all.add(h);
  return all;
}

function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** The package's version, from the package.json two folders up (dist/console/ or src/console/). */
function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return String(pkg.version);
  } catch {
    return 'unknown';
  }
}
