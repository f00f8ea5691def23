// The only module that knows driver names: URL scheme -> lazy import() of the driver, so a
// user of one broker never loads another broker's library.
import { DriverLoadFailure, InvalidArgument, InvalidTransportURL, MessagingTimeout } from './core/errors.js';
import { CloseOnce, type Closeable, type CloseOptions } from './core/lifecycle.js';
import { silentLogger, type Logger } from './core/logger.js';
import { toLogger, type LoggerLike } from './core/logger-adapters.js';
import { TransportURL } from './core/transport-url.js';
import { BaseDriver, type DriverModule, type TransportHealth } from './contract/base-driver.js';
import { defaultRemoteErrorRegistry, type RemoteErrorRegistry } from './contract/remote-error.js';
import { ResilienceStats } from './contract/resilience-stats.js';
import { checkTransportMiddleware, type TransportMiddleware } from './middleware/middleware.js';
import { checkInstrumentation, loadInstrumentation, type InstrumentationOptions } from './observability/instrumentation.js';

/** Loads a driver module on first use of its scheme; see {@link registerDriver}. */
export type DriverLoader = () => Promise<DriverModule>;

/** Options of {@link registerDriver}. */
export interface RegisterDriverOptions {
  /** Replace the driver already registered for the scheme (a built-in one too). @default false */
  replace?: boolean;
}

const LOADERS = new Map<string, DriverLoader>();

// The part before `+` selects the driver (oslo's `kombu+memory`), so a registered scheme cannot hold one.
const SCHEME = /^[a-z][a-z0-9.-]*$/;

/**
 * Makes `getRpcTransport()` / `getNotificationTransport()` load `load()`'s driver for URLs with
 * this scheme (`myq://host/` for `scheme` `myq`), so an application adds a transport without
 * forking tidings. `load` runs lazily, on the first transport of the scheme, so a broker library
 * is only imported by processes that use it: pass `() => import('./my-driver.js')`.
 *
 * The built-in schemes (memory, rabbit, amqp, amqps, kombu, redis, rediss, kafka) are registered
 * the same way.
 *
 * @throws InvalidArgument when `scheme` is not a lower-case URL scheme without `+`, when `load`
 * is not a function, or when the scheme already has a driver and `options.replace` is not true.
 */
export function registerDriver(scheme: string, load: DriverLoader, options: RegisterDriverOptions = {}): void {
  if (typeof scheme !== 'string' || !SCHEME.test(scheme)) {
    throw new InvalidArgument('scheme', 'a lower-case URL scheme: a letter, then letters, digits, "." or "-" (no "+", which separates oslo sub-drivers)', scheme);
  }
  if (typeof load !== 'function') throw new InvalidArgument('load', 'a function returning a Promise of a driver module, e.g. () => import(\'./my-driver.js\')', load);
  if (LOADERS.has(scheme) && options.replace !== true) {
    throw new InvalidArgument('scheme', `a scheme without a registered driver, or { replace: true } to replace the one of ${JSON.stringify(scheme)}`, scheme);
  }
  LOADERS.set(scheme, load);
}

const loadMemory: DriverLoader = () => import('./drivers/memory/index.js');
const loadAmqp: DriverLoader = () => import('./drivers/amqp/index.js');
const loadKafka: DriverLoader = () => import('./drivers/kafka/index.js');
const loadRedis: DriverLoader = () => import('./drivers/redis/index.js');
// `redis+sentinel://` loads `redis` (the part before `+` selects the driver).
const BUILT_IN: Readonly<Record<string, DriverLoader>> = { memory: loadMemory, rabbit: loadAmqp, kombu: loadAmqp, amqp: loadAmqp, amqps: loadAmqp, redis: loadRedis, rediss: loadRedis, kafka: loadKafka };
for (const [scheme, load] of Object.entries(BUILT_IN)) registerDriver(scheme, load);

// `messaging.system` of OpenTelemetry spans and metrics; other schemes report themselves.
const MESSAGING_SYSTEM: Readonly<Record<string, string>> = { rabbit: 'rabbitmq', kombu: 'rabbitmq', amqp: 'rabbitmq', amqps: 'rabbitmq', redis: 'redis', rediss: 'redis', kafka: 'kafka', memory: 'memory' };

/** URL schemes this version of tidings ships a driver for (more may be added with {@link registerDriver}). */
export const TRANSPORT_SCHEMES: readonly string[] = Object.freeze(Object.keys(BUILT_IN));


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
  /** Middlewares for every client, server, Notifier and listener on this transport (outside their own). @default {} */
  middleware?: TransportMiddleware;
  /**
   * OpenTelemetry tracing and metrics (docs/guide.md "Tracing and metrics"): `true` uses the global
   * tracer/meter providers and propagator of `@opentelemetry/api` (an optional peer dependency,
   * imported only when this is set), an object gives explicit ones. Its middlewares run outside
   * every other. @default false
   */
  instrumentation?: boolean | InstrumentationOptions;
}

/** What a transport was opened for. */
export type TransportKind = 'rpc' | 'notification';

/** An opaque handle over one driver instance. Share one per process and kind. */
export class Transport {
  /** The logger given to the transport, as a Logger; servers, listeners and notifiers default to it. */
  readonly logger: Logger;
  /** Middlewares every façade on this transport runs outside its own (frozen; empty lists when none). */
  readonly middleware: Required<TransportMiddleware>;
  private cleaned?: Promise<void>;
  private readonly closer = new CloseOnce((deadlineMs) => this.closeAll(deadlineMs), false);
  /** Servers and listeners started on this transport and not ended yet, in start order. */
  private readonly open = new Set<Closeable>();

  constructor(
    /** `rpc` or `notification`: which getter opened it. */
    readonly kind: TransportKind,
    /** The driver. Façades use it; applications should not need to. */
    readonly driver: BaseDriver,
    logger: LoggerLike = silentLogger,
    middleware?: TransportMiddleware,
    /** Counts of the clients' retries, refusals and circuit states, read by the OpenTelemetry metrics. */
    readonly resilienceStats: ResilienceStats = new ResilienceStats(),
  ) {
    this.logger = toLogger(logger);
    this.middleware = checkTransportMiddleware(middleware);
  }

  /** The redacted URL. */
  get url(): string {
    return this.driver.url.toString();
  }

  /**
   * The connection state for a health probe: `connected`, `blocked`, `reconnecting` and the
   * redacted `lastError`. Synchronous, never connects, never throws; free until called.
   */
  health(): TransportHealth {
    return this.driver.health();
  }

  /** Closes connections; pending calls fail instead of hanging. Idempotent. */
  cleanup(): Promise<void> {
    this.cleaned ??= this.driver.cleanup();
    return this.cleaned;
  }

  /**
   * Ends everything on the transport, in order: every RpcServer and NotificationListener started
   * on it and not ended yet is closed (all stop taking messages at once, then drain), then
   * `cleanup()`. One deadline, `options.deadlineMs`, covers every drain; past it each
   * subscription is released anyway, the connections are still closed, and `close()` rejects
   * with MessagingTimeout saying how many handlers were still running. The connections' own
   * closing is not under the deadline. Idempotent: later calls return the first call's promise.
   * Rejects with InvalidArgument for a bad `deadlineMs`.
   */
  close(options?: CloseOptions): Promise<void> {
    return this.closer.close(options);
  }

  /** `await using transport = await getRpcTransport(...)` closes it with the default deadline. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /**
   * Called by a server or listener when it starts, so `close()` ends it first.
   * @internal
   */
  track(part: Closeable): void {
    this.open.add(part);
  }

  /**
   * Called by a server or listener once it has ended (after `wait()`, or a `close()` past its deadline).
   * @internal
   */
  untrack(part: Closeable): void {
    this.open.delete(part);
  }

  private async closeAll(deadlineMs: number): Promise<void> {
    const parts = [...this.open];
    const outcomes = await Promise.allSettled(parts.map((part) => part.close({ deadlineMs })));
    // Counted before cleanup(): handlers the deadline left running have not finished yet.
    const running = parts.reduce((sum, part) => sum + part.inFlight, 0);
    await this.cleanup();
    const failures = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
    const other = failures.find((err) => !(err instanceof MessagingTimeout));
    if (other !== undefined) throw other;
    if (failures.length > 0) {
      throw new MessagingTimeout(`${this.toString()} did not drain within ${deadlineMs} ms: ${running} handler(s) still running in ${failures.length} of ${parts.length} servers and listeners; their subscriptions were released and the transport cleaned up`);
    }
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
  const load = LOADERS.get(parsed.driver);
  const known = [...LOADERS.keys()].join(', ');
  if (!load) {
    throw new InvalidTransportURL(`Unknown transport URL scheme ${JSON.stringify(parsed.scheme)} in ${parsed.toString()}${from}; known schemes: ${known}`);
  }
  const allowed = options.allowedRemoteExmods ?? [];
  if (!Array.isArray(allowed) || allowed.some((m) => typeof m !== 'string')) {
    throw new InvalidArgument('allowedRemoteExmods', 'an array of module names', allowed);
  }
  const baseLogger = toLogger(options.logger);
  let middleware = checkTransportMiddleware(options.middleware);
  const instrumentation = checkInstrumentation(options.instrumentation);
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
  if (typeof mod?.createDriver !== 'function') {
    throw new DriverLoadFailure(`The driver module registered for ${JSON.stringify(parsed.driver)} has no createDriver() function (${parsed.toString()})`);
  }
  const logger = baseLogger.child({ driver: parsed.driver, transport: kind, url: parsed.toString() });
  logger.info('transport URL chosen', source === 'env' ? { source, envVar: TRANSPORT_URL_ENV } : { source });
  const driver: unknown = mod.createDriver({
    url: parsed,
    defaultExchange: controlExchange,
    allowedRemoteExmods: allowed,
    remoteErrors: options.remoteErrors ?? defaultRemoteErrorRegistry,
    logger,
    options: { ...(options.driverOptions ?? {}) },
  });
  // A plain object would only fail later, inside a façade, far from the registration at fault.
  if (!(driver instanceof BaseDriver)) {
    throw new DriverLoadFailure(`The createDriver() of the driver registered for ${JSON.stringify(parsed.driver)} returned something that is not a BaseDriver (${parsed.toString()}); extend BaseDriver from tidings/driver`);
  }
  // The driver has not connected yet (drivers connect lazily): nothing to undo if this fails.
  const resilienceStats = new ResilienceStats();
  if (instrumentation) middleware = outermost(await loadInstrumentation(instrumentation, MESSAGING_SYSTEM[parsed.driver] ?? parsed.driver, driver, logger, resilienceStats), middleware);
  return new Transport(kind, driver, baseLogger, middleware, resilienceStats);
}

/** `first`'s middlewares of each kind before `then`'s. */
function outermost(first: Required<TransportMiddleware>, then: Required<TransportMiddleware>): Required<TransportMiddleware> {
  return {
    rpcClient: [...first.rpcClient, ...then.rpcClient],
    rpcServer: [...first.rpcServer, ...then.rpcServer],
    notifier: [...first.notifier, ...then.notifier],
    listener: [...first.listener, ...then.listener],
  };
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
