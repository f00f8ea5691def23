// The one error tree of tidings. Every driver maps its broker library's errors into these
// classes; a raw amqplib/ioredis/kafkajs error never reaches a user (it rides in `cause`).

/** Options every MessagingError constructor accepts. */
export interface MessagingErrorOptions {
  /** The lower-level error that caused this one. */
  cause?: unknown;
  /** Overrides the class default for whether the same operation may succeed when retried. */
  retriable?: boolean;
}

/** Base class of every error tidings throws on purpose. */
export class MessagingError extends Error {
  /** True when retrying the same operation may succeed (a lost connection, a timeout). */
  readonly retriable: boolean;
  /** A stable machine-readable code, e.g. `MESSAGING_TIMEOUT`. */
  readonly code: string = 'MESSAGING_ERROR';
  /** `retriable` when the constructor is not told; subclasses for transient failures set true. */
  protected static defaultRetriable = false;

  constructor(message: string, options: MessagingErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: causeSnapshot(options.cause, 0) });
    this.name = new.target.name;
    this.retriable = options.retriable ?? (new.target as typeof MessagingError).defaultRetriable;
  }
}

/** Own fields of an error that say what went wrong without saying what was sent. */
const SAFE_FIELDS: ReadonlySet<string> = new Set(['name', 'message', 'stack', 'cause', 'code', 'errno', 'syscall', 'address', 'port', 'type', 'retriable']);
const MAX_CAUSE_DEPTH = 8;

/**
 * The cause a MessagingError keeps. A broker library's error can carry what it was doing (ioredis
 * the command with its arguments, `AUTH <user> <password>`; kafkajs the request), which
 * `util.inspect`, JSON and loggers print at any depth. Such an error is replaced by a copy of the
 * same class with only its name, message, stack, diagnostic fields (`code`, `errno`, ...) and, in
 * the same form, its own cause; an error without other own fields is kept as it is.
 */
function causeSnapshot(cause: unknown, depth: number): unknown {
  if (!(cause instanceof Error) || cause instanceof MessagingError || depth >= MAX_CAUSE_DEPTH) return cause;
  const inner = cause.cause === undefined ? undefined : causeSnapshot(cause.cause, depth + 1);
  const keys = Reflect.ownKeys(cause);
  if (inner === cause.cause && keys.every((key) => typeof key === 'string' && SAFE_FIELDS.has(key))) return cause;
  const copy = Object.create(Object.getPrototypeOf(cause) as object) as Error;
  for (const key of keys) {
    if (typeof key !== 'string' || !SAFE_FIELDS.has(key) || key === 'cause') continue;
    const descriptor = Object.getOwnPropertyDescriptor(cause, key)!;
    const value: unknown = descriptor.get === undefined ? descriptor.value : undefined;
    if (key === 'message' || key === 'stack' || key === 'name' || ['string', 'number', 'boolean'].includes(typeof value)) {
      Object.defineProperty(copy, key, { value, enumerable: descriptor.enumerable, writable: true, configurable: true });
    }
  }
  if (inner !== undefined) Object.defineProperty(copy, 'cause', { value: inner, enumerable: false, writable: true, configurable: true });
  return copy;
}

/** A `call` got no reply in time, or a call-monitor window passed without a heartbeat. */
export class MessagingTimeout extends MessagingError {
  override readonly code = 'MESSAGING_TIMEOUT';
  protected static override defaultRetriable = true;
}

/**
 * A handler ran past the server's or listener's `handlerTimeout`: the call was answered with
 * this instead of waiting. Not retriable: the same request would most likely hang again.
 */
export class HandlerTimeout extends MessagingTimeout {
  protected static override defaultRetriable = false;
}

/** A message could not be handed to the broker after every permitted retry. */
export class MessageDeliveryFailure extends MessagingError {
  override readonly code = 'MESSAGE_DELIVERY_FAILURE';
}

/** The broker returned a mandatory message because nothing was bound to receive it. */
export class MessageUndeliverable extends MessagingError {
  override readonly code = 'MESSAGE_UNDELIVERABLE';
  constructor(
    message: string,
    /** The exchange the message was published to. */
    readonly exchange: string,
    /** Its routing key. */
    readonly routingKey: string,
    options: MessagingErrorOptions = {},
  ) {
    super(message, options);
  }
}

/** The broker connection is lost or cannot be made; drivers retry these. */
export class ConnectionError extends MessagingError {
  override readonly code = 'CONNECTION_ERROR';
  protected static override defaultRetriable = true;
}

/** A Target is missing what the operation needs (e.g. no topic, or `call` with fanout). */
export class InvalidTarget extends MessagingError {
  override readonly code = 'INVALID_TARGET';
  constructor(
    message: string,
    /** The offending target, when known. */
    readonly target?: unknown,
    options: MessagingErrorOptions = {},
  ) {
    super(message, options);
  }
}

/** A transport URL could not be parsed or names an unknown scheme or option. */
export class InvalidTransportURL extends MessagingError {
  override readonly code = 'INVALID_TRANSPORT_URL';
}

/** An argument or option has the wrong type or value; nothing was sent. */
export class InvalidArgument extends MessagingError {
  override readonly code = 'INVALID_ARGUMENT';
  constructor(
    /** The argument or option, e.g. `timeout`, `endpoints[0].target`. */
    readonly field: string,
    /** What was expected, in words. */
    readonly expected: string,
    /** The value received (the message only describes it; secrets are never quoted). */
    readonly received: unknown,
    options: MessagingErrorOptions = {},
  ) {
    super(`Invalid ${field}: expected ${expected}, received ${describe(received)}`, options);
  }
}

/** The driver lacks a capability the caller asked for (e.g. requeue, pools). */
export class NotSupportedError extends MessagingError {
  override readonly code = 'NOT_SUPPORTED';
}

/** A driver module or its broker library could not be loaded. */
export class DriverLoadFailure extends MessagingError {
  override readonly code = 'DRIVER_LOAD_FAILURE';
}

/** The message version is above the client's version cap. */
export class RPCVersionCapError extends MessagingError {
  override readonly code = 'RPC_VERSION_CAP';
  constructor(
    /** The version the client tried to send. */
    readonly version: string,
    /** The client's `versionCap`. */
    readonly versionCap: string,
  ) {
    super(`Requested message version, ${version} is incompatible. It needs to be equal in major version and less than or equal in minor version as the specified version cap ${versionCap}.`);
  }
}

/** Base of errors raised by the RPC dispatcher on the server side. */
export class RPCDispatcherError extends MessagingError {
  override readonly code: string = 'RPC_DISPATCHER_ERROR';
}

/** No endpoint matching the namespace and version has the requested method. */
export class NoSuchMethod extends RPCDispatcherError {
  override readonly code = 'NO_SUCH_METHOD';
  constructor(
    /** The method asked for. */
    readonly method: string,
  ) {
    super(`Endpoint does not support RPC method ${method}`);
  }
}

/** No endpoint accepts the requested namespace and version. */
export class UnsupportedVersion extends RPCDispatcherError {
  override readonly code = 'UNSUPPORTED_VERSION';
  constructor(
    /** The version asked for. */
    readonly version: string,
    /** The method asked for. */
    readonly method?: string,
  ) {
    super(`Endpoint does not support RPC version ${version}. Attempted method: ${method}`);
  }
}

/** A server failed to start listening. */
export class ServerListenError extends MessagingError {
  override readonly code = 'SERVER_LISTEN_ERROR';
}

/** A message on the wire could not be decoded (bad JSON, envelope version, missing keys). */
export class MalformedMessage extends MessagingError {
  override readonly code = 'MALFORMED_MESSAGE';
}

/** An operation was used out of order (e.g. `wait()` before `stop()`, use after cleanup). */
export class InvalidState extends MessagingError {
  override readonly code = 'INVALID_STATE';
}

/**
 * A client's circuit breaker for the call's target is open (`RpcClientOptions.circuitBreaker`):
 * the call was refused at once, nothing was sent. Retriable: the same call may pass once
 * `retryAfterMs` has gone by and a probe got through (the client's own retry policy does not
 * retry it: failing fast is the breaker's point).
 */
export class CircuitOpenError extends MessagingError {
  override readonly code = 'CIRCUIT_OPEN';
  protected static override defaultRetriable = true;
  constructor(
    message: string,
    /** The target whose circuit is open, as `topic`, `topic.server` or `exchange/topic[.server]`. */
    readonly destination: string,
    /** How long until the breaker lets a probe through, ms (0 when probes are already under way). */
    readonly retryAfterMs: number,
    options: MessagingErrorOptions = {},
  ) {
    super(message, options);
  }
}

/**
 * A client's bulkhead is full (`RpcClientOptions.bulkhead`): `maxConcurrent` calls were in flight
 * and `maxQueue` more were waiting, so the call was refused at once, nothing was sent.
 */
export class BulkheadFullError extends MessagingError {
  override readonly code = 'BULKHEAD_FULL';
  protected static override defaultRetriable = true;
  constructor(
    message: string,
    /** The bulkhead's `maxConcurrent`. */
    readonly maxConcurrent: number,
    /** The bulkhead's `maxQueue`. */
    readonly maxQueue: number,
    options: MessagingErrorOptions = {},
  ) {
    super(message, options);
  }
}

/** The operation was aborted through its AbortSignal. */
export class AbortError extends MessagingError {
  override readonly code = 'ABORTED';
}

/**
 * An error raised by the remote side that is not rebuilt as a local class: either its module
 * is not in the transport's `allowedRemoteExmods`, or no class is registered for it. Its message
 * is the remote class and message only (oslo's also carries the server's traceback, file paths
 * included, into whatever shows the message); the traceback is in `traceback`, and in `stack`
 * after the local frames' place, as for remote errors rebuilt as their own class.
 */
export class RemoteError extends MessagingError {
  override readonly code = 'REMOTE_ERROR';
  constructor(
    /** Remote class name, e.g. `ValueError`. */
    readonly excType: string,
    /** Remote error text. */
    readonly value: string,
    /** Remote traceback lines. */
    readonly traceback: readonly string[] = [],
    /** Remote module, e.g. `builtins`. */
    readonly module?: string,
    /** Constructor args of the remote error, as sent. */
    readonly args: readonly unknown[] = [],
    /** Keyword args of the remote error, as sent. */
    readonly kwargs: Readonly<Record<string, unknown>> = {},
  ) {
    super(`Remote error: ${excType} ${value}.`);
    if (traceback.length) this.stack = `${this.name}: ${this.message}\n    [remote traceback]\n${traceback.join('')}`;
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? value.slice(0, 77) + '...' : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return `${typeof value} ${String(value)}`;
  if (Array.isArray(value)) return value.length === 0 ? 'an empty array' : `an array of ${value.length}`;
  return typeof value === 'object' ? 'an object' : typeof value;
}
