// Property test (issue 6): generated passwords, raw and percent-encoded, in single- and
// multi-host URLs, never show up in an error, a rendering of a URL/transport/error, or a log line.
import { createServer } from 'node:net';
import { inspect } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { InvalidTransportURL } from '../../src/core/errors.js';
import { createMemoryLogger, errorReplacer, type MemoryLogger } from '../../src/core/logger.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcTransport } from '../../src/transport.js';
import { TransportURL } from '../../src/core/transport-url.js';
import { uniqueName } from '../../src/testing/wait.js';

/** Fixed so that a failure reproduces; change it to explore other passwords. */
const SEED = 0x6_5ec7e7;
/** Shortest piece of a password that must never be shown. */
const PIECE = 6;

function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = mulberry32(SEED);
const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)];

// Not hex digits: a raw '%' before the marker never forms a valid escape by chance.
const MARKER_LETTERS = [...'ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ'];
const SPECIALS = ['@', '/', ':', '?', '#', '%', ','];
const PRINTABLE = Array.from({ length: 95 }, (_, i) => String.fromCharCode(0x20 + i));
// BMP letters, a combining mark, a zero-width joiner, and astral code points (emoji, Gothic, music, CJK ext. B).
const UNICODE = [...'éßøЖжλ中文字日本語한국어', '\u0301', '\u200d', '\u{1F600}', '\u{1F512}', '\u{10348}', '\u{1D11E}', '\u{20BB7}'];

const marker = () => Array.from({ length: 10 }, () => pick(MARKER_LETTERS)).join('');
const randomText = (alphabet: readonly string[], n: number) => Array.from({ length: n }, () => pick(alphabet)).join('');
const insertAt = (s: string, i: number, piece: string) => s.slice(0, i) + piece + s.slice(i);

interface PasswordCase {
  readonly family: string;
  readonly password: string;
}

function generatePasswords(): PasswordCase[] {
  const out: PasswordCase[] = [];
  for (const c of SPECIALS) {
    const base = marker() + randomText(MARKER_LETTERS, 2);
    for (let i = 0; i <= base.length; i++) out.push({ family: `"${c}" at ${i}`, password: insertAt(base, i, c) });
  }
  const everyChar = [...PRINTABLE].sort(() => rand() - 0.5).join('');
  out.push({ family: 'all printable ASCII', password: insertAt(everyChar, int(0, everyChar.length), marker()) });
  for (let i = 0; i < 150; i++) {
    const text = randomText(PRINTABLE, int(2, 24));
    out.push({ family: 'printable ASCII', password: insertAt(text, int(0, text.length), marker()) });
  }
  for (let i = 0; i < 80; i++) {
    const chars = [...randomText([...UNICODE, ...PRINTABLE.slice(16, 26)], int(2, 16))];
    chars.splice(int(0, chars.length), 0, marker());
    out.push({ family: 'unicode', password: chars.join('') });
  }
  return out;
}

type Shape = 'single' | 'multi' | 'ipv6' | 'query';

interface UrlCase {
  readonly password: PasswordCase;
  readonly shape: Shape;
  readonly encoded: boolean;
  readonly url: string;
}

function buildUrl(scheme: string, shape: Shape, text: string, port: number): string {
  switch (shape) {
    case 'single':
      return `${scheme}://user:${text}@127.0.0.1:${port}/`;
    case 'multi':
      return `${scheme}://other:x@127.0.0.1:${port},user:${text}@127.0.0.1:${port}/vh`;
    case 'ipv6':
      return `${scheme}://user:${text}@[::1]:${port}/`;
    case 'query':
      return `${scheme}://127.0.0.1:${port}/?password=${text}`;
  }
}

const HOSTS_OF: Record<Shape, number> = { single: 1, multi: 2, ipv6: 1, query: 1 };

function passwordIn(u: TransportURL, shape: Shape): string | undefined {
  return shape === 'query' ? u.query.password : u.hosts.at(-1)?.password;
}

/** Every PIECE-long substring of the password as it could be shown: raw, percent-encoded, JSON-escaped. */
function piecesOf(password: string): Set<string> {
  const pieces = new Set<string>();
  for (const form of [password, encodeURIComponent(password), JSON.stringify(password).slice(1, -1)]) {
    for (let i = 0; i + PIECE <= form.length; i++) pieces.add(form.slice(i, i + PIECE));
  }
  return pieces;
}

function findLeak(text: string, pieces: ReadonlySet<string>): string | undefined {
  for (let i = 0; i + PIECE <= text.length; i++) {
    const piece = text.slice(i, i + PIECE);
    if (pieces.has(piece)) return piece;
  }
  return undefined;
}

function renderError(err: unknown): string {
  const parts = [inspect(err, { depth: Infinity }), JSON.stringify(err, errorReplacer) ?? ''];
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++) {
    parts.push(e.message, String(e.stack), String(e), JSON.stringify(e) ?? '');
    for (const key of Reflect.ownKeys(e)) parts.push(inspect((e as unknown as Record<PropertyKey, unknown>)[key], { depth: Infinity }));
  }
  return parts.join('\n');
}

function renderUrl(u: TransportURL): string {
  return [u.toString(), String(u), `${u}`, JSON.stringify(u), JSON.stringify({ u }), inspect(u, { depth: Infinity }), inspect({ nested: { u } }), u.format({ redact: true })].join('\n');
}

/** What a console logger would write, plus the records as an inspecting test runner shows them. */
function renderRecords(logger: MemoryLogger): string {
  const lines = logger.records.map((r) => JSON.stringify({ level: r.level, msg: r.msg, ...r.fields }, errorReplacer));
  return [...lines, inspect(logger.records, { depth: Infinity })].join('\n');
}

/** A loopback port nothing listens on: connections to it are refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A raw password holding '@' and then ',' can turn the URL into a well-formed URL with more
 * hosts (`user:x@h,u2:y@127.0.0.1` is two hosts); no parser can tell, so TSDoc tells users
 * to percent-encode. Only such a reading may differ from the password without an error.
 */
const mayReadAsMoreHosts = (p: string) => /@[^/?#]*,/.test(p);
/** A raw case whose URL parses as the documented more-hosts reading (skipped by the leak checks). */
function readsAsMoreHosts(c: UrlCase): boolean {
  if (c.encoded || c.shape === 'query' || !mayReadAsMoreHosts(c.password.password)) return false;
  try {
    return TransportURL.parse(c.url).hosts.length > HOSTS_OF[c.shape];
  } catch {
    return false;
  }
}
const hasEscape = (p: string) => /%[0-9A-Fa-f]{2}/.test(p);
const decodedOrSelf = (p: string) => {
  try {
    return decodeURIComponent(p);
  } catch {
    return p;
  }
};

describe('transport URL secrets (property test, seed ' + SEED.toString(16) + ')', () => {
  const passwords = generatePasswords();
  let port = 0;
  let cases: UrlCase[] = [];

  beforeAll(async () => {
    port = await closedPort();
    cases = [];
    for (const password of passwords) {
      for (const shape of ['single', 'multi', 'ipv6', 'query'] as const) {
        for (const encoded of [true, false]) {
          // Query syntax owns raw '&' and '+': only percent-encoded values are meaningful there.
          if (shape === 'query' && !encoded && /[&+]/.test(password.password)) continue;
          const text = encoded ? encodeURIComponent(password.password) : password.password;
          cases.push({ password, shape, encoded, url: buildUrl(pick(['rabbit', 'amqp', 'memory']), shape, text, port) });
        }
      }
    }
  });

  it('generates a few hundred distinctive passwords covering every family', () => {
    expect(passwords.length).toBeGreaterThanOrEqual(300);
    for (const c of SPECIALS) expect(passwords.filter((p) => p.family.startsWith(`"${c}" at`)).length).toBe(13);
    expect(passwords.some((p) => /[\u{10000}-\u{10FFFF}]/u.test(p.password))).toBe(true);
    expect(new Set(passwords.map((p) => p.password)).size).toBe(passwords.length);
    for (const scheme of ['rabbit', 'amqp', 'memory']) expect(cases.filter((c) => c.url.startsWith(`${scheme}://`)).length).toBeGreaterThan(500);
  });

  it('the leak detector finds a password piece in any rendering (so the checks below can fail)', () => {
    const p = passwords[0].password;
    expect(findLeak(inspect({ p }), piecesOf(p))).toBeDefined();
    expect(findLeak(`x${encodeURIComponent(p).slice(2, 2 + PIECE)}x`, piecesOf(p))).toBeDefined();
    expect(findLeak(renderError(new Error('outer', { cause: new Error(p) })), piecesOf(p))).toBeDefined();
  });

  it('parse yields the exact password or throws InvalidTransportURL; no rendering shows any piece of it', () => {
    const problems: string[] = [];
    const counts = { exact: 0, refused: 0, escape: 0, moreHosts: 0 };
    for (const c of cases) {
      const { password } = c.password;
      const pieces = piecesOf(password);
      const where = `${c.password.family} ${c.encoded ? 'encoded' : 'raw'} ${c.shape} ${JSON.stringify(c.url)}`;
      let rendered: string;
      try {
        const u = TransportURL.parse(c.url);
        const got = passwordIn(u, c.shape);
        if (got === password) counts.exact++;
        else if (!c.encoded && hasEscape(password) && got === decodedOrSelf(password)) counts.escape++;
        else if (readsAsMoreHosts(c)) {
          counts.moreHosts++;
          continue;
        } else problems.push(`mis-parsed ${where}`);
        rendered = renderUrl(u);
      } catch (err) {
        if (!(err instanceof InvalidTransportURL)) problems.push(`threw ${String(err)} for ${where}`);
        if (c.encoded) problems.push(`refused the encoded form ${where}: ${(err as Error).message}`);
        counts.refused++;
        rendered = renderError(err);
      }
      const leak = findLeak(rendered, pieces);
      if (leak !== undefined) problems.push(`showed ${JSON.stringify(leak)} for ${where}`);
    }
    expect(problems.slice(0, 20)).toEqual([]);
    // Both outcomes occur: encoded forms parse, ambiguous raw forms are refused.
    expect(counts.exact).toBeGreaterThan(cases.length / 2);
    expect(counts.refused).toBeGreaterThan(cases.length / 8);
    // The documented indistinguishable reading stays rare.
    expect(counts.moreHosts).toBeLessThan(cases.length / 100);
  });

  it('opening memory:// transports and calling on them logs and throws nothing of the password', async () => {
    const problems: string[] = [];
    const chosen = cases.filter((c) => c.url.startsWith('memory:') && c.shape !== 'ipv6').filter((_, i) => i % 3 === 0);
    expect(chosen.length).toBeGreaterThan(50);
    for (const c of chosen) {
      const leak = await exerciseTransport(c, { timeout: 20 });
      if (leak) problems.push(leak);
    }
    expect(problems.slice(0, 20)).toEqual([]);
  }, 120_000);

  it('rabbit/amqp against a closed loopback port: connection errors, timeouts and their logs hold nothing of the password', async () => {
    const problems: string[] = [];
    const chosen = cases.filter((c) => /^(rabbit|amqp):/.test(c.url) && c.shape !== 'ipv6').filter((_, i) => i % 25 === 0);
    expect(chosen.length).toBeGreaterThanOrEqual(12);
    let i = 0;
    for (const c of chosen) {
      // Alternate: no retry (MessageDeliveryFailure with the socket error as cause) and a call timeout while reconnecting.
      const leak = await exerciseTransport(c, i++ % 2 === 0 ? { timeout: 2000, retry: 0 } : { timeout: 300 });
      if (leak) problems.push(leak);
    }
    expect(problems.slice(0, 20)).toEqual([]);
  }, 120_000);
});

/** Opens a transport on the case's URL, makes one call, cleans up; returns a description of any leak. */
async function exerciseTransport(c: UrlCase, clientOptions: { timeout: number; retry?: number }): Promise<string | undefined> {
  if (readsAsMoreHosts(c)) return undefined;
  const pieces = piecesOf(c.password.password);
  const where = `${c.password.family} ${c.encoded ? 'encoded' : 'raw'} ${c.shape} ${JSON.stringify(c.url)}`;
  const logger = createMemoryLogger();
  const rendered: string[] = [];
  try {
    const transport = await getRpcTransport(c.url, { logger });
    try {
      // The driver's own fields too (options, hosts, connection state), as a debugging user would dump them.
      rendered.push(transport.url, String(transport), inspect(transport, { depth: Infinity }), JSON.stringify(transport), transport.driver.toString(), inspect(transport.driver, { depth: 4 }));
      try {
        await getRpcClient(transport, { topic: uniqueName() }, clientOptions).call({}, 'ping', {});
        return `call unexpectedly succeeded for ${where}`;
      } catch (err) {
        rendered.push(renderError(err));
      }
    } finally {
      await transport.cleanup();
    }
  } catch (err) {
    if (!(err instanceof InvalidTransportURL) || (c.encoded && c.shape !== 'query')) return `unexpected ${String(err)} for ${where}`;
    rendered.push(renderError(err));
  }
  rendered.push(renderRecords(logger));
  const leak = findLeak(rendered.join('\n'), pieces);
  return leak === undefined ? undefined : `showed ${JSON.stringify(leak)} for ${where}`;
}
