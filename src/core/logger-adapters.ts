// Adapters from the loggers applications already have (pino, bunyan, winston, console) to
// tidings' Logger, and toLogger(), which every option that takes a logger goes through once.
// Structural types only: tidings depends on none of these libraries.
import { InvalidArgument } from './errors.js';
import { LOG_LEVELS, defineLogger, errorFields, isTidingsLogger, levelEnabled, silentLogger, type LogFields, type LogLevel, type Logger } from './logger.js';

/** pino and bunyan: fields first, message second (`logger.info({ port }, 'listening')`). */
export interface ObjectFirstLogger {
  /** Logs `msg` at debug with `fields` as record fields. */
  debug(fields: object, msg: string): unknown;
  /** Logs `msg` at info with `fields` as record fields. */
  info(fields: object, msg: string): unknown;
  /** Logs `msg` at warn with `fields` as record fields. */
  warn(fields: object, msg: string): unknown;
  /** Logs `msg` at error with `fields` as record fields. */
  error(fields: object, msg: string): unknown;
  /** A logger adding `bindings` to every record. */
  child(bindings: LogFields): ObjectFirstLogger;
}

/** A winston logger: `log(info)` with `level` and `message`, `child(meta)`, optional `levels`. */
export interface WinstonLikeLogger {
  /** Writes one entry: its `level`, its `message` and the other keys as metadata. */
  log(entry: { level: string; message: string; [key: string]: unknown }): unknown;
  /** A logger adding `meta` to every entry. */
  child(meta: LogFields): WinstonLikeLogger;
  /** The level names the logger knows (syslog levels have `warning`, not `warn`). */
  readonly levels?: Readonly<Record<string, number>>;
}

/** `console`, a `new Console(stream)`, or anything with the four message-first methods and no `child()`. */
export interface ConsoleLike {
  /** Prints at debug level. */
  debug(...data: unknown[]): void;
  /** Prints at info level. */
  info(...data: unknown[]): void;
  /** Prints at warn level. */
  warn(...data: unknown[]): void;
  /** Prints at error level. */
  error(...data: unknown[]): void;
}

/** What an option named `logger` accepts; `toLogger()` turns it into a Logger. */
export type LoggerLike = Logger | ObjectFirstLogger | WinstonLikeLogger | ConsoleLike;

/** Options of `fromConsole()`. */
export interface ConsoleAdapterOptions {
  /** Records below this level are dropped (console has no levels of its own). @default 'info' */
  level?: LogLevel;
  /** Fields added to every record; `child()` adds more. @default {} */
  bindings?: LogFields;
}

/** Every pino logger and child has it: pino's own mark, so no guessing from the call shape. */
const PINO_SERIALIZERS = Symbol.for('pino.serializers');

const EXPECTED_LOGGER =
  'a tidings Logger (debug/info/warn/error(msg, fields) and child()), or a pino, bunyan, winston or console logger';

/**
 * Normalises whatever was given as `logger` (once, where the option is read). Recognised, in
 * this order: tidings' own loggers and adapter results (branded: taken as they are); pino (by
 * its `Symbol.for('pino.serializers')` mark), bunyan (`addStream()` and `streams`), winston
 * (`log()`, `add()`, `configure()`): adapted; any other object with the four level methods and
 * `child()`: a hand-written tidings Logger, taken as it is; the four level methods without
 * `child()`: console-like, see `fromConsole()`.
 *
 * pino and tidings' Logger have the same shape at the type level, so the shape alone cannot
 * tell them apart: pino's own mark wins, and an unmarked object is trusted to be what its
 * type says. Wrap any other object-first logger (a pino look-alike without the mark) with
 * `fromPino()` yourself, or its fields are lost.
 *
 * @param fallback returned when `logger` is undefined.
 * @throws InvalidArgument when `logger` is none of the above.
 */
export function toLogger(logger: LoggerLike | undefined, fallback: Logger = silentLogger): Logger {
  if (logger === undefined) return fallback;
  if (isTidingsLogger(logger)) return logger;
  if (logger === null || typeof logger !== 'object') throw new InvalidArgument('logger', EXPECTED_LOGGER, logger);
  if (PINO_SERIALIZERS in logger) return fromPino(logger as ObjectFirstLogger);
  if (hasMethods(logger, ['addStream']) && Array.isArray((logger as { streams?: unknown }).streams)) return fromBunyan(logger as ObjectFirstLogger);
  if (hasMethods(logger, ['log', 'add', 'configure', 'child'])) return fromWinston(logger as WinstonLikeLogger);
  if (hasMethods(logger, [...LOG_LEVELS, 'child'])) return logger as Logger;
  if (hasMethods(logger, LOG_LEVELS)) return fromConsole(logger as ConsoleLike);
  throw new InvalidArgument('logger', EXPECTED_LOGGER, logger);
}

/**
 * Adapts a pino logger: `logger.info(fields, msg)`, children through pino's `child()`. Error
 * values stay Errors under keys pino has a serializer for (`err` by default, with its stack);
 * under other keys they become `{ name, message, code, stack, cause }`.
 */
export function fromPino(logger: ObjectFirstLogger): Logger {
  checkMethods(logger, [...LOG_LEVELS, 'child'], 'a pino logger (debug/info/warn/error(fields, msg) and child())');
  const serializers = (logger as { [PINO_SERIALIZERS]?: Record<string, unknown> })[PINO_SERIALIZERS];
  return objectFirst(logger, (key) => typeof serializers?.[key] === 'function');
}

/**
 * Adapts a bunyan logger: `logger.info(fields, msg)`, children through bunyan's `child()`.
 * Error values stay Errors under keys the logger has a serializer for (`bunyan.stdSerializers`
 * gives `err`); otherwise bunyan would write `{}`, so they become `{ name, message, code, stack, cause }`.
 */
export function fromBunyan(logger: ObjectFirstLogger): Logger {
  checkMethods(logger, [...LOG_LEVELS, 'child'], 'a bunyan logger (debug/info/warn/error(fields, msg) and child())');
  return objectFirst(logger, (key) => typeof (logger as { serializers?: Record<string, unknown> | null }).serializers?.[key] === 'function');
}

function objectFirst(logger: ObjectFirstLogger, serialised: (key: string) => boolean): Logger {
  return defineLogger(
    (level, msg, fields) => {
      logger[level](plainErrors(fields ?? {}, serialised), msg);
    },
    (bindings) => objectFirst(logger.child(plainErrors(bindings, serialised)), serialised),
  );
}

/** Levels to try, in order, when a winston logger was made with other levels (syslog has `warning`, not `warn`). */
const WINSTON_LEVELS: Record<LogLevel, readonly string[]> = {
  debug: ['debug', 'verbose', 'silly'],
  info: ['info', 'notice'],
  warn: ['warn', 'warning'],
  error: ['error', 'err'],
};

/**
 * Adapts a winston logger: one `logger.log({ ...fields, level, message })` per record (fields
 * merged into the info object, as winston's own `info(msg, meta)` does, but never mistaken for
 * `%s` arguments), children through winston's `child()`. Levels map onto the logger's own
 * (`warn` → `warning` for syslog levels). Errors become `{ name, message, code, stack, cause }`,
 * since winston's JSON format writes an Error field as `{}`.
 */
export function fromWinston(logger: WinstonLikeLogger): Logger {
  checkMethods(logger, ['log', 'child'], 'a winston logger (log() and child())');
  const levels = logger.levels;
  const names = Object.fromEntries(
    LOG_LEVELS.map((level) => [level, (levels && WINSTON_LEVELS[level].find((name) => name in levels)) ?? level]),
  ) as Record<LogLevel, string>;
  return winston(logger, names);
}

function winston(logger: WinstonLikeLogger, names: Record<LogLevel, string>): Logger {
  const never = () => false;
  return defineLogger(
    (level, msg, fields) => {
      logger.log({ ...plainErrors(fields ?? {}, never), level: names[level], message: msg });
    },
    (bindings) => winston(logger.child(plainErrors(bindings, never)), names),
  );
}

/**
 * Adapts `console` (the default) or any console-like object: `console.info(msg, fields)`, with
 * the bindings merged into the fields because console has no `child()`. Console has no levels
 * either, so records below `options.level` are dropped here. Errors stay Errors: `console`
 * prints them with their stack.
 *
 * @throws InvalidArgument for a target without the four methods or an unknown level.
 */
export function fromConsole(target: ConsoleLike = console, options: ConsoleAdapterOptions = {}): Logger {
  checkMethods(target, LOG_LEVELS, 'a console (debug/info/warn/error methods)');
  if (options === null || typeof options !== 'object') throw new InvalidArgument('options', 'an object', options);
  const threshold = options.level ?? 'info';
  if (!LOG_LEVELS.includes(threshold)) throw new InvalidArgument('level', `one of ${LOG_LEVELS.map((l) => `'${l}'`).join(', ')}`, threshold);
  const bindings = options.bindings ?? {};
  return defineLogger(
    (level, msg, fields) => {
      if (!levelEnabled(level, threshold)) return;
      const merged = { ...bindings, ...fields };
      // A bare message reads better than `msg {}` on a terminal.
      if (Object.keys(merged).length === 0) target[level](msg);
      else target[level](msg, merged);
    },
    (more) => fromConsole(target, { level: threshold, bindings: { ...bindings, ...more } }),
  );
}

/** `fields` with each top-level Error turned into a plain object, unless `keep(key)`; the same object when there is none. */
function plainErrors(fields: LogFields, keep: (key: string) => boolean): LogFields {
  let out: LogFields | undefined;
  for (const key of Object.keys(fields)) {
    const value = fields[key];
    if (!(value instanceof Error) || keep(key)) continue;
    out ??= { ...fields };
    out[key] = errorFields(value, true);
  }
  return out ?? fields;
}

function hasMethods(value: object, names: readonly string[]): boolean {
  return names.every((name) => typeof (value as Record<string, unknown>)[name] === 'function');
}

function checkMethods(value: unknown, names: readonly string[], expected: string): void {
  if (value === null || typeof value !== 'object' || !hasMethods(value, names)) throw new InvalidArgument('logger', expected, value);
}
