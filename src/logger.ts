// Injected structured logging. Silent by default; fields are structured, never interpolated.
// Never put payloads, passwords or tokens in fields; URLs must be redacted first.

/** Log levels, lowest first. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
/** Structured fields of one record (never payloads or secrets). */
export type LogFields = Record<string, unknown>;

/** The logger tidings writes to. Compatible in shape with pino and bunyan child loggers. */
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

/** The default: drops everything. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** A JSON-lines logger to stderr (or a custom sink), for the CLI and quick debugging. */
export function createConsoleLogger(
  options: { level?: LogLevel; bindings?: LogFields; sink?: (line: string) => void } = {},
): Logger {
  const level = options.level ?? 'info';
  const sink = options.sink ?? ((line: string) => process.stderr.write(line + '\n'));
  const bindings = options.bindings ?? {};
  const emit = (lvl: LogLevel, msg: string, fields?: LogFields) => {
    if (ORDER[lvl] < ORDER[level]) return;
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
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (b) => createConsoleLogger({ level, sink, bindings: { ...bindings, ...b } }),
  };
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

/** A MemoryLogger with `bindings` on every record, appending to `records`. */
export function createMemoryLogger(bindings: LogFields = {}, records: MemoryLogger['records'] = []): MemoryLogger {
  const emit = (level: LogLevel) => (msg: string, fields?: LogFields) => {
    records.push({ level, msg, fields: { ...bindings, ...fields } });
  };
  return {
    records,
    debug: emit('debug'),
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    child: (b) => createMemoryLogger({ ...bindings, ...b }, records),
  };
}

/** Turns Error values into plain objects so they survive JSON.stringify. */
export function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    return { name: value.name, message: value.message, ...(('code' in value) ? { code: (value as { code: unknown }).code } : {}) };
  }
  return value;
}
