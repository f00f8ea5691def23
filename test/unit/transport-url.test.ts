// TransportURL: parse/format exactly as oslo (oslo-wire.md §3.1), and never show a password.
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { InvalidTransportURL } from '../../src/core/errors.js';
import { redactString, redactUrlsIn, TransportURL } from '../../src/core/transport-url.js';

const SECRET = 'S3cr3tPa55';

function parseError(url: string): InvalidTransportURL {
  try {
    TransportURL.parse(url);
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidTransportURL);
    return err as InvalidTransportURL;
  }
  throw new Error(`expected ${url} to be refused`);
}

describe('TransportURL.parse', () => {
  it('parses scheme, one host with credentials, port, vhost', () => {
    const u = TransportURL.parse('rabbit://guest:guest@127.0.0.1:5672/');
    expect(u.scheme).toBe('rabbit');
    expect(u.driver).toBe('rabbit');
    expect(u.hosts).toEqual([{ hostname: '127.0.0.1', port: 5672, username: 'guest', password: 'guest' }]);
    expect(u.virtualHost).toBe('');
    expect(u.query).toEqual({});
  });

  it('parses multiple hosts with per-host credentials', () => {
    const u = TransportURL.parse('rabbit://u1:p1@h1:5672,u2:p2@h2:5673,h3/vh');
    expect(u.hosts).toEqual([
      { hostname: 'h1', port: 5672, username: 'u1', password: 'p1' },
      { hostname: 'h2', port: 5673, username: 'u2', password: 'p2' },
      { hostname: 'h3' },
    ]);
    expect(u.virtualHost).toBe('vh');
  });

  it('percent-decodes user and password', () => {
    const u = TransportURL.parse('rabbit://us%3Aer:p%40ss%2Fw%3Ard@host:5672/');
    expect(u.hosts[0]).toMatchObject({ username: 'us:er', password: 'p@ss/w:rd' });
  });

  it('splits user/password at the FIRST : (a raw ":" in a password is unambiguous)', () => {
    const u = TransportURL.parse('rabbit://user:pa:ss:@host:5672/');
    expect(u.hosts[0]).toEqual({ username: 'user', password: 'pa:ss:', hostname: 'host', port: 5672 });
  });

  it('accepts a username without password and an empty password', () => {
    expect(TransportURL.parse('rabbit://user@host').hosts[0]).toEqual({ username: 'user', hostname: 'host' });
    expect(TransportURL.parse('rabbit://user:@host').hosts[0]).toEqual({ username: 'user', password: '', hostname: 'host' });
  });

  it('parses IPv6 in brackets with and without port', () => {
    expect(TransportURL.parse('rabbit://u:p@[::1]:5672/').hosts[0]).toEqual({ hostname: '::1', port: 5672, username: 'u', password: 'p' });
    expect(TransportURL.parse('rabbit://[fe80::1%25eth0]/').hosts[0]).toEqual({ hostname: 'fe80::1%eth0' });
    expect(TransportURL.parse('rabbit://[2001:db8::2],[::1]:5673').hosts).toEqual([{ hostname: '2001:db8::2' }, { hostname: '::1', port: 5673 }]);
  });

  it('refuses unbracketed IPv6, unterminated brackets and junk after them', () => {
    parseError('rabbit://::1:5672/');
    parseError('rabbit://[::1:5672/');
    parseError('rabbit://[::1]x/');
  });

  it('virtualHost: undefined without a path, "" for a bare /, "/" for //', () => {
    expect(TransportURL.parse('rabbit://host:5672').virtualHost).toBeUndefined();
    expect(TransportURL.parse('rabbit://host:5672/').virtualHost).toBe('');
    expect(TransportURL.parse('rabbit://host:5672//').virtualHost).toBe('/');
    expect(TransportURL.parse('rabbit://host:5672/%2F').virtualHost).toBe('/');
    expect(TransportURL.parse('rabbit://host:5672/my%20vhost').virtualHost).toBe('my vhost');
  });

  it('joins repeated query keys with a comma and decodes query text', () => {
    const u = TransportURL.parse('kafka://h:9092/?a=1&b=x+y&a=2&a=3&flag&c=%26');
    expect(u.query).toEqual({ a: '1,2,3', b: 'x y', flag: '', c: '&' });
  });

  it('accepts scheme-only URLs', () => {
    for (const url of ['rabbit://', 'memory://', 'memory:', 'memory:/']) {
      const u = TransportURL.parse(url);
      expect(u.hosts).toEqual([]);
      expect(u.virtualHost).toBeUndefined();
    }
    expect(TransportURL.parse('memory://').scheme).toBe('memory');
    expect(TransportURL.parse('Rabbit://h').scheme).toBe('rabbit');
  });

  it('the driver is the part of the scheme before +', () => {
    expect(TransportURL.parse('kombu+memory:///').driver).toBe('kombu');
  });

  it('refuses bad ports', () => {
    for (const url of ['rabbit://h:0/', 'rabbit://h:65536/', 'rabbit://h:56x2/', 'rabbit://h:-1/']) parseError(url);
    expect(TransportURL.parse('rabbit://h:/').hosts[0]).toEqual({ hostname: 'h' });
  });

  it('refuses a URL without a scheme', () => {
    parseError('127.0.0.1:5672');
    parseError('//host:5672/');
    parseError('');
    parseError('1abc://host');
  });

  it('refuses non-strings and bad percent-encoding', () => {
    expect(() => TransportURL.parse(42 as unknown as string)).toThrow(InvalidTransportURL);
    parseError('rabbit://u:%zz@host/');
    parseError('rabbit://host/%zz');
    parseError('rabbit://host/?a=%zz');
  });

  it('returns a TransportURL argument unchanged and is frozen', () => {
    const u = TransportURL.parse('rabbit://h');
    expect(TransportURL.parse(u)).toBe(u);
    expect(Object.isFrozen(u)).toBe(true);
    expect(Object.isFrozen(u.hosts[0])).toBe(true);
    expect(Object.isFrozen(u.query)).toBe(true);
  });
});

describe('ambiguous or incomplete URLs are refused, never guessed at', () => {
  const PW = 'p@ss/w0rd';

  it('refuses a password with an unencoded "@" and "/" and tells to percent-encode it, showing none of it', () => {
    const err = parseError(`amqp://user:${PW}@127.0.0.1:5672/`);
    expect(err.message).toContain('amqp://user:***@127.0.0.1:5672/');
    expect(err.message).toContain('encodeURIComponent');
    for (const piece of ['p@ss', 'ss/w0rd', 'w0rd']) expect(err.message).not.toContain(piece);
    // The encoded form is the way to write it, and parses exactly.
    const u = TransportURL.parse(`amqp://user:${encodeURIComponent(PW)}@127.0.0.1:5672/`);
    expect(u.hosts).toEqual([{ username: 'user', password: PW, hostname: '127.0.0.1', port: 5672 }]);
  });

  it.each([
    ['a "?" in the password', `rabbit://user:pa?${SECRET}@h/`, /"@" after the host part/],
    ['a "#" in the password', `rabbit://user:pa#${SECRET}@h/`, /"@" after the host part/],
    ['an "@" in the vhost', `rabbit://user:${SECRET}@h/v@x`, /"@" after the host part.*%40/],
    ['an "@" in a query value', `rabbit://user:${SECRET}@h/?x=a@b`, /"@" after the host part/],
    ['an "@" in a secret query value', `redis://h:6379/?password=${SECRET}@x${SECRET}`, /"@" after the host part/],
    ['a "#" in a secret query value', `redis://h/?password=ab#${SECRET}`, /"#" is not allowed.*%23/],
    ['two "@" in one host entry', `rabbit://user:p@${SECRET}@h/`, /the host part has more than one "@".*encodeURIComponent/],
    ['two "@" in an entry of a multi-host URL', `rabbit://a:b@h1,user:p@${SECRET}@h2/`, /host entry 2 of 2 has more than one "@"/],
    ['a "," in the password', `rabbit://user:${SECRET},x@h/`, /host entry 1 of 2 has no credentials but a later one has.*%2C/],
    ['a "," at the start of the password', `rabbit://user:,${SECRET}@h/`, /host entry 1 of 2 has no credentials/],
    ['a "," after a numeric piece (would read as a port)', `rabbit://user:1234,${SECRET}@h/`, /host entry 1 of 2 has no credentials/],
    ['a host without credentials before one with them', `rabbit://h1,user:${SECRET}@h2/`, /host entry 1 of 2 has no credentials/],
    ['an "@" and a "," in the password', `rabbit://user:x@h,${SECRET}@h2/`, /host entry 2 of 2 has a user name but no password/],
    ['an "@" and "," leaving a bad host name', `rabbit://user:x@h+${SECRET},y:z@h2/`, /bad host name in host entry 1 of 2/],
  ])('refuses %s', (_name, url, expected) => {
    const err = parseError(url);
    expect(err.message).toMatch(expected);
    expect(err.message).not.toContain(SECRET);
    expect(inspect(err)).not.toContain(SECRET);
  });

  it('documents the one raw password shape that is itself a valid multi-host URL', () => {
    // Password `x@h1,u2:y`, unencoded: indistinguishable from two hosts, so it parses as two.
    expect(TransportURL.parse('rabbit://user:x@h1,u2:y@h2/').hosts).toEqual([
      { username: 'user', password: 'x', hostname: 'h1' },
      { username: 'u2', password: 'y', hostname: 'h2' },
    ]);
    expect(TransportURL.parse(`rabbit://user:${encodeURIComponent('x@h1,u2:y')}@h2/`).hosts).toEqual([{ username: 'user', password: 'x@h1,u2:y', hostname: 'h2' }]);
  });

  it.each([
    ['rabbit://user:secret@', 'the host part'],
    ['rabbit://user@', 'the host part'],
    ['rabbit://:secret@:5672/', 'the host part'],
    ['rabbit://user:secret@[]:5672/', 'the host part'],
    ['rabbit://u:p@h1,user:secret@', 'host entry 2 of 2'],
    ['rabbit://u:p@h1,user:secret@/vh', 'host entry 2 of 2'],
  ])('refuses credentials without a host: %s', (url, where) => {
    const err = parseError(url);
    expect(err.message).toContain(`${where} has credentials but no host`);
    expect(err.message).not.toContain('secret');
  });

  it('keeps a bare scheme and a port without host meaning the driver default host', () => {
    expect(TransportURL.parse('rabbit://').hosts).toEqual([]);
    expect(TransportURL.parse('rabbit://:5673/').hosts).toEqual([{ port: 5673 }]);
  });

  it('does not echo an invalid scheme, which may be credentials before a misplaced "://"', () => {
    const err = parseError(`user:${SECRET}@host://x`);
    expect(err.message).toMatch(/scheme: expected a letter/);
    expect(err.message).not.toContain(SECRET);
  });

  it('names the field whose percent-encoding is bad, without echoing it', () => {
    expect(parseError(`rabbit://user:${SECRET}%zz@h/`).message).toMatch(/bad percent-encoding in the password of the host part/);
    expect(parseError(`rabbit://u%zz:${SECRET}@h/`).message).toMatch(/bad percent-encoding in the user name of the host part/);
    expect(parseError('rabbit://h/?password=%zz').message).toMatch(/bad percent-encoding in the value of query key "password"/);
  });

  it('accepts every special character percent-encoded, in user names and passwords', () => {
    const special = '@/:?#%,[]& +=!$\'\u{1F600}';
    const u = TransportURL.parse(`rabbit://${encodeURIComponent(special)}:${encodeURIComponent(special)}@h1,u2:${encodeURIComponent(special)}@[::1]:5673/v%40h`);
    expect(u.hosts).toEqual([
      { username: special, password: special, hostname: 'h1' },
      { username: 'u2', password: special, hostname: '::1', port: 5673 },
    ]);
    expect(u.virtualHost).toBe('v@h');
    expect(TransportURL.parse(u.format()).hosts).toEqual(u.hosts);
  });
});

describe('TransportURL.format', () => {
  const cases = [
    'rabbit://guest:guest@127.0.0.1:5672/',
    'rabbit://u1:p1@h1:5672,u2:p2@h2:5673,h3/vh',
    'rabbit://us%3Aer:p%40ss%2Fw%3Ard@host:5672/',
    'rabbit://u:p@[::1]:5672//',
    'rabbit://user@host',
    'rabbit://user:@host',
    'kafka://h:9092/?a=1&b=x+y&a=2&c=%26',
    'memory://',
    'rabbit://host:5672/my%20vhost',
  ];
  for (const url of cases) {
    it(`round-trips ${url}`, () => {
      const u = TransportURL.parse(url);
      const again = TransportURL.parse(u.format());
      expect(again.scheme).toBe(u.scheme);
      expect(again.hosts).toEqual(u.hosts);
      expect(again.virtualHost).toBe(u.virtualHost);
      expect(again.query).toEqual(u.query);
    });
  }

  it('formats credentials and IPv6 as a broker library expects', () => {
    expect(TransportURL.parse('rabbit://u:p%40ss@[::1]:5672/').format()).toBe('rabbit://u:p%40ss@[::1]:5672/');
    expect(TransportURL.parse('rabbit://guest:guest@h:5672/').format()).toBe('rabbit://guest:guest@h:5672/');
  });
});

describe('TransportURL never shows a password', () => {
  const urls = [
    `rabbit://user:${SECRET}@host:5672/`,
    `rabbit://a:x@h1,user:${SECRET}@h2:5673/vh`,
    `rabbit://user:${SECRET}@[::1]:5672/`,
    `redis://h:6379/?password=${SECRET}`,
    `kafka://h:9092/?sasl_password=${SECRET}&token=${SECRET}`,
    // The same secret-looking keys as notification contexts hide (SECRET_KEY_PATTERN).
    `kafka://h:9092/?sasl_api_key=${SECRET}&oauth_credential=${SECRET}`,
  ];
  for (const url of urls) {
    it(`hides it in every rendering of ${url.replace(SECRET, '<secret>')}`, () => {
      const u = TransportURL.parse(url);
      const renderings = [u.toString(), String(u), `${u}`, JSON.stringify(u), JSON.stringify({ u }), inspect(u), inspect({ nested: { u } }), u.format({ redact: true })];
      for (const r of renderings) expect(r).not.toContain(SECRET);
      expect(u.toString()).toContain('***');
      expect(u.format()).toContain(SECRET);
    });
  }

  it('keeps the user name and host in the redacted form', () => {
    expect(TransportURL.parse(`rabbit://user:${SECRET}@host:5672/`).toString()).toBe('rabbit://user:***@host:5672/');
  });

  const broken = [
    `rabbit://user:${SECRET}@host:bad/`,
    `rabbit://user:${SECRET}@host:99999/`,
    `rabbit://user:${SECRET}@[::1/`,
    `rabbit://user:${SECRET}@::1:5672/`,
    `user:${SECRET}@host:5672/`,
    `rabbit://user:p@${SECRET}@host:bad/`,
    `rabbit://user:${SECRET}/x@host/`,
    `rabbit://user:${SECRET}?x@host/`,
    `rabbit://user:${SECRET}%zz@host/`,
    `rabbit://a:x@h1,user:${SECRET}@h2:bad/`,
    `redis://h:bad/?password=${SECRET}`,
    `redis://h/?password=${SECRET}%zz`,
    `kafka://h/?sasl_password=%zz${SECRET}`,
    `redis://h:bad/?my_password=${SECRET}&db=0`,
    `kafka://h:bad/?sasl.oauth_token=${SECRET}`,
  ];
  for (const url of broken) {
    it(`keeps it out of the error for ${url.replace(SECRET, '<secret>')}`, () => {
      const err = parseError(url);
      expect(err.message).not.toContain(SECRET);
      expect(String(err)).not.toContain(SECRET);
      expect(inspect(err)).not.toContain(SECRET);
    });
  }

  it('redactString hides everything between the first ":" after "//" and the LAST "@"', () => {
    expect(redactString('amqp://user:p@ss/w0rd@127.0.0.1:5672/')).toBe('amqp://user:***@127.0.0.1:5672/');
    expect(redactString(`rabbit://a:b@h1,user:${SECRET}@h2/`)).toBe('rabbit://a:***@h2/');
    expect(redactString(`rabbit://user:${SECRET}@`)).toBe('rabbit://user:***@');
  });

  it('redactString hides a non-numeric "port" when there is no "@" (a password whose host is missing)', () => {
    expect(redactString(`rabbit://user:${SECRET}`)).toBe('rabbit://user:***');
    expect(redactString(`rabbit://h1:5672,user:${SECRET}/vh`)).toBe('rabbit://h1:5672,user:***/vh');
    expect(redactString('rabbit://[::1]:5672/')).toBe('rabbit://[::1]:5672/');
  });

  it('redactString hides secret query values whole, even around an "@" or "#", and percent-encoded key names', () => {
    expect(redactString(`redis://h:6379/?password=se@${SECRET}`)).toBe('redis://h:***');
    expect(redactString(`redis://h/?password=ab#${SECRET}&db=1`)).toBe('redis://h/?password=***&db=1');
    expect(redactString(`redis://h/?p%61ssword=${SECRET}`)).toBe('redis://h/?p%61ssword=***');
    expect(redactString(`kafka://h/?api_key=${SECRET}&x=1`)).toBe('kafka://h/?api_key=***&x=1');
  });

  it('redactUrlsIn redacts every URL inside free text', () => {
    expect(redactUrlsIn(`connect to amqp://u:${SECRET}@h:5672/ failed; fallback rabbit://v:${SECRET}@h2 too`)).toBe('connect to amqp://u:***@h:5672/ failed; fallback rabbit://v:***@h2 too');
  });

  it('redactString hides credentials of strings that do not parse', () => {
    expect(redactString(`rabbit://u:${SECRET}@h:x/`)).not.toContain(SECRET);
    expect(redactString(`rabbit://u:${SECRET}@h/?password=${SECRET}`)).not.toContain(SECRET);
    expect(redactString('rabbit://h:5672/')).toBe('rabbit://h:5672/');
    expect(redactString(`redis://h/?db=1&ssl_key_password=${SECRET}&x=2`)).toBe('redis://h/?db=1&ssl_key_password=***&x=2');
  });
});
