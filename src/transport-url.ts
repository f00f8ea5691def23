// Parse, format and redact transport URLs exactly as oslo's TransportURL does:
// driver://[user:pass@]host:port[,[user2:pass2@]host2:port2]/virtual_host?k=v
import { InvalidTransportURL } from './errors.js';

/** One broker of a transport URL. */
export interface TransportHost {
  /** Host name or address (IPv6 without brackets). */
  readonly hostname?: string;
  /** Port; undefined = the driver's default. */
  readonly port?: number;
  /** User name, percent-decoded. */
  readonly username?: string;
  /** Password, percent-decoded; redacted by `toString()`. */
  readonly password?: string;
}

/** The schemes tidings knows; anything else is refused at parse time by `transport.ts`. */
export const KNOWN_SCHEMES = ['memory', 'rabbit', 'amqp', 'amqps', 'kombu', 'redis', 'rediss', 'kafka'] as const;

const REDACTED = '***';

/** A parsed transport URL. Immutable; `toString()` never shows a password. */
export class TransportURL {
  /** The scheme, lower-cased, e.g. `rabbit`. */
  readonly scheme: string;
  /** The brokers, in order (several for failover); empty for `memory://`. */
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

  /** Parses `url` (a TransportURL is returned as is). Throws InvalidTransportURL, naming the problem, with the password redacted. */
  static parse(url: string | TransportURL): TransportURL {
    if (url instanceof TransportURL) return url;
    if (typeof url !== 'string') throw new InvalidTransportURL(`Transport URL must be a string, received ${typeof url}`);
    const schemeEnd = url.indexOf('://');
    const schemeOnly = url.match(/^([A-Za-z][A-Za-z0-9+.-]*):\/?$/);
    if (schemeOnly) return new TransportURL(schemeOnly[1].toLowerCase(), [], undefined, {});
    if (schemeEnd <= 0) throw new InvalidTransportURL(`Invalid transport URL ${redactString(url)}: no scheme (expected e.g. rabbit://host:5672/)`);
    const scheme = url.slice(0, schemeEnd).toLowerCase();
    if (!/^[a-z][a-z0-9+.-]*$/.test(scheme)) throw new InvalidTransportURL(`Invalid transport URL scheme ${JSON.stringify(scheme)}`);
    let rest = url.slice(schemeEnd + 3);
    let query: Record<string, string> = {};
    const q = rest.indexOf('?');
    if (q >= 0) {
      query = parseQuery(rest.slice(q + 1));
      rest = rest.slice(0, q);
    }
    const hashAt = rest.indexOf('#');
    if (hashAt >= 0) rest = rest.slice(0, hashAt);
    const slash = rest.indexOf('/');
    const netloc = slash >= 0 ? rest.slice(0, slash) : rest;
    const virtualHost = slash >= 0 ? decode(rest.slice(slash + 1), url) : undefined;
    const hosts: TransportHost[] = [];
    if (netloc) {
      for (const part of netloc.split(',')) hosts.push(parseHost(part, url));
    }
    return new TransportURL(scheme, hosts, virtualHost, query);
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
 * Redact credentials in a URL-looking string that may not even parse. A password may hold
 * `@ / ? # ,` unencoded, so everything between `://` and the LAST `@` is treated as
 * credentials: only the first user name survives (later hosts before that `@` are dropped).
 */
export function redactString(url: string): string {
  const schemeEnd = url.indexOf('://');
  const start = schemeEnd >= 0 ? schemeEnd + 3 : 0;
  const lastAt = url.lastIndexOf('@');
  let out = url;
  if (lastAt >= start) {
    const cred = url.slice(start, lastAt);
    const colon = cred.indexOf(':');
    if (colon >= 0) out = `${url.slice(0, start)}${cred.slice(0, colon)}:${REDACTED}${url.slice(lastAt)}`;
  }
  // Same keys as isSecretKey(), so a value hidden by toString() is hidden here too.
  return out.replace(/([?&][^=&#]*(?:pass|secret|token)[^=&#]*=)[^&#]*/gi, `$1${REDACTED}`);
}

function isSecretKey(key: string): boolean {
  return /pass|secret|token/i.test(key);
}

function parseHost(part: string, url: string): TransportHost {
  let username: string | undefined;
  let password: string | undefined;
  let hostPort = part;
  const at = part.lastIndexOf('@');
  if (at >= 0) {
    const cred = part.slice(0, at);
    hostPort = part.slice(at + 1);
    const colon = cred.indexOf(':');
    if (colon >= 0) {
      username = decode(cred.slice(0, colon), url);
      password = decode(cred.slice(colon + 1), url);
    } else {
      username = decode(cred, url);
    }
  }
  let hostname: string | undefined;
  let portText: string | undefined;
  if (hostPort.startsWith('[')) {
    const close = hostPort.indexOf(']');
    if (close < 0) throw new InvalidTransportURL(`Invalid transport URL ${redactString(url)}: unterminated IPv6 address`);
    hostname = hostPort.slice(1, close);
    const after = hostPort.slice(close + 1);
    if (after && !after.startsWith(':')) throw new InvalidTransportURL(`Invalid transport URL ${redactString(url)}: junk after IPv6 address`);
    portText = after ? after.slice(1) : undefined;
  } else {
    const colon = hostPort.lastIndexOf(':');
    if (colon >= 0 && hostPort.indexOf(':') !== colon) {
      throw new InvalidTransportURL(`Invalid transport URL ${redactString(url)}: IPv6 addresses must be in brackets`);
    }
    hostname = colon >= 0 ? hostPort.slice(0, colon) : hostPort;
    portText = colon >= 0 ? hostPort.slice(colon + 1) : undefined;
  }
  if (hostname === '') hostname = undefined;
  let port: number | undefined;
  if (portText !== undefined && portText !== '') {
    if (!/^\d+$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
      // The port text is not quoted: with a `/` or `?` in an unencoded password it is part of the password.
      throw new InvalidTransportURL(`Invalid transport URL ${redactString(url)}: bad port (expected an integer 1-65535)`);
    }
    port = Number(portText);
  }
  const host: { -readonly [K in keyof TransportHost]: TransportHost[K] } = {};
  if (hostname !== undefined) host.hostname = decode(hostname, url);
  if (port !== undefined) host.port = port;
  if (username !== undefined) host.username = username;
  if (password !== undefined) host.password = password;
  return host;
}

function parseQuery(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of text.split('&')) {
    if (!pair) continue;
    const eq = pair.indexOf('=');
    const key = decodeQuery(eq >= 0 ? pair.slice(0, eq) : pair, 'a query key');
    const value = decodeQuery(eq >= 0 ? pair.slice(eq + 1) : '', `the value of query key ${JSON.stringify(key)}`);
    out[key] = key in out ? `${out[key]},${value}` : value;
  }
  return out;
}

function decodeQuery(s: string, what: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    // Never echo the text: it may be a password value.
    throw new InvalidTransportURL(`Invalid transport URL query: bad percent-encoding in ${what}`);
  }
}

function decode(s: string, url: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new InvalidTransportURL(`Invalid transport URL ${redactString(url)}: bad percent-encoding`);
  }
}
