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

/** Schemes of drivers that are planned but not shipped yet: a clearer error than "unknown". */
const PLANNED = ['redis', 'rediss', 'kafka'];

/** Where the URL comes from when none is given. */
export const DEFAULT_TRANSPORT_URL = 'memory://';

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

export type TransportKind = 'rpc' | 'notification';

/** An opaque handle over one driver instance. Share one per process and kind. */
export class Transport {
  /** The logger given to the transport, as a Logger; servers, listeners and notifiers default to it. */
  readonly logger: Logger;
  private cleaned?: Promise<void>;

  constructor(
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

  toString(): string {
    return `Transport<${this.kind} ${this.url}>`;
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toString();
  }
}

/** Opens a transport for RPC. `url` defaults to `$TIDINGS_TRANSPORT_URL`, then `memory://`. */
export function getRpcTransport(url?: string | TransportURL, options: TransportOptions = {}): Promise<Transport> {
  return createTransport('rpc', url, options);
}

/** Opens a transport for notifications (may point at another broker than RPC). */
export function getNotificationTransport(url?: string | TransportURL, options: TransportOptions = {}): Promise<Transport> {
  return createTransport('notification', url, options);
}

async function createTransport(kind: TransportKind, url: string | TransportURL | undefined, options: TransportOptions): Promise<Transport> {
  const parsed = TransportURL.parse(url ?? process.env.TIDINGS_TRANSPORT_URL ?? DEFAULT_TRANSPORT_URL);
  const load = LOADERS[parsed.driver];
  if (!load && PLANNED.includes(parsed.driver)) {
    throw new DriverLoadFailure(`The ${parsed.driver} driver is not part of this version of tidings yet (${parsed.toString()}); available schemes: ${Object.keys(LOADERS).join(', ')}`);
  }
  if (!load) {
    throw new InvalidTransportURL(`Unknown transport URL scheme ${JSON.stringify(parsed.scheme)} in ${parsed.toString()}; known schemes: ${Object.keys(LOADERS).join(', ')}`);
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
