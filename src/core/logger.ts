// Injected structured logging. Silent by default; fields are structured, never interpolated.
// Never put payloads, passwords or tokens in fields; URLs must be redacted first.

/** Log levels, lowest first. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
/** Structured fields of one record (never payloads or secrets). */
export type LogFields = Record<string, unknown>;

/**
 * The logger tidings writes to: message first, structured fields second. pino and bunyan take
 * `(fields, msg)` instead; give those (and winston or `console`) as they are wherever tidings
 * accepts a logger, and `toLogger()` adapts them (see `fromPino()` and friends).
 */
export interface Logger {
  /** Detail for debugging: expected errors, heartbeats, subscriptions. */
  debug(msg: string, fields?: LogFields): void;
  /** Normal events worth keeping. */
  info(msg: string, fields?: LogFields): void;
  /** Something odd that tidings handled (a retry, a malformed message). */
  warn(msg: string, fields?: LogFields): void;
  /** A failure: an unexpected handler error, a lost notification. */
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `bindings` to every record. */
  child(bindings: LogFields): Logger;
}

/**
 * Marks tidings' own loggers (and adapter results) so `toLogger()` takes them as they are
 * instead of guessing from their shape. `Symbol.for` so that two copies of tidings agree.
 */
const LOGGER_BRAND = Symbol.for('tidings.logger');

/** The levels tidings logs at, lowest first. */
export const LOG_LEVELS: readonly LogLevel[] = Object.freeze(['debug', 'info', 'warn', 'error']);

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** True when `level` is at or above `threshold`. */
export function levelEnabled(level: LogLevel, threshold: LogLevel): boolean {
  return ORDER[level] >= ORDER[threshold];
}

/** True for loggers built by tidings (`silentLogger`, `createConsoleLogger`, the adapters, ...). */
export function isTidingsLogger(value: unknown): value is Logger {
  return typeof value === 'object' && value !== null && (value as { [LOGGER_BRAND]?: unknown })[LOGGER_BRAND] === true;
}

/**
 * Builds a branded Logger from one emit function; `child` makes the logger for more bindings.
 * Every tidings logger goes through here so the four level methods are written once.
 */
export function defineLogger(emit: (level: LogLevel, msg: string, fields?: LogFields) => void, child: (bindings: LogFields) => Logger): Logger {
  const logger: Logger = {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child,
  };
  // Not enumerable: spreading or comparing a logger in a test should not see the brand.
  Object.defineProperty(logger, LOGGER_BRAND, { value: true });
  return logger;
}

/** The default: drops everything. */
export const silentLogger: Logger = defineLogger(
  () => {},
  () => silentLogger,
);

/** A JSON-lines logger to stderr (or a custom sink), for the CLI and quick debugging. */
export function createConsoleLogger(
  options: { level?: LogLevel; bindings?: LogFields; sink?: (line: string) => void } = {},
): Logger {
  const level = options.level ?? 'info';
  const sink = options.sink ?? ((line: string) => process.stderr.write(line + '\n'));
  const bindings = options.bindings ?? {};
  const emit = (lvl: LogLevel, msg: string, fields?: LogFields) => {
    if (!levelEnabled(lvl, level)) return;
    const time = new Date().toISOString();
    let line: string;
    try {
      line = JSON.stringify({ level: lvl, time, msg, ...bindings, ...fields }, errorReplacer);
    } catch (err) {
      // A BigInt or a cycle in the fields: logging must never throw into the caller's error path.
      line = JSON.stringify({ level: lvl, time, msg, logError: `fields not serialisable: ${(err as Error).message}` });
    }
    sink(line);
  };
  return defineLogger(emit, (b) => createConsoleLogger({ level, sink, bindings: { ...bindings, ...b } }));
}

/** A logger that keeps records in memory; for tests that assert what was logged. */
export interface MemoryLogger extends Logger {
  /** Every record so far, oldest first; children append to the same array. */
  readonly records: Array<{
    /** The level. */
    level: LogLevel;
    /** The message. */
    msg: string;
    /** Bindings and fields, merged. */
    fields: LogFields;
  }>;
}

/** Records into `records` (shared by its children); each record's fields include the bindings. */
export function createMemoryLogger(bindings: LogFields = {}, records: MemoryLogger['records'] = []): MemoryLogger {
  const logger = defineLogger(
    (level, msg, fields) => {
      records.push({ level, msg, fields: { ...bindings, ...fields } });
    },
    (b) => createMemoryLogger({ ...bindings, ...b }, records),
  );
  return Object.assign(logger, { records });
}

/** How far `errorFields` follows `cause`: deep enough for a wrapped driver error, bounded against cycles. */
const MAX_CAUSE_DEPTH = 3;

/**
 * An Error as a plain object: `name`, `message`, `code` when it has one, and with `detail` also
 * `stack` and an Error `cause` (followed a few levels). Error properties are not enumerable, so loggers
 * that JSON-encode fields would otherwise write `{}`.
 */
export function errorFields(err: Error, detail = false, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = { name: err.name, message: err.message };
  if ('code' in err) out.code = (err as { code: unknown }).code;
  if (!detail) return out;
  if (err.stack) out.stack = err.stack;
  const cause = (err as { cause?: unknown }).cause;
  // Only Error causes: an arbitrary cause value may hold anything, secrets included.
  if (cause instanceof Error && depth < MAX_CAUSE_DEPTH) out.cause = errorFields(cause, true, depth + 1);
  return out;
}

/** Turns Error values into plain objects so they survive JSON.stringify. */
export function errorReplacer(_key: string, value: unknown): unknown {
  return value instanceof Error ? errorFields(value) : value;
}
