// Injected structured logging. Silent by default; fields are structured, never interpolated.
// Never put payloads, passwords or tokens in fields; URLs must be redacted first.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

/** The logger tidings writes to. Compatible in shape with pino and bunyan child loggers. */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
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
  readonly records: Array<{ level: LogLevel; msg: string; fields: LogFields }>;
}

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
