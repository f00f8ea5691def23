// Parse, format and redact transport URLs as oslo's TransportURL does, except that text a
// password with an unencoded `@ / ? # ,` could also produce is refused instead of guessed at:
// driver://[user:pass@]host:port[,[user2:pass2@]host2:port2]/virtual_host?k=v
import { InvalidTransportURL } from './errors.js';
import { REDACTED, SECRET_KEY_PATTERN } from './secrets.js';

/** One `[user:pass@]host[:port]` entry of a transport URL, percent-decoded. */
export interface TransportHost {
  /** Host name or IP address (IPv6 without brackets); absent means the driver's default. */
  readonly hostname?: string;
  /** Absent means the driver's default port. */
  readonly port?: number;
  /** Absent when the entry has no `user@`. */
  readonly username?: string;
  /** Absent without `:pass`; `''` for `user:@host`. Never shown by `toString()`. */
  readonly password?: string;
}


/** A parsed transport URL. Immutable; `toString()` never shows a password. */
export class TransportURL {
  /** The scheme, lower-cased, e.g. `rabbit`. */
  readonly scheme: string;
  /** Host entries in URL order; empty for e.g. `rabbit://` (the driver's default host). */
  readonly hosts: readonly TransportHost[];
  /** `undefined` when the URL has no path; `''` for a bare `/` (broker default vhost). */
  readonly virtualHost?: string;
  /** Query parameters; a repeated key's values are joined with `,` (as oslo). */
  readonly query: Readonly<Record<string, string>>;

  private constructor(scheme: string, hosts: TransportHost[], virtualHost: string | undefined, query: Record<string, string>) {
    this.scheme = scheme;
    this.hosts = Object.freeze(hosts.map((h) => Object.freeze({ ...h })));
    this.virtualHost = virtualHost;
    this.query = Object.freeze({ ...query });
    Object.freeze(this);
  }

  /** The part of the scheme before `+` (oslo: `kombu+memory` selects driver `kombu`). */
  get driver(): string {
    return this.scheme.split('+')[0];
  }

  /**
   * Parses `driver://[user:pass@]host[:port][,[user:pass@]host[:port]...][/vhost][?k=v&...]`.
   *
   * User names, passwords, the virtual host and query values MUST be percent-encoded
   * (`encodeURIComponent(password)`). A URL whose raw text could also be read as a password
   * holding an unencoded `@ / ? # ,` is refused with `InvalidTransportURL` rather than guessed
   * at: an `@` after the host part, two `@` in one host entry, a host entry without
   * credentials before one with them, or a `#` anywhere. Credentials without a host are
   * refused too; a bare `rabbit://` keeps meaning the driver's default host. Error messages
   * show the URL only through {@link redactString}.
   *
   * Two raw forms are valid URLs of something else, so they cannot be refused: `%` followed
   * by two hex digits is an escape, and a password like `x@host,u2:y` makes
   * `user:x@host,u2:y@broker` a two-host URL. Encoding the password avoids both.
   */
  static parse(url: string | TransportURL): TransportURL {
    if (url instanceof TransportURL) return url;
    if (typeof url !== 'string') throw new InvalidTransportURL(`Transport URL must be a string, received ${typeof url}`);
    const schemeEnd = url.indexOf('://');
    const schemeOnly = url.match(/^([A-Za-z][A-Za-z0-9+.-]*):\/?$/);
    if (schemeOnly) return new TransportURL(schemeOnly[1].toLowerCase(), [], undefined, {});
    if (schemeEnd <= 0) throw invalid(url, 'no scheme (expected e.g. rabbit://host:5672/)');
    const scheme = url.slice(0, schemeEnd).toLowerCase();
    // Not echoed: text before a misplaced '://' may be `user:password@host`.
    if (!/^[a-z][a-z0-9+.-]*$/.test(scheme)) {
      throw new InvalidTransportURL(`Invalid transport URL scheme: expected a letter followed by letters, digits, "+", "-" or "." before "://" (e.g. rabbit://host:5672/)`);
    }
    const rest = url.slice(schemeEnd + 3);
    const authorityEnd = rest.search(/[/?#]/);
    const authority = authorityEnd >= 0 ? rest.slice(0, authorityEnd) : rest;
    const tail = authorityEnd >= 0 ? rest.slice(authorityEnd) : '';
    refuseAmbiguousTail(tail, url);
    const q = tail.indexOf('?');
    const path = q >= 0 ? tail.slice(0, q) : tail;
    const query = q >= 0 ? parseQuery(tail.slice(q + 1), url) : {};
    const virtualHost = path ? decode(path.slice(1), url, 'the virtual host') : undefined;
    return new TransportURL(scheme, authority ? parseHosts(authority, url) : [], virtualHost, query);
  }

  /** The full URL with real credentials. Only for handing to a broker library, never for logs. */
  format(options: { redact?: boolean } = {}): string {
    const netloc = this.hosts
      .map((h) => {
        let cred = '';
        if (h.username !== undefined || h.password !== undefined) {
          cred = encodeURIComponent(h.username ?? '');
          if (h.password !== undefined) cred += ':' + (options.redact ? REDACTED : encodeURIComponent(h.password));
          cred += '@';
        }
        const host = h.hostname === undefined ? '' : h.hostname.includes(':') ? `[${h.hostname}]` : h.hostname;
        return cred + host + (h.port !== undefined ? `:${h.port}` : '');
      })
      .join(',');
    let out = `${this.scheme}://${netloc}`;
    if (this.virtualHost !== undefined) out += '/' + encodeURIComponent(this.virtualHost);
    const entries = Object.entries(this.query);
    if (entries.length) {
      out += '?' + entries.map(([k, v]) => `${encodeURIComponent(k)}=${options.redact && isSecretKey(k) ? REDACTED : encodeURIComponent(v)}`).join('&');
    }
    return out;
  }

  /** Redacted: passwords (and secret-looking query values) replaced by `***`. */
  toString(): string {
    return this.format({ redact: true });
  }

  /** The redacted URL, so JSON and logs never carry a password. */
  toJSON(): string {
    return this.toString();
  }

  /** `util.inspect` and `console.log` show the redacted form too. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `TransportURL<${this.toString()}>`;
  }
}

/**
 * Redacts a URL-looking string that may not even parse; every error message shows a URL only
 * through this. A password may hold `@ / ? # , :` unencoded, so everything from the first `:`
 * after `://` to the LAST `@` is hidden (only the first user name survives). Without any `@`,
 * a non-numeric "port" is hidden (a password whose `@host` is missing). Values of
 * secret-looking query keys (`SECRET_KEY_PATTERN`: password, token, api_key, ...) are hidden up to the next `&`.
 */
export function redactString(url: string): string {
  const schemeEnd = url.indexOf('://');
  const start = schemeEnd >= 0 ? schemeEnd + 3 : 0;
  const hidden: Array<[number, number]> = [];
  const lastAt = url.lastIndexOf('@');
  if (lastAt >= start) {
    const colon = url.indexOf(':', start);
    if (colon >= 0 && colon < lastAt) hidden.push([colon + 1, lastAt]);
  } else {
    const authorityEnd = url.slice(start).search(/[/?#]/);
    const authority = url.slice(start, authorityEnd >= 0 ? start + authorityEnd : url.length);
    let pos = start;
    for (const entry of authority.split(',')) {
      const colon = entry.startsWith('[') ? -1 : entry.indexOf(':');
      if (colon >= 0 && !/^\d*$/.test(entry.slice(colon + 1))) hidden.push([pos + colon + 1, pos + entry.length]);
      pos += entry.length + 1;
    }
  }
  for (const m of url.matchAll(/[?&]([^=&]*)=([^&]*)/g)) {
    if (isSecretKey(m[1]) || isSecretKey(decodeLeniently(m[1]))) hidden.push([m.index + m[0].length - m[2].length, m.index + m[0].length]);
  }
  return hideRanges(url, hidden);
}

/** Redacts every `scheme://...` in free text (a broker library's error message, say). */
export function redactUrlsIn(text: string): string {
  return text.replace(/[A-Za-z][A-Za-z0-9+.-]*:\/\/\S*/g, (url) => redactString(url));
}

function hideRanges(text: string, ranges: Array<[number, number]>): string {
  if (ranges.length === 0) return text;
  ranges.sort((a, b) => a[0] - b[0]);
  let out = '';
  let pos = 0;
  let [from, to] = ranges[0];
  for (const [s, e] of ranges.slice(1)) {
    if (s <= to) {
      to = Math.max(to, e);
      continue;
    }
    out += text.slice(pos, from) + REDACTED;
    pos = to;
    [from, to] = [s, e];
  }
  return out + text.slice(pos, from) + REDACTED + text.slice(to);
}

function isSecretKey(key: string): boolean {
  return SECRET_KEY_PATTERN.test(key);
}

function decodeLeniently(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Raw text of a host name (DNS names, IPv4, internationalised names) and of a bracketed IPv6 address with its zone. */
const HOSTNAME_TEXT = /^(?:[\p{L}\p{N}._~-]|%[0-9A-Fa-f]{2})+$/u;
const IPV6_TEXT = /^[0-9A-Fa-f:.]+(?:%25[\w.~-]+)?$/;

const ENCODE_HINT = 'percent-encode the user name and password (e.g. encodeURIComponent(password))';

function invalid(url: string, why: string): InvalidTransportURL {
  return new InvalidTransportURL(`Invalid transport URL ${redactString(url)}: ${why}`);
}

/** Refuses path/query text that a password with an unencoded `/ ? # @` would also produce. */
function refuseAmbiguousTail(tail: string, url: string): void {
  if (tail.includes('@')) {
    throw invalid(url, `an "@" after the host part is ambiguous: a password holding an unencoded "/", "?", "#" or "@" reads the same; ${ENCODE_HINT}, and write "@" in the virtual host or query as %40`);
  }
  if (tail.includes('#')) {
    throw invalid(url, 'a "#" is not allowed: a transport URL has no fragment, and an unencoded "#" in a password or query value would cut it short; percent-encode it as %23');
  }
}

function parseHosts(authority: string, url: string): TransportHost[] {
  const entries = authority.split(',');
  const label = (i: number) => (entries.length === 1 ? 'the host part' : `host entry ${i + 1} of ${entries.length}`);
  entries.forEach((entry, i) => {
    if (entry.indexOf('@') !== entry.lastIndexOf('@')) {
      throw invalid(url, `${label(i)} has more than one "@": a user name or password holding an unencoded "@" is ambiguous; ${ENCODE_HINT}`);
    }
  });
  const lastWithCredentials = entries.findLastIndex((e) => e.includes('@'));
  const bare = entries.findIndex((e, i) => i < lastWithCredentials && !e.includes('@'));
  if (bare >= 0) {
    // `u:a,b@h` is also hosts `u:a` and `b@h`: a password holding an unencoded ','.
    throw invalid(url, `${label(bare)} has no credentials but a later one has, which is also how a password holding an unencoded "," reads; ${ENCODE_HINT} (',' is %2C) and put hosts with credentials first`);
  }
  const hasPassword = (e: string) => e.includes('@') && e.slice(0, e.indexOf('@')).includes(':');
  const firstPassword = entries.findIndex(hasPassword);
  const userOnly = firstPassword < 0 ? -1 : entries.findIndex((e, i) => i > firstPassword && e.includes('@') && !hasPassword(e));
  if (userOnly >= 0) {
    // `u:a@h,b@h2` is also one host whose password `a@h,b` holds an unencoded '@' and ','.
    throw invalid(url, `${label(userOnly)} has a user name but no password after a host with one, which is also how a password holding an unencoded "@" and "," reads; ${ENCODE_HINT} and give that user its password`);
  }
  return entries.map((entry, i) => parseHost(entry, label(i), url));
}

function parseHost(part: string, label: string, url: string): TransportHost {
  let username: string | undefined;
  let password: string | undefined;
  let hostPort = part;
  const at = part.indexOf('@');
  if (at >= 0) {
    const cred = part.slice(0, at);
    hostPort = part.slice(at + 1);
    const colon = cred.indexOf(':');
    username = decode(colon >= 0 ? cred.slice(0, colon) : cred, url, `the user name of ${label}`);
    if (colon >= 0) password = decode(cred.slice(colon + 1), url, `the password of ${label}`);
  }
  let hostname: string | undefined;
  let portText: string | undefined;
  if (hostPort.startsWith('[')) {
    const close = hostPort.indexOf(']');
    if (close < 0) throw invalid(url, `unterminated IPv6 address in ${label}`);
    hostname = hostPort.slice(1, close);
    const after = hostPort.slice(close + 1);
    if (after && !after.startsWith(':')) throw invalid(url, `junk after the IPv6 address in ${label} (expected [address]:port)`);
    portText = after ? after.slice(1) : undefined;
  } else {
    const colon = hostPort.lastIndexOf(':');
    if (colon >= 0 && hostPort.indexOf(':') !== colon) throw invalid(url, `IPv6 addresses must be in brackets (${label})`);
    hostname = colon >= 0 ? hostPort.slice(0, colon) : hostPort;
    portText = colon >= 0 ? hostPort.slice(colon + 1) : undefined;
  }
  if (hostname === '') hostname = undefined;
  // Not echoed: with an unencoded '@' and ',' in a password, a piece of it lands here.
  if (hostname !== undefined && !(hostPort.startsWith('[') ? IPV6_TEXT : HOSTNAME_TEXT).test(hostname)) {
    throw invalid(url, `bad host name in ${label} (expected letters, digits, ".", "-", "_" or a bracketed IPv6 address)`);
  }
  if (hostname === undefined && at >= 0) {
    throw invalid(url, `${label} has credentials but no host (expected user:password@host[:port]; only a URL without credentials, e.g. rabbit://, means the driver's default host)`);
  }
  let port: number | undefined;
  if (portText !== undefined && portText !== '') {
    if (!/^\d+$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
      throw invalid(url, `bad port in ${label} (expected an integer 1-65535)`);
    }
    port = Number(portText);
  }
  const host: { -readonly [K in keyof TransportHost]: TransportHost[K] } = {};
  if (hostname !== undefined) host.hostname = decode(hostname, url, `the host name of ${label}`);
  if (port !== undefined) host.port = port;
  if (username !== undefined) host.username = username;
  if (password !== undefined) host.password = password;
  return host;
}

function parseQuery(text: string, url: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of text.split('&')) {
    if (!pair) continue;
    const eq = pair.indexOf('=');
    const key = decode((eq >= 0 ? pair.slice(0, eq) : pair).replace(/\+/g, ' '), url, 'a query key');
    const value = decode((eq >= 0 ? pair.slice(eq + 1) : '').replace(/\+/g, ' '), url, `the value of query key ${JSON.stringify(key)}`);
    out[key] = key in out ? `${out[key]},${value}` : value;
  }
  return out;
}

/** Never echoes `s`: it may be a password; `what` names the field instead. */
function decode(s: string, url: string, what: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw invalid(url, `bad percent-encoding in ${what} (expected %XX escapes of UTF-8 bytes)`);
  }
}
