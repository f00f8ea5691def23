// The console's guards: DNS rebinding (the Host header), cross-site writes (Origin,
// Sec-Fetch-Site, a JSON Content-Type, the token compared in constant time), bounded request
// bodies, the response headers every answer carries, and a last scrub of every secret.
import { timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** An answer the API gives instead of a result: status and message, sent as `{error}`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** Largest request body, bytes. */
export const MAX_BODY_BYTES = 64 * 1024;

/** Headers on every response. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'Content-Security-Policy': "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Resource-Policy': 'same-origin',
});

/** The names of the console's own origin: the bound host and the loopback names, each with the port. */
export function allowedHosts(boundHost: string, port: number): ReadonlySet<string> {
  const hosts = new Set<string>();
  const bracket = (h: string) => (h.includes(':') && !h.startsWith('[') ? `[${h}]` : h);
  const loopback = ['localhost', '127.0.0.1', '[::1]'];
  for (const h of [bracket(boundHost), ...loopback]) hosts.add(`${h.toLowerCase()}:${port}`);
  return hosts;
}

/**
 * Refuses a request whose Host is not the console's own (DNS rebinding: a hostile name that
 * resolves to 127.0.0.1 makes the browser send its own Host).
 * @throws HttpError 421 for a missing or foreign Host.
 */
export function checkHost(req: IncomingMessage, hosts: ReadonlySet<string>): void {
  const host = req.headers.host?.toLowerCase();
  if (host === undefined || !hosts.has(host)) throw new HttpError(421, 'Misdirected request: the Host header is not this console\'s address');
}

/**
 * The checks of a write request, in order: allowed at all (403), same origin (403), the token
 * (401), a JSON body (415). The token check runs before anything it could leak through timing.
 */
export function checkWrite(req: IncomingMessage, allowWrite: boolean, hosts: ReadonlySet<string>, token: string): void {
  if (!allowWrite) throw new HttpError(403, 'The console is read-only: start it with --allow-write (allowWrite: true) to replay or purge');
  const origin = req.headers.origin;
  if (origin !== undefined && !sameOrigin(origin, hosts)) throw new HttpError(403, 'Cross-origin write refused');
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') throw new HttpError(403, 'Cross-site write refused (Sec-Fetch-Site)');
  const given = req.headers['x-tidings-token'];
  if (typeof given !== 'string' || !tokensEqual(given, token)) throw new HttpError(401, 'Missing or wrong X-Tidings-Token');
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') throw new HttpError(415, 'Content-Type must be application/json');
}

function sameOrigin(origin: string, hosts: ReadonlySet<string>): boolean {
  const m = /^http:\/\/([^/]+)$/i.exec(origin);
  return m !== null && hosts.has(m[1].toLowerCase());
}

/** Constant-time comparison of two tokens of any lengths (their hashes are compared). */
export function tokensEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b) && given.length === expected.length;
}

/**
 * Reads a JSON object body of at most MAX_BODY_BYTES.
 * @throws HttpError 413 past the limit, 400 for anything but a JSON object.
 */
export async function readJsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) throw new HttpError(413, `Request body larger than ${MAX_BODY_BYTES} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `Request body larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  let value: unknown;
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'The body is not valid JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new HttpError(400, 'The body must be a JSON object');
  return value as Record<string, unknown>;
}

/**
 * Replaces every secret (the URL's passwords, raw and percent-encoded, and the token) in `text`
 * by `***`: the last line of defence under every response, whatever a driver or payload says.
 */
export function secretScrubber(secrets: ReadonlyArray<string | undefined>): (text: string) => string {
  const all = new Set<string>();
  for (const s of secrets) {
    if (s === undefined || s.length < 3) continue;
    all.add(s);
    all.add(encodeURIComponent(s));
    all.add(JSON.stringify(s).slice(1, -1));
  }
  const list = [...all].sort((a, b) => b.length - a.length);
  if (list.length === 0) return (text) => text;
  return (text) => {
    let out = text;
    for (const s of list) if (out.includes(s)) out = out.split(s).join('***');
    return out;
  };
}
