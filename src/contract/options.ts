// Driver options as one table per driver: each field's kind, default and URL query names (oslo's).
// From the table come the frozen DEFAULTS, the option type, URL parsing, validation and the merge
// with `driverOptions`, so every driver's options.ts is a table plus its own cross-field rules.
import { InvalidArgument, InvalidTransportURL } from '../core/errors.js';
import { REDACTED, SECRET_KEY_PATTERN } from '../core/secrets.js';
import type { TransportURL } from '../core/transport-url.js';

/** What URL query text read as: an option value, or what was expected and what was there. */
export type QueryValue<T> = QueryValueRead<T> | QueryValueRefused;

/** URL query text that is a valid option value. */
export interface QueryValueRead<T> {
  /** Discriminant: the text was read. */
  readonly ok: true;
  /** The value, in the option's units. */
  readonly value: T;
}

/** URL query text that is not a valid option value. */
export interface QueryValueRefused {
  /** Discriminant: the text was refused. */
  readonly ok: false;
  /** A valid value in the URL's words and units ("a non-negative number of seconds"). */
  readonly expected: string;
  /** What the text read as (a number when it parsed as one, else the text), for the error. */
  readonly received: unknown;
}

/** One option of a driver: its default, URL query names and validation. Built by the `*Option` helpers. */
export interface OptionField<T> {
  /** The value when neither the URL nor `driverOptions` sets it; `undefined` makes the option optional. */
  readonly default: T;
  /** URL query keys that set the option, canonical (oslo) name first, then aliases; empty: `driverOptions` only. */
  readonly query: readonly string[];
  /** A valid value in words, for errors about `driverOptions` values ("a non-negative integer"). */
  readonly expected: string;
  /** True when `value` (from `driverOptions`) is valid. MUST NOT throw. */
  accepts(value: unknown): value is T;
  /** Reads URL query text into a value in the option's units (seconds become ms). MUST NOT throw. */
  fromQuery(text: string): QueryValue<T>;
}

/** A driver's option table: option name (camelCase, as in `driverOptions`) -> field. */
export type OptionTable = Readonly<Record<string, OptionField<unknown>>>;

/** The value type of one field. */
export type OptionValue<F> = F extends OptionField<infer T> ? T : never;

/** The resolved options of a table: fields whose default is `undefined` are optional. */
export type OptionsOf<T extends OptionTable> = {
  readonly [K in keyof T as undefined extends OptionValue<T[K]> ? never : K]: OptionValue<T[K]>;
} & {
  readonly [K in keyof T as undefined extends OptionValue<T[K]> ? K : never]?: Exclude<OptionValue<T[K]>, undefined>;
};

/** What every `*Option` helper takes. */
export interface OptionSpec<T> {
  /** See {@link OptionField.default}. */
  readonly default: T;
  /** URL query key, or keys (canonical oslo name first, then aliases); omitted: `driverOptions` only. */
  readonly query?: string | readonly string[];
  /** A further rule on a value of the right kind (e.g. a pattern); say it in `expected`. */
  check?(value: Exclude<T, undefined>): boolean;
  /** Replaces the kind's words for a valid value (required in practice with `check`). */
  readonly expected?: string;
}

/** The shape of one kind of option: its words and how it reads values and URL text. */
interface Kind<T> {
  readonly expected: string;
  accepts(value: unknown): value is T;
  fromQuery(text: string): QueryValue<T>;
}

const ok = <T>(value: T): QueryValue<T> => ({ ok: true, value });
const bad = (expected: string, received: unknown): QueryValue<never> => ({ ok: false, expected, received });

/** Applies a spec (default, query names, extra check, words) to a kind. */
function field<T>(kind: Kind<Exclude<T, undefined>>, spec: OptionSpec<T>): OptionField<T> {
  const expected = spec.expected ?? kind.expected;
  const check = (value: Exclude<T, undefined>) => spec.check === undefined || spec.check(value);
  const query = spec.query === undefined ? [] : typeof spec.query === 'string' ? [spec.query] : [...spec.query];
  return Object.freeze({
    default: spec.default,
    query: Object.freeze(query),
    expected,
    accepts: (value: unknown): value is T => kind.accepts(value) && check(value),
    fromQuery(text: string): QueryValue<T> {
      const read = kind.fromQuery(text);
      if (!read.ok) return spec.expected === undefined ? read : bad(expected, read.received);
      return check(read.value) ? read : bad(expected, read.value);
    },
  });
}

/** An integer kind; `words` names the unit ("integer", "integer number of milliseconds"). */
function integerKind(min: number, max: number | undefined, words: string): Kind<number> {
  const accepts = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= min && (max === undefined || v <= max);
  const expected =
    max !== undefined ? `an ${words} from ${min} to ${max}` : min === 0 ? `a non-negative ${words}` : min === 1 ? `a positive ${words}` : `an ${words} of at least ${min}`;
  return {
    expected,
    accepts,
    fromQuery: (text) => {
      const n = /^\s*-?\d+\s*$/.test(text) ? Number(text) : text;
      return accepts(n) ? ok(n) : bad(expected, n);
    },
  };
}

/** An integer option, `min` (default 0) to `max` inclusive. */
export function intOption(spec: OptionSpec<number> & { readonly min?: number; readonly max?: number }): OptionField<number>;
/** An integer option, optional: `default: undefined` leaves it unset (the driver tells "not given" apart). */
export function intOption(spec: OptionSpec<number | undefined> & { readonly default: undefined; readonly min?: number; readonly max?: number }): OptionField<number | undefined>;
export function intOption(spec: OptionSpec<number | undefined> & { readonly min?: number; readonly max?: number }): OptionField<number | undefined> {
  return field(integerKind(spec.min ?? 0, spec.max, 'integer'), spec);
}

/** A duration in milliseconds, in `driverOptions` and in the URL (`publish_timeout_ms`). */
export function msOption(spec: OptionSpec<number> & { readonly min?: number }): OptionField<number> {
  return field(integerKind(spec.min ?? 0, undefined, 'integer number of milliseconds'), spec);
}

/**
 * A duration in milliseconds in `driverOptions` and in seconds in the URL, as in oslo's config
 * (`heartbeat_timeout_threshold=30` is 30000 ms); fractions of a second are rounded to ms.
 */
export function secondsOption(spec: OptionSpec<number> & { readonly min?: number }): OptionField<number> {
  const min = spec.min ?? 0;
  const ms = integerKind(min, undefined, 'integer number of milliseconds');
  const inSeconds = min === 0 ? 'a non-negative number of seconds' : `a number of seconds of at least ${min / 1000}`;
  return field<number>(
    {
      ...ms,
      fromQuery: (text) => {
        const seconds = Number(text);
        if (text.trim() === '' || !Number.isFinite(seconds)) return bad(inSeconds, text);
        const value = Math.round(seconds * 1000);
        return ms.accepts(value) ? ok(value) : bad(inSeconds, seconds);
      },
    },
    spec,
  );
}

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

/** A boolean; the URL takes true/false/1/0/yes/no/on/off, any case. */
export function booleanOption(spec: OptionSpec<boolean>): OptionField<boolean> {
  const accepts = (v: unknown): v is boolean => typeof v === 'boolean';
  const fromQuery = (text: string): QueryValue<boolean> => {
    const v = text.trim().toLowerCase();
    return TRUE.has(v) ? ok(true) : FALSE.has(v) ? ok(false) : bad('a boolean (true/false/1/0/yes/no/on/off)', text);
  };
  return field({ expected: 'a boolean', accepts, fromQuery }, spec);
}

const nonEmptyString = (v: unknown): v is string => typeof v === 'string' && v !== '';

/** A non-empty string with a default. */
export function stringOption(spec: OptionSpec<string>): OptionField<string>;
/** A non-empty string, optional: `default: undefined` leaves it unset. */
export function stringOption(spec: OptionSpec<string | undefined> & { readonly default: undefined }): OptionField<string | undefined>;
export function stringOption(spec: OptionSpec<string | undefined>): OptionField<string | undefined> {
  const fromQuery = (text: string) => (text !== '' ? ok(text) : bad('a non-empty string', text));
  return field({ expected: 'a non-empty string', accepts: nonEmptyString, fromQuery }, spec);
}

/** One of a fixed set of strings, matched exactly, e.g. `enumOption(['round-robin', 'shuffle'] as const, {...})`. */
export function enumOption<const V extends readonly string[]>(values: V, spec: OptionSpec<V[number]>): OptionField<V[number]> {
  const quoted = values.map((v) => JSON.stringify(v));
  const expected = quoted.length > 1 ? `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}` : `${quoted[0]}`;
  const accepts = (v: unknown): v is V[number] => typeof v === 'string' && values.includes(v);
  return field({ expected, accepts, fromQuery: (text) => (accepts(text) ? ok(text) : bad(expected, text)) }, spec);
}

/** A list of non-empty strings; the URL gives it comma-separated (`a,b`), as a repeated key does. */
export function listOption(spec: OptionSpec<readonly string[]>): OptionField<readonly string[]> {
  const expected = 'an array of non-empty strings';
  const accepts = (v: unknown): v is readonly string[] => Array.isArray(v) && v.every(nonEmptyString);
  const fromQuery = (text: string): QueryValue<readonly string[]> => {
    const items = text.trim() === '' ? [] : text.split(',').map((s) => s.trim());
    return accepts(items) ? ok(Object.freeze(items)) : bad('a comma-separated list of non-empty strings', text);
  };
  return field({ expected, accepts, fromQuery }, spec);
}

/** Any other kind: `accepts` decides; URL text is given to it as is unless `fromQuery` reads it. */
export function customOption<T>(
  spec: OptionSpec<T> & { readonly expected: string; readonly accepts: (value: unknown) => value is Exclude<T, undefined>; readonly fromQuery?: (text: string) => QueryValue<Exclude<T, undefined>> },
): OptionField<T> {
  const fromQuery = spec.fromQuery ?? ((text: string) => (spec.accepts(text) ? ok(text) : bad(spec.expected, text)));
  return field({ expected: spec.expected, accepts: spec.accepts, fromQuery }, spec);
}

/** A driver's options, made from its table by {@link defineDriverOptions}. */
export interface DriverOptions<T extends OptionTable> {
  /** Every default, frozen (optional options without a default are absent). */
  readonly defaults: Readonly<OptionsOf<T>>;
  /** Option name -> its canonical URL query name, for options the URL can set. */
  readonly queryNames: Readonly<Record<string, string>>;
  /**
   * The options of one transport: defaults, then the URL query, then `driverOptions` (which win;
   * an `undefined` value there keeps the URL's or the default). Returns a frozen object.
   * MUST throw InvalidTransportURL for an unknown query key or for two names of one option given
   * different values, and InvalidArgument naming the field (the query key, or
   * `driverOptions.<name>`), the expected and the received value for an unknown option name or a
   * bad value; values of secret-looking names are never shown.
   */
  resolve(url: TransportURL, driverOptions?: Readonly<Record<string, unknown>>): OptionsOf<T>;
}

/**
 * Builds a driver's options from its table. `ignoredQueryKeys` are valid oslo names that have
 * no effect in this driver (accepted in the URL, then dropped). Throws InvalidArgument at once
 * when the table itself is wrong: a default its own field refuses, or a query key used twice.
 */
export function defineDriverOptions<const T extends OptionTable>(table: T, settings: { readonly ignoredQueryKeys?: readonly string[] } = {}): DriverOptions<T> {
  const names = Object.keys(table);
  const byQueryKey = new Map<string, string | undefined>();
  const defaults: Record<string, unknown> = {};
  const queryNames: Record<string, string> = {};
  const addQueryKey = (key: string, name: string | undefined) => {
    if (byQueryKey.has(key)) throw new InvalidArgument(`option table query key ${key}`, 'a key used by one option only', key);
    byQueryKey.set(key, name);
  };
  for (const name of names) {
    const f = table[name];
    if (f.default !== undefined && !f.accepts(f.default)) throw new InvalidArgument(`option table ${name}.default`, f.expected, f.default);
    if (f.default !== undefined) defaults[name] = f.default;
    for (const key of f.query) addQueryKey(key, name);
    if (f.query.length > 0) queryNames[name] = f.query[0];
  }
  for (const key of settings.ignoredQueryKeys ?? []) addQueryKey(key, undefined);
  const known = [...byQueryKey.keys()].join(', ');

  return Object.freeze({
    defaults: Object.freeze(defaults) as Readonly<OptionsOf<T>>,
    queryNames: Object.freeze(queryNames),
    resolve(url: TransportURL, driverOptions: Readonly<Record<string, unknown>> = {}): OptionsOf<T> {
      const out: Record<string, unknown> = { ...defaults };
      const setBy = new Map<string, string>();
      for (const [key, text] of Object.entries(url.query)) {
        if (!byQueryKey.has(key)) throw new InvalidTransportURL(`Unknown option ${JSON.stringify(key)} in the query of ${url.toString()}; known options: ${known}`);
        const name = byQueryKey.get(key);
        if (name === undefined) continue;
        const read = table[name].fromQuery(text);
        if (!read.ok) throw new InvalidArgument(key, read.expected, shown(key, read.received));
        // Two spellings of one option (oslo's `rabbit_quroum_*` and the corrected one) must agree.
        const other = setBy.get(name);
        if (other !== undefined && !sameValue(out[name], read.value)) {
          throw new InvalidTransportURL(`The query of ${url.toString()} sets ${JSON.stringify(other)} and ${JSON.stringify(key)}, two names of one option, to different values; give one of them`);
        }
        setBy.set(name, key);
        out[name] = read.value;
      }
      for (const [name, value] of Object.entries(driverOptions)) {
        const label = `driverOptions.${name}`;
        if (!Object.hasOwn(table, name)) throw new InvalidArgument(label, `one of ${names.join(', ')}`, name);
        if (value === undefined) continue;
        if (!table[name].accepts(value)) throw new InvalidArgument(label, table[name].expected, shown(name, value));
        out[name] = value;
      }
      return Object.freeze(out) as OptionsOf<T>;
    },
  });
}

/** Equal option values: primitives by identity, anything else (arrays) by its JSON text. */
function sameValue(a: unknown, b: unknown): boolean {
  return Object.is(a, b) || (typeof a === 'object' && typeof b === 'object' && JSON.stringify(a) === JSON.stringify(b));
}

/** A value as an error may show it: hidden when its name looks secret (`ssl_key_file`, `password`). */
function shown(name: string, value: unknown): unknown {
  return SECRET_KEY_PATTERN.test(name) ? REDACTED : value;
}

/**
 * The store-and-forward queue of un-pooled notification listeners, `<topic>.<priority>` (a
 * RabbitMQ queue, the default group of a Redis stream): notifiers create it so that a listener
 * started later gets what was sent before, and nothing else bounds it. The same three options on
 * every driver that has one; a driver's options table spreads them.
 */
export const NOTIFICATION_QUEUE_OPTIONS = {
  /** Notifiers create the `<topic>.<priority>` queue (oslo's default queue); false: only listeners do, and a notification nobody listens for yet is dropped (`notification_store_and_forward`). @default true */
  notificationStoreAndForward: booleanOption({ default: true, query: 'notification_store_and_forward' }),
  /** Most notifications the `<topic>.<priority>` queue keeps, the oldest dropped first; 0 = no bound (`notification_queue_max_length`). @default 0 */
  notificationQueueMaxLength: intOption({ default: 0, query: 'notification_queue_max_length' }),
  /** Longest a notification waits in the `<topic>.<priority>` queue, ms; 0 = no bound (`notification_queue_ttl_ms`). @default 0 */
  notificationQueueTtl: msOption({ default: 0, query: 'notification_queue_ttl_ms' }),
} as const;
