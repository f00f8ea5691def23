// The table-driven driver options helper: every kind's parsing and words, the merge order,
// unknown keys, secrets kept out of errors, mistakes in a table, and the inferred option type.
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  booleanOption,
  customOption,
  defineDriverOptions,
  enumOption,
  intOption,
  listOption,
  msOption,
  secondsOption,
  stringOption,
  type OptionsOf,
  type OptionTable,
} from '../../../src/contract/options.js';
import { InvalidArgument, InvalidTransportURL } from '../../../src/core/errors.js';
import { TransportURL } from '../../../src/core/transport-url.js';

const url = (query: string) => TransportURL.parse(`test://user:s3cr3t-pw@h/v${query ? `?${query}` : ''}`);

/** The error `fn` throws (the test fails when it throws none). */
function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a throw');
}

function invalidArgument(fn: () => unknown): InvalidArgument {
  const err = thrown(fn);
  expect(err).toBeInstanceOf(InvalidArgument);
  return err as InvalidArgument;
}

/** A one-field table, to test a kind through resolve(). */
const only = (f: OptionTable[string]) => defineDriverOptions({ x: f });

describe('defineDriverOptions: defaults, merge order and the inferred type', () => {
  const FIELDS = {
    count: intOption({ default: 3, query: ['count', 'old_count'] }),
    mode: enumOption(['a', 'b'], { default: 'a', query: 'mode' }),
    path: stringOption({ default: undefined, query: 'path' }),
    blob: customOption<Buffer | undefined>({ default: undefined, expected: 'a Buffer', accepts: (v): v is Buffer => Buffer.isBuffer(v) }),
  };
  const opts = defineDriverOptions(FIELDS, { ignoredQueryKeys: ['pool_size'] });

  it('gives frozen defaults without the options that have none', () => {
    expect(opts.defaults).toEqual({ count: 3, mode: 'a' });
    expect(Object.keys(opts.defaults)).toEqual(['count', 'mode']);
    expect(Object.isFrozen(opts.defaults)).toBe(true);
  });

  it('infers each option type from its field; options without a default are optional', () => {
    expectTypeOf<OptionsOf<typeof FIELDS>>().toEqualTypeOf<{ readonly count: number; readonly mode: 'a' | 'b' } & { readonly path?: string; readonly blob?: Buffer }>();
    expectTypeOf(opts.resolve).returns.toEqualTypeOf<OptionsOf<typeof FIELDS>>();
  });

  it('merges defaults, then the URL, then driverOptions; undefined keeps what was there', () => {
    expect(opts.resolve(url(''))).toEqual({ count: 3, mode: 'a' });
    expect(opts.resolve(url('count=5&path=/p'))).toEqual({ count: 5, mode: 'a', path: '/p' });
    expect(opts.resolve(url('count=5&mode=b'), { count: 7, mode: undefined })).toEqual({ count: 7, mode: 'b' });
    expect(Object.isFrozen(opts.resolve(url('count=5')))).toBe(true);
  });

  it('reads aliases; the first query key is the canonical name', () => {
    expect(opts.resolve(url('old_count=9')).count).toBe(9);
    expect(opts.queryNames).toEqual({ count: 'count', mode: 'mode', path: 'path' });
  });

  it('accepts and drops ignored query keys', () => {
    expect(opts.resolve(url('pool_size=30'))).toEqual({ count: 3, mode: 'a' });
  });

  it('refuses an unknown query key with InvalidTransportURL naming it and the known keys, password hidden', () => {
    for (const key of ['cuont', 'constructor']) {
      const err = thrown(() => opts.resolve(url(`${key}=1`)));
      expect(err, key).toBeInstanceOf(InvalidTransportURL);
      expect(err.message).toContain(JSON.stringify(key));
      expect(err.message).toContain('known options: count, old_count, mode, path, pool_size');
      expect(err.message).not.toContain('s3cr3t-pw');
    }
  });

  it('refuses an unknown driverOptions name, even with an undefined value, naming the known ones', () => {
    for (const name of ['cuont', 'toString', 'hasOwnProperty']) {
      const err = invalidArgument(() => opts.resolve(url(''), { [name]: undefined }));
      expect(err.field).toBe(`driverOptions.${name}`);
      expect(err.expected).toBe('one of count, mode, path, blob');
      expect(err.received).toBe(name);
    }
  });

  it('names the query key for a bad URL value and driverOptions.<name> for a bad option value', () => {
    expect(invalidArgument(() => opts.resolve(url('old_count=x'))).field).toBe('old_count');
    const err = invalidArgument(() => opts.resolve(url(''), { blob: 'text' }));
    expect(err.message).toBe('Invalid driverOptions.blob: expected a Buffer, received "text"');
  });
});

describe('option kinds', () => {
  it('intOption: integers within bounds; URL text that is no integer is shown as given', () => {
    const plain = only(intOption({ default: 0, query: 'x' }));
    expect(plain.resolve(url('x=12')).x).toBe(12);
    expect(invalidArgument(() => plain.resolve(url('x=-1'))).message).toBe('Invalid x: expected a non-negative integer, received number -1');
    expect(invalidArgument(() => plain.resolve(url('x=1.5'))).message).toBe('Invalid x: expected a non-negative integer, received "1.5"');
    expect(invalidArgument(() => plain.resolve(url(''), { x: 2.5 })).expected).toBe('a non-negative integer');
    expect(invalidArgument(() => plain.resolve(url(''), { x: '2' })).received).toBe('2');
    expect(invalidArgument(() => only(intOption({ default: 1, min: 1, query: 'x' })).resolve(url('x=0'))).expected).toBe('a positive integer');
    const ranged = only(intOption({ default: 5, min: 2, max: 9, query: 'x' }));
    expect(ranged.resolve(url(''), { x: 9 }).x).toBe(9);
    expect(invalidArgument(() => ranged.resolve(url(''), { x: 10 })).expected).toBe('an integer from 2 to 9');
    expect(invalidArgument(() => only(intOption({ default: 5, min: 2, query: 'x' })).resolve(url('x=1'))).expected).toBe('an integer of at least 2');
  });

  it('msOption: integer milliseconds in both places', () => {
    const ms = only(msOption({ default: 1000, query: 'x_ms' }));
    expect(ms.resolve(url('x_ms=250')).x).toBe(250);
    expect(invalidArgument(() => ms.resolve(url(''), { x: -5 })).expected).toBe('a non-negative integer number of milliseconds');
    expect(invalidArgument(() => only(msOption({ default: 1, min: 1 })).resolve(url(''), { x: 0 })).expected).toBe('a positive integer number of milliseconds');
  });

  it('secondsOption: seconds in the URL (fractions rounded to ms), milliseconds in driverOptions', () => {
    const s = only(secondsOption({ default: 60_000, query: 'x' }));
    expect(s.resolve(url('x=30')).x).toBe(30_000);
    expect(s.resolve(url('x=0.0015')).x).toBe(2);
    expect(s.resolve(url('x=30'), { x: 1500 }).x).toBe(1500);
    expect(invalidArgument(() => s.resolve(url('x=-1'))).message).toBe('Invalid x: expected a non-negative number of seconds, received number -1');
    expect(invalidArgument(() => s.resolve(url('x=soon'))).received).toBe('soon');
    expect(invalidArgument(() => s.resolve(url('x='))).received).toBe('');
    expect(invalidArgument(() => s.resolve(url(''), { x: 0.5 })).expected).toBe('a non-negative integer number of milliseconds');
    const atLeast1ms = only(secondsOption({ default: 1000, min: 1, query: 'x' }));
    expect(atLeast1ms.resolve(url('x=0.001')).x).toBe(1);
    expect(invalidArgument(() => atLeast1ms.resolve(url('x=0'))).expected).toBe('a number of seconds of at least 0.001');
  });

  it('booleanOption: true/false/1/0/yes/no/on/off in any case in the URL, booleans only in driverOptions', () => {
    const b = only(booleanOption({ default: false, query: 'x' }));
    for (const text of ['true', 'TRUE', '1', 'yes', 'On']) expect(b.resolve(url(`x=${text}`)).x, text).toBe(true);
    for (const text of ['false', '0', 'No', 'off']) expect(only(booleanOption({ default: true, query: 'x' })).resolve(url(`x=${text}`)).x, text).toBe(false);
    expect(invalidArgument(() => b.resolve(url('x=maybe'))).message).toBe('Invalid x: expected a boolean (true/false/1/0/yes/no/on/off), received "maybe"');
    expect(invalidArgument(() => b.resolve(url(''), { x: 'true' })).expected).toBe('a boolean');
  });

  it('stringOption: non-empty; an optional one stays unset', () => {
    const s = only(stringOption({ default: undefined, query: 'x' }));
    expect(s.resolve(url(''))).toEqual({});
    expect(s.resolve(url('x=/etc/ca.pem')).x).toBe('/etc/ca.pem');
    expect(invalidArgument(() => s.resolve(url('x='))).expected).toBe('a non-empty string');
    expect(invalidArgument(() => s.resolve(url(''), { x: 42 })).received).toBe(42);
  });

  it('enumOption: one of the values, exactly, listed in the words', () => {
    const e = only(enumOption(['round-robin', 'shuffle', 'first'], { default: 'first', query: 'x' }));
    expect(e.resolve(url('x=shuffle')).x).toBe('shuffle');
    expect(invalidArgument(() => e.resolve(url('x=Shuffle'))).message).toBe('Invalid x: expected "round-robin", "shuffle" or "first", received "Shuffle"');
    expect(invalidArgument(() => e.resolve(url(''), { x: 1 })).expected).toBe('"round-robin", "shuffle" or "first"');
  });

  it('listOption: comma-separated in the URL (as a repeated key), an array of non-empty strings in driverOptions', () => {
    const l = only(listOption({ default: [], query: 'x' }));
    expect(l.resolve(url('x=a, b')).x).toEqual(['a', 'b']);
    expect(l.resolve(url('x=a&x=b')).x).toEqual(['a', 'b']);
    expect(l.resolve(url('x=')).x).toEqual([]);
    expect(invalidArgument(() => l.resolve(url('x=a,,b'))).expected).toBe('a comma-separated list of non-empty strings');
    expect(l.resolve(url(''), { x: ['k1:9092'] }).x).toEqual(['k1:9092']);
    expect(invalidArgument(() => l.resolve(url(''), { x: 'a,b' })).expected).toBe('an array of non-empty strings');
    expect(invalidArgument(() => l.resolve(url(''), { x: ['a', ''] })).expected).toBe('an array of non-empty strings');
  });

  it('customOption: its own test and words; URL text is tested as is unless it reads it', () => {
    const hex = (v: unknown): v is string => typeof v === 'string' && /^[0-9a-f]+$/.test(v);
    const c = only(customOption<string>({ default: 'ff', query: 'x', expected: 'lower-case hex', accepts: hex }));
    expect(c.resolve(url('x=0a')).x).toBe('0a');
    expect(invalidArgument(() => c.resolve(url('x=0A'))).message).toBe('Invalid x: expected lower-case hex, received "0A"');
    const upper = only(customOption<string>({ default: 'ff', query: 'x', expected: 'hex', accepts: hex, fromQuery: (t) => ({ ok: true, value: t.toLowerCase() }) }));
    expect(upper.resolve(url('x=0A')).x).toBe('0a');
  });

  it('check narrows any kind, in the URL and in driverOptions, with the given words', () => {
    const even = only(intOption({ default: 2, query: 'x', check: (n) => n % 2 === 0, expected: 'an even non-negative integer' }));
    expect(even.resolve(url('x=4')).x).toBe(4);
    expect(invalidArgument(() => even.resolve(url('x=3'))).message).toBe('Invalid x: expected an even non-negative integer, received number 3');
    expect(invalidArgument(() => even.resolve(url('x=-2'))).expected).toBe('an even non-negative integer');
    expect(invalidArgument(() => even.resolve(url(''), { x: 5 })).field).toBe('driverOptions.x');
  });
});

describe('secrets', () => {
  it('never shows the value of a secret-looking option in an error, from the URL or driverOptions', () => {
    const opts = defineDriverOptions({
      saslPassword: stringOption({ default: undefined, query: 'sasl_password', check: (s) => s.length >= 12, expected: 'at least 12 characters' }),
      apiToken: intOption({ default: 0, query: 'api_token' }),
    });
    for (const fn of [
      () => opts.resolve(url('sasl_password=hunter2-pw')),
      () => opts.resolve(url('api_token=hunter2-pw')),
      () => opts.resolve(url(''), { saslPassword: 'hunter2-pw' }),
      () => opts.resolve(url(''), { apiToken: 'hunter2-pw' }),
    ]) {
      const err = invalidArgument(fn);
      expect(err.message).not.toContain('hunter2');
      expect(err.received).toBe('***');
    }
  });
});

describe('mistakes in a table fail when it is defined', () => {
  it('a default its own field refuses', () => {
    const err = invalidArgument(() => defineDriverOptions({ n: intOption({ default: -1, query: 'n' }) }));
    expect(err.field).toBe('option table n.default');
    expect(err.expected).toBe('a non-negative integer');
  });

  it('a query key used twice, or both used and ignored', () => {
    expect(invalidArgument(() => defineDriverOptions({ a: intOption({ default: 0, query: 'k' }), b: intOption({ default: 0, query: 'k' }) })).received).toBe('k');
    expect(invalidArgument(() => defineDriverOptions({ a: intOption({ default: 0, query: 'k' }) }, { ignoredQueryKeys: ['k'] })).received).toBe('k');
  });
});
