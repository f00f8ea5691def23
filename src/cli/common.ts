// Shared plumbing of the `tidings` commands: argument parsing on node:util parseArgs, exit
// codes, one-line error reporting, opening transports and the I/O seam the commands use.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { hostname } from 'node:os';
import {
  InvalidArgument,
  InvalidTarget,
  InvalidTransportURL,
  MessagingTimeout,
  RemoteError,
  createConsoleLogger,
  getNotificationTransport,
  getRpcTransport,
  remoteOrigin,
  silentLogger,
  type Logger,
  type Transport,
  type TransportKind,
  type TransportURL,
} from '../index.js';
import { UNSAFE_CONTEXT_KEYS } from '../contract/wire.js';

/** Process exit statuses. Scripts MAY rely on these; they are part of the CLI's contract. */
export const EXIT = Object.freeze({
  OK: 0,
  /** Anything else: the broker refused, a connection failed, an unexpected error. */
  FAILURE: 1,
  /** Bad input: unknown option, bad JSON, missing --topic, bad URL or a scheme no driver is registered for. Nothing was sent. */
  USAGE: 2,
  /** A call got no reply in time, or `listen --count` did not see enough notifications. */
  TIMEOUT: 3,
  /** The remote endpoint raised; stderr names the remote class and message. */
  REMOTE_ERROR: 4,
});

/** Where a command reads and writes. `out` is data (JSON lines), `err` is human-facing status. */
export interface CliIO {
  /**
   * Writes one line of data. Resolves once the line is flushed, so a reader that does not read
   * holds the command back; rejects with OutputClosed once the reader has gone away.
   */
  out(line: string): Promise<void>;
  /** Writes one status line; never fails (there is no one left to tell). */
  err(line: string): void;
  /** All of stdin as text, for JSON arguments given as `-`. */
  readInput(): Promise<string>;
  /** Aborted once the reader of `out` has gone away; long-running commands stop on it. */
  readonly outputClosed: AbortSignal;
  readonly env: NodeJS.ProcessEnv;
}

/** stdout's reader went away (`| head -1`): the command stops quietly with exit status 0. */
export class OutputClosed extends Error {
  override readonly name = 'OutputClosed';
}

/** One sub-command of `tidings`. */
export interface Command {
  readonly name: string;
  /** One line for the top-level help. */
  readonly summary: string;
  /** The full `--help` text. */
  readonly help: string;
  /** Runs the command and resolves with its exit status. Errors thrown are reported by `main`. */
  run(argv: readonly string[], io: CliIO): Promise<number>;
}

/** Bad input from the command line; reported as one line with exit status 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The options every command accepts. */
const COMMON_OPTIONS = {
  url: { type: 'string' },
  verbose: { type: 'boolean', short: 'v' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

export const COMMON_HELP = `Common options:
  --url <url>        transport URL (default: $TIDINGS_TRANSPORT_URL, else memory://)
                     e.g. rabbit://guest:guest@127.0.0.1:5672/
  -v, --verbose      log what the transport does (JSON lines on stderr)
  -h, --help         show this help`;

export const EXIT_HELP = `Exit status: 0 ok (also when the reader of stdout leaves early, as with | head -1),
1 failure, 2 bad input (bad JSON, missing --topic, bad URL, a URL scheme this version does not
ship), 3 timeout, 4 remote error. Errors are reported as one line on stderr.`;

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

/**
 * Parses a command's argv strictly with COMMON_OPTIONS spread in; parse errors and more than
 * `maxPositionals` positionals (unless --help) become UsageError naming `usage`.
 */
export function parseCommandLine<const O extends OptionsConfig>(
  argv: readonly string[],
  options: O,
  maxPositionals: number,
  usage: string,
): ReturnType<typeof parseArgs<{ args: string[]; options: typeof COMMON_OPTIONS & O; allowPositionals: true; strict: true }>> {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: { ...COMMON_OPTIONS, ...options }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (!(parsed.values as { help?: boolean }).help) rejectExtraPositionals(parsed.positionals, maxPositionals, usage);
  return parsed;
}

/** The transport URL to use: --url, else $TIDINGS_TRANSPORT_URL, else memory://. */
export function resolveUrl(flag: string | undefined, io: CliIO): string {
  if (flag !== undefined && flag.trim() === '') throw new UsageError('--url must not be empty');
  return flag ?? io.env.TIDINGS_TRANSPORT_URL ?? 'memory://';
}

/** How to leave memory://, for the messages about it. */
export const BROKER_HINT = 'pass --url or set $TIDINGS_TRANSPORT_URL to a broker, e.g. rabbit://guest:guest@127.0.0.1:5672/';

/**
 * One stderr warning when `url` is memory://, which lives inside this process: `what` says what
 * no other process can reach or receive.
 */
export function warnIfInProcess(url: TransportURL, what: string, io: CliIO): void {
  if (url.driver === 'memory') io.err(`warning: memory:// is in-process: ${what}; ${BROKER_HINT}`);
}

/** Opens the transport of a command (an unknown scheme is bad input: InvalidTransportURL, exit 2). */
export function openTransport(kind: TransportKind, url: TransportURL, verbose: boolean | undefined): Promise<Transport> {
  const open = kind === 'rpc' ? getRpcTransport : getNotificationTransport;
  return open(url, { logger: loggerFor(verbose) });
}

/** The logger for --verbose, else silent. */
function loggerFor(verbose: boolean | undefined): Logger {
  return verbose ? createConsoleLogger({ level: 'debug', bindings: { cli: true } }) : silentLogger;
}

/**
 * The text of a JSON argument, where `-` means stdin. Empty stdin is bad input: it is almost
 * always a forgotten pipe, and `{}` is easy to write out.
 */
export async function jsonArgument(what: string, text: string | undefined, io: CliIO): Promise<{ what: string; text: string | undefined }> {
  if (text !== '-') return { what, text };
  const input = await io.readInput();
  if (input.trim() === '') throw new UsageError(`${what} is "-" but stdin is empty: pipe the JSON in, e.g. echo '{"a": 1}' | tidings ...`);
  return { what: `${what} (from stdin)`, text: input };
}

/** Parses a JSON object given on the command line (args, payload, context). */
export function parseJsonObject(what: string, text: string | undefined, fallback: Record<string, unknown> = {}): Record<string, unknown> {
  if (text === undefined) return fallback;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${what} is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new UsageError(`${what} must be a JSON object, e.g. '{"a": 1}'`);
  }
  return value as Record<string, unknown>;
}

/** Parses `--context`: a JSON object without a key that reaches a prototype (listeners drop those anyway). */
export function parseContext(text: string | undefined): Record<string, unknown> {
  const ctx = parseJsonObject('--context', text);
  const unsafe = Object.keys(ctx).find((key) => UNSAFE_CONTEXT_KEYS.has(key));
  if (unsafe !== undefined) throw new UsageError(`--context must not have the key "${unsafe}": it would reach the context's prototype`);
  return ctx;
}

/** Parses any JSON value (notification payloads may be scalars). */
export function parseJsonValue(what: string, text: string | undefined, fallback: unknown): unknown {
  if (text === undefined) return fallback;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${what} is not valid JSON: ${(err as Error).message}`);
  }
}

/** A positive integer option (a deadline in ms). */
export function parsePositiveInt(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0) throw new UsageError(`${flag} must be a positive integer, received ${JSON.stringify(text)}`);
  return n;
}

/** Asks for a topic; a missing one is bad input. */
export function requireTopic(topic: string | undefined, command: string): string {
  if (topic === undefined || topic === '') throw new UsageError(`missing --topic (try: tidings ${command} --help)`);
  return topic;
}

function rejectExtraPositionals(positionals: readonly string[], max: number, usage: string): void {
  if (positionals.length > max) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[max])} (usage: ${usage})`);
}

/** The default server name for `serve`: the host name, as oslo uses. */
export function defaultServerName(): string {
  return hostname() || 'tidings';
}

/**
 * Turns any error into one stderr line and an exit status. Remote errors name their class;
 * messages are flattened to one line (remote tracebacks stay out of the way).
 */
export function describeFailure(err: unknown): { line: string; code: number } {
  const flat = (s: string) => s.replace(/\s*\n\s*/g, ' ').trim();
  if (err instanceof UsageError) return { line: flat(err.message), code: EXIT.USAGE };
  const origin = remoteOrigin(err);
  if (origin) {
    const message = err instanceof RemoteError ? err.value : (err as Error).message;
    return { line: flat(`remote error ${origin.className}: ${message} (module ${origin.module})`), code: EXIT.REMOTE_ERROR };
  }
  if (err instanceof MessagingTimeout) return { line: flat(`timeout: ${err.message}`), code: EXIT.TIMEOUT };
  if (err instanceof InvalidTransportURL || err instanceof InvalidArgument || err instanceof InvalidTarget) {
    return { line: flat(err.message), code: EXIT.USAGE };
  }
  if (err instanceof Error) return { line: flat(`${err.name}: ${err.message}`), code: EXIT.FAILURE };
  return { line: flat(`failed: ${String(err)}`), code: EXIT.FAILURE };
}

/** Resolves with the signal's name on the first SIGINT or SIGTERM (or when `abort` fires). */
export function shutdownRequested(abort?: AbortSignal): { promise: Promise<string>; dispose(): void } {
  let dispose = () => {};
  const promise = new Promise<string>((resolve) => {
    const onSignal = (sig: NodeJS.Signals) => resolve(sig);
    const onAbort = () => resolve('abort');
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    abort?.addEventListener('abort', onAbort, { once: true });
    // Signal listeners do not keep Node alive; on memory:// nothing else does either.
    const keepAlive = setInterval(() => {}, 1 << 30);
    dispose = () => {
      clearInterval(keepAlive);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      abort?.removeEventListener('abort', onAbort);
    };
  });
  return { promise, dispose };
}
