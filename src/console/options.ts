// Options of startConsole(): the type, its frozen defaults and the check that names the field,
// what was expected and what was received (p-queue's messages).
import { randomBytes } from 'node:crypto';
import { InvalidArgument, toLogger, type Logger, type LoggerLike } from '../index.js';

/** Options of {@link startConsole}. */
export interface ConsoleOptions {
  /** TCP port to listen on; 0 picks a free one (read it from `ConsoleHandle.url`). @default 8640 */
  port?: number;
  /** Interface to bind. Anything but loopback exposes the console to the network: think twice. @default '127.0.0.1' */
  host?: string;
  /** RPC topics shown on the servers page (discover() and ping on each). @default [] */
  topics?: readonly string[];
  /** Notification topics whose pools are shown and sampled for the lag chart. @default [] */
  notificationTopics?: readonly string[];
  /** Named pools to look at where the broker cannot list them (RabbitMQ). @default [] */
  pools?: readonly string[];
  /** Servers expected per RPC topic, shown as "expected N, see M". @default {} */
  expectedServers?: Readonly<Record<string, number>>;
  /** Allows replay and purge of dead letters (each still needs the token). @default false */
  allowWrite?: boolean;
  /**
   * The token write requests carry in `X-Tidings-Token` (at least 16 characters).
   * @default $TIDINGS_CONSOLE_TOKEN, else 32 random bytes as hex
   */
  token?: string;
  /** How often pools are sampled and pages refresh, ms (at least 250). @default 2000 */
  refreshMs?: number;
  /** Injected logger; never given a token, a password or a payload. @default the transport's logger */
  logger?: LoggerLike;
}

/** Defaults of {@link ConsoleOptions}. */
export const CONSOLE_DEFAULTS = Object.freeze({
  /** TCP port. */
  port: 8640,
  /** Interface: loopback only. */
  host: '127.0.0.1',
  /** Page refresh and pool sampling interval, ms. */
  refreshMs: 2000,
  /** How long pool samples and traffic buckets are kept, ms. */
  historyMs: 10 * 60_000,
});

/** The environment variable a token is read from when `options.token` is not given. */
export const CONSOLE_TOKEN_ENV = 'TIDINGS_CONSOLE_TOKEN';

/** ConsoleOptions checked, with every default filled in. */
export interface ResolvedConsoleOptions {
  readonly port: number;
  readonly host: string;
  readonly topics: readonly string[];
  readonly notificationTopics: readonly string[];
  readonly pools: readonly string[];
  readonly expectedServers: Readonly<Record<string, number>>;
  readonly allowWrite: boolean;
  readonly token: string;
  readonly refreshMs: number;
  readonly logger: Logger | undefined;
}

const NAME = /^[\w.:-]{1,255}$/;

function names(field: string, value: unknown): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || !NAME.test(v))) {
    throw new InvalidArgument(field, 'an array of names (letters, digits, _ . : -)', value);
  }
  return Object.freeze([...new Set(value as string[])]);
}

/**
 * Checks `options` and fills in the defaults; `env` supplies $TIDINGS_CONSOLE_TOKEN.
 * @throws InvalidArgument naming the first bad field (a token is never quoted).
 */
export function resolveConsoleOptions(options: ConsoleOptions = {}, env: NodeJS.ProcessEnv = process.env): ResolvedConsoleOptions {
  if (options === null || typeof options !== 'object') throw new InvalidArgument('options', 'an object', options);
  const port = options.port ?? CONSOLE_DEFAULTS.port;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgument('port', 'an integer from 0 to 65535', port);
  const host = options.host ?? CONSOLE_DEFAULTS.host;
  if (typeof host !== 'string' || host === '' || /[\s/@]/.test(host)) throw new InvalidArgument('host', 'an interface address such as 127.0.0.1', host);
  const refreshMs = options.refreshMs ?? CONSOLE_DEFAULTS.refreshMs;
  if (!Number.isInteger(refreshMs) || refreshMs < 250 || refreshMs > 600_000) throw new InvalidArgument('refreshMs', 'an integer from 250 to 600000 (ms)', refreshMs);
  const expected = options.expectedServers ?? {};
  if (expected === null || typeof expected !== 'object' || Array.isArray(expected)) throw new InvalidArgument('expectedServers', 'an object {topic: count}', expected);
  for (const [topic, n] of Object.entries(expected)) {
    if (!NAME.test(topic) || !Number.isInteger(n) || n < 0) throw new InvalidArgument(`expectedServers.${topic}`, 'a count (integer >= 0) for a topic name', n);
  }
  if (options.allowWrite !== undefined && typeof options.allowWrite !== 'boolean') throw new InvalidArgument('allowWrite', 'a boolean', options.allowWrite);
  const token = options.token ?? env[CONSOLE_TOKEN_ENV] ?? randomBytes(32).toString('hex');
  // Described, never quoted: the message of an InvalidArgument may reach a log.
  if (typeof token !== 'string' || token.length < 16 || token.length > 512 || !/^[\x21-\x7e]+$/.test(token)) {
    throw new InvalidArgument(options.token !== undefined ? 'token' : CONSOLE_TOKEN_ENV, 'a token of 16 to 512 printable ASCII characters without spaces', `a value of ${typeof token === 'string' ? token.length : typeof token} characters`);
  }
  return Object.freeze({
    port,
    host,
    topics: names('topics', options.topics),
    notificationTopics: names('notificationTopics', options.notificationTopics),
    pools: names('pools', options.pools),
    expectedServers: Object.freeze({ ...expected }),
    allowWrite: options.allowWrite ?? false,
    token,
    refreshMs,
    logger: options.logger === undefined ? undefined : toLogger(options.logger),
  });
}
