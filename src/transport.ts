// The only module that knows driver names: URL scheme -> lazy import() of the driver, so a
// user of one broker never loads another broker's library.
import { DriverLoadFailure, InvalidArgument, InvalidTransportURL } from './errors.js';
import { silentLogger, type Logger } from './logger.js';
import { toLogger, type LoggerLike } from './logger-adapters.js';
import { TransportURL } from './transport-url.js';
import type { BaseDriver, DriverModule } from './driver/base-driver.js';
import { defaultRemoteErrorRegistry, type RemoteErrorRegistry } from './driver/remote-error.js';

const LOADERS: Record<string, () => Promise<DriverModule>> = {
  memory: () => import('./drivers/memory/index.js'),
  rabbit: () => import('./drivers/amqp/index.js'),
  kombu: () => import('./drivers/amqp/index.js'),
  amqp: () => import('./drivers/amqp/index.js'),
  amqps: () => import('./drivers/amqp/index.js'),
};

/** URL schemes this version of tidings can load a driver for. */
export const TRANSPORT_SCHEMES: readonly string[] = Object.freeze(Object.keys(LOADERS));

/**
 * Schemes of drivers that are planned but not shipped yet: a clearer error than "unknown", and
 * what package.json must not claim yet (test/unit/package-metadata.test.ts holds it to that).
 */
export const PLANNED_SCHEMES: readonly string[] = Object.freeze(['redis', 'rediss', 'kafka']);

/** The URL used when neither an argument nor `$TIDINGS_TRANSPORT_URL` gives one. */
export const DEFAULT_TRANSPORT_URL = 'memory://';

/** The environment variable read when no URL argument is given. */
export const TRANSPORT_URL_ENV = 'TIDINGS_TRANSPORT_URL';

/** Where the transport's URL came from, as logged when the transport opens. */
export type TransportURLSource = 'argument' | 'env' | 'default';

/**
 * Options of {@link getRpcTransport} and {@link getNotificationTransport}.
 *
 * URL choice: the `url` argument, else `$TIDINGS_TRANSPORT_URL` (read at each call, so a
 * library that opens a transport without a URL follows the process environment), else
 * `memory://`. Opening a transport logs `transport URL chosen` at info on `logger` with the
 * redacted `url`, `source` (`'argument' | 'env' | 'default'`) and, for `env`, `envVar`.
 */
export interface TransportOptions {
  /** Modules whose registered error classes a caller rebuilds (oslo `allowed_remote_exmods`). */
  allowedRemoteExmods?: readonly string[];
  /** Classes for rebuilding remote errors. @default defaultRemoteErrorRegistry */
  remoteErrors?: RemoteErrorRegistry;
  /** Exchange for targets without one (oslo `control_exchange`). @default 'openstack' */
  controlExchange?: string;
  /** Injected logger: a tidings Logger, or pino, bunyan, winston or console as they are (see `toLogger()`). @default silentLogger */
  logger?: LoggerLike;
  /** Driver options; override the same names given in the URL query. */
  driverOptions?: Record<string, unknown>;
}

/** What a transport was opened for. */
export type TransportKind = 'rpc' | 'notification';

/** An opaque handle over one driver instance. Share one per process and kind. */
export class Transport {
  /** The logger given to the transport, as a Logger; servers, listeners and notifiers default to it. */
  readonly logger: Logger;
  private cleaned?: Promise<void>;

  constructor(
    /** `rpc` or `notification`: which getter opened it. */
    readonly kind: TransportKind,
    /** The driver. Façades use it; applications should not need to. */
    readonly driver: BaseDriver,
    logger: LoggerLike = silentLogger,
  ) {
    this.logger = toLogger(logger);
  }

  /** The redacted URL. */
  get url(): string {
    return this.driver.url.toString();
  }

  /** Closes connections; pending calls fail instead of hanging. Idempotent. */
  cleanup(): Promise<void> {
    this.cleaned ??= this.driver.cleanup();
    return this.cleaned;
  }

  /** `Transport<rpc memory://>`, with the URL redacted. */
  toString(): string {
    return `Transport<${this.kind} ${this.url}>`;
  }

  /** `JSON.stringify` shows the kind and the redacted URL, never the driver's internals. */
  toJSON(): {
    /** `rpc` or `notification`. */
    kind: TransportKind;
    /** The redacted URL. */
    url: string;
  } {
    return { kind: this.kind, url: this.url };
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toString();
  }
}

/**
 * Opens a transport for RPC.
 *
 * `url` defaults to `$TIDINGS_TRANSPORT_URL`, then `memory://`; which one was used is logged
 * at info on `options.logger` (see {@link TransportOptions}). Passwords in the URL must be
 * percent-encoded (`encodeURIComponent`); an ambiguous URL fails with `InvalidTransportURL`.
 */
export function getRpcTransport(url?: string | TransportURL, options: TransportOptions = {}): Promise<Transport> {
  return createTransport('rpc', url, options);
}

/**
 * Opens a transport for notifications (may point at another broker than RPC).
 *
 * `url` defaults to `$TIDINGS_TRANSPORT_URL`, then `memory://`, logged as for
 * {@link getRpcTransport}.
 */
export function getNotificationTransport(url?: string | TransportURL, options: TransportOptions = {}): Promise<Transport> {
  return createTransport('notification', url, options);
}

async function createTransport(kind: TransportKind, url: string | TransportURL | undefined, options: TransportOptions): Promise<Transport> {
  const { parsed, source } = chooseUrl(url);
  const from = source === 'env' ? ` (from $${TRANSPORT_URL_ENV})` : '';
  const load = LOADERS[parsed.driver];
  if (!load && PLANNED_SCHEMES.includes(parsed.driver)) {
    throw new DriverLoadFailure(`The ${parsed.driver} driver is not part of this version of tidings yet (${parsed.toString()}${from}); available schemes: ${TRANSPORT_SCHEMES.join(', ')}`);
  }
  if (!load) {
    throw new InvalidTransportURL(`Unknown transport URL scheme ${JSON.stringify(parsed.scheme)} in ${parsed.toString()}${from}; known schemes: ${TRANSPORT_SCHEMES.join(', ')}`);
  }
  const allowed = options.allowedRemoteExmods ?? [];
  if (!Array.isArray(allowed) || allowed.some((m) => typeof m !== 'string')) {
    throw new InvalidArgument('allowedRemoteExmods', 'an array of module names', allowed);
  }
  const baseLogger = toLogger(options.logger);
  const controlExchange = options.controlExchange ?? 'openstack';
  if (typeof controlExchange !== 'string' || !controlExchange) throw new InvalidArgument('controlExchange', 'a non-empty string', controlExchange);
  let mod: DriverModule;
  try {
    mod = await load();
  } catch (err) {
    const missing = /Cannot find (?:package|module) '([^']+)'/.exec((err as Error).message)?.[1];
    const hint = missing ? `: the package "${missing}" is not installed (npm install ${missing})` : `: ${(err as Error).message}`;
    throw new DriverLoadFailure(`Could not load the ${parsed.driver} driver for ${parsed.toString()}${hint}`, { cause: err });
  }
  const logger = baseLogger.child({ driver: parsed.driver, transport: kind, url: parsed.toString() });
  logger.info('transport URL chosen', source === 'env' ? { source, envVar: TRANSPORT_URL_ENV } : { source });
  const driver = mod.createDriver({
    url: parsed,
    defaultExchange: controlExchange,
    allowedRemoteExmods: allowed,
    remoteErrors: options.remoteErrors ?? defaultRemoteErrorRegistry,
    logger,
    options: { ...(options.driverOptions ?? {}) },
  });
  return new Transport(kind, driver, baseLogger);
}

function chooseUrl(url: string | TransportURL | undefined): { parsed: TransportURL; source: TransportURLSource } {
  if (url !== undefined) return { parsed: TransportURL.parse(url), source: 'argument' };
  const fromEnv = process.env[TRANSPORT_URL_ENV];
  if (fromEnv === undefined) return { parsed: TransportURL.parse(DEFAULT_TRANSPORT_URL), source: 'default' };
  try {
    return { parsed: TransportURL.parse(fromEnv), source: 'env' };
  } catch (err) {
    // Without this a user who passed no URL cannot tell where the bad one came from.
    if (err instanceof InvalidTransportURL) throw new InvalidTransportURL(`${err.message} (from $${TRANSPORT_URL_ENV})`, { cause: err });
    throw err;
  }
}
