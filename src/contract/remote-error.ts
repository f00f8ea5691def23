// Remote errors on the wire in oslo's failure format {class, module, message, tb, args, kwargs},
// and their rebuilding on the caller: a registered class only when its module is allowed.
import {
  MessagingError,
  MessagingTimeout,
  HandlerTimeout,
  NoSuchMethod,
  RemoteError,
  RPCVersionCapError,
  UnsupportedVersion,
  InvalidTarget,
  MessageDeliveryFailure,
  InvalidArgument,
} from '../core/errors.js';
import { isPlainObject } from '../core/json-check.js';

/** oslo's failure object, as JSON-encoded into a reply's `failure` string. */
export interface FailureInfo {
  /** Class name, e.g. `ValueError`, `OutOfStock`. */
  class: string;
  /** Module of the class: `builtins`, a Python module, or a JS class's `static remoteModule`. */
  module: string;
  /** The error message. */
  message: string;
  /** Traceback lines (the JS stack on the tidings side). */
  tb: string[];
  /** Constructor arguments; tidings rebuilds a registered class as `new Class(...args)`. */
  args: unknown[];
  /** Keyword arguments (Python); empty from tidings. */
  kwargs: Record<string, unknown>;
}

/** Module under which oslo (and so tidings) reports dispatcher errors. */
export const DISPATCHER_MODULE = 'oslo_messaging.rpc.dispatcher';
/** Module of oslo's (and tidings') messaging exceptions. */
export const EXCEPTIONS_MODULE = 'oslo_messaging.exceptions';
/** Module given to application errors that do not declare `static remoteModule`. */
export const DEFAULT_APP_MODULE = 'tidings.app';

/** Modules whose registered classes are always rebuilt: language built-ins and the dispatcher's own errors. */
const ALWAYS_ALLOWED = new Set(['builtins', 'exceptions', DISPATCHER_MODULE]);

const JS_BUILTINS = new Set(['Error', 'TypeError', 'RangeError', 'SyntaxError', 'ReferenceError', 'EvalError', 'URIError']);

/** Turns a remote failure back into an Error instance. Must not throw. */
export type RemoteErrorFactory = (info: FailureInfo) => Error;

/** Maps (module, class) to a factory; the transport consults it for allowed modules. */
export class RemoteErrorRegistry {
  private readonly factories = new Map<string, RemoteErrorFactory>();

  /**
   * Registers an error class. Its remote identity is (`module`, `ctor.name`); by default the
   * class is rebuilt as `new ctor(...args)` with the remote message and traceback attached.
   */
  register(module: string, ctor: new (...args: any[]) => Error, factory?: RemoteErrorFactory): this {
    this.factories.set(`${module}\0${ctor.name}`, factory ?? ((info) => new ctor(...info.args)));
    return this;
  }

  /** The factory registered for (`module`, `className`), if any. */
  lookup(module: string, className: string): RemoteErrorFactory | undefined {
    return this.factories.get(`${module}\0${className}`);
  }

  /** A copy that can be extended without touching this one. */
  clone(): RemoteErrorRegistry {
    const copy = new RemoteErrorRegistry();
    for (const [k, v] of this.factories) copy.factories.set(k, v);
    return copy;
  }
}

/** The default registry: JS built-in errors (module `builtins`) and tidings' own errors. */
export const defaultRemoteErrorRegistry = new RemoteErrorRegistry()
  .register('builtins', Error)
  .register('builtins', TypeError)
  .register('builtins', RangeError)
  .register('builtins', SyntaxError)
  .register('builtins', ReferenceError)
  .register('builtins', EvalError)
  .register('builtins', URIError)
  // Python sends these with args = [message]; tidings sends [method] / [version, method].
  .register(DISPATCHER_MODULE, NoSuchMethod, (i) => new NoSuchMethod(/RPC method (\S+)$/.exec(i.message)?.[1] ?? String(i.args[0] ?? '')))
  .register(DISPATCHER_MODULE, UnsupportedVersion, (i) => {
    const m = /RPC version (\S+)\. Attempted method: (\S+)$/.exec(i.message);
    return new UnsupportedVersion(m?.[1] ?? String(i.args[0] ?? ''), m?.[2] ?? textOrUndefined(i.args[1]));
  })
  // Arguments refused by a contract's schema (args [field, expected]; the received value stays on the server).
  .register(DISPATCHER_MODULE, InvalidArgument, (i) => new InvalidArgument(String(i.args[0] ?? 'args'), String(i.args[1] ?? ''), undefined))
  // The dispatcher's answer to a handler past its handlerTimeout, rebuilt on every tidings caller
  // (the module is always allowed); a Python caller gets a RemoteError naming it (oslo has no such class).
  .register(DISPATCHER_MODULE, HandlerTimeout, (i) => new HandlerTimeout(i.message))
  .register(EXCEPTIONS_MODULE, MessagingTimeout, (i) => new MessagingTimeout(i.message))
  .register(EXCEPTIONS_MODULE, MessageDeliveryFailure, (i) => new MessageDeliveryFailure(i.message))
  .register(EXCEPTIONS_MODULE, InvalidTarget, (i) => new InvalidTarget(i.message))
  .register(EXCEPTIONS_MODULE, RPCVersionCapError, (i) => new RPCVersionCapError(String(i.args[0] ?? ''), String(i.args[1] ?? '')));

/** Properties a rebuilt error carries about its remote origin. */
export interface RemoteOrigin {
  /** The remote module, e.g. `builtins`, `shop.errors`. */
  module: string;
  /** The remote class name. */
  className: string;
  /** The remote traceback lines. */
  traceback: readonly string[];
}

/** Where a rebuilt error came from, or undefined for a local error. */
export function remoteOrigin(err: unknown): RemoteOrigin | undefined {
  return err && typeof err === 'object' ? (err as { [REMOTE]?: RemoteOrigin })[REMOTE] : undefined;
}

const REMOTE = Symbol.for('tidings.remoteOrigin');

/**
 * A failure to send without its traceback (RpcServer `sendTraceback: false`): serialised as the
 * wrapped failure with `tb: []`, so callers learn the class and message but none of the server's
 * file paths. The wrapper never reaches a caller.
 */
export class UntracedFailure {
  constructor(
    /** What the method threw. */
    readonly failure: unknown,
  ) {}
}

/** Builds oslo's failure object from any thrown value (an UntracedFailure: the wrapped one, with `tb: []`). */
export function serializeRemoteError(err: unknown): FailureInfo {
  if (err instanceof UntracedFailure) return { ...serializeRemoteError(err.failure), tb: [] };
  if (!(err instanceof Error)) {
    const message = typeof err === 'string' ? err : safeJson(err);
    return { class: 'Error', module: 'builtins', message, tb: [], args: [message], kwargs: {} };
  }
  const origin = remoteOrigin(err);
  const ctor = err.constructor as { name: string; remoteModule?: unknown };
  const className = origin?.className ?? (ctor.name || err.name || 'Error');
  const module = origin?.module ?? moduleOf(err, ctor);
  const own = err as unknown as { args?: unknown; kwargs?: unknown };
  const args = Array.isArray(own.args) ? own.args : argsOf(err);
  const kwargs = isPlainObject(own.kwargs) ? own.kwargs : {};
  const tb = (err.stack ?? `${err.name}: ${err.message}`).split('\n').map((line) => line + '\n');
  // A value JSON cannot carry (BigInt, a throwing toJSON) must not turn args into null: Python
  // would fail on `cls(*None)` and the caller would get a RemoteError instead of the class.
  const wireArgs = primitive(args);
  const wireKwargs = primitive(kwargs);
  return {
    class: className,
    module,
    message: err.message,
    tb,
    args: Array.isArray(wireArgs) ? wireArgs : [err.message],
    kwargs: isPlainObject(wireKwargs) ? wireKwargs : {},
  };
}

/** oslo's `failure` string: the failure object as JSON. */
export function serializeFailure(err: unknown): string {
  return JSON.stringify(serializeRemoteError(err));
}

/**
 * Rebuilds the remote error. A registered class is used only when its module is allowed
 * (`builtins` and the dispatcher's module always are); otherwise, or when the factory
 * throws, the result is a RemoteError carrying class, message, traceback, args and kwargs.
 */
export function deserializeRemoteError(
  failure: string | FailureInfo | unknown,
  allowedModules: readonly string[] = [],
  registry: RemoteErrorRegistry = defaultRemoteErrorRegistry,
): Error {
  const info = normaliseFailure(failure);
  const module = info.module === 'exceptions' ? 'builtins' : info.module;
  const allowed = ALWAYS_ALLOWED.has(module) || allowedModules.includes(module);
  const factory = allowed ? registry.lookup(module, info.class) : undefined;
  if (factory) {
    try {
      const rebuilt = factory(info);
      if (rebuilt instanceof Error) {
        if (rebuilt.message !== info.message && info.message) rebuilt.message = info.message;
        Object.defineProperty(rebuilt, REMOTE, { value: { module, className: info.class, traceback: info.tb }, enumerable: false });
        if (info.tb.length) rebuilt.stack = `${rebuilt.name}: ${rebuilt.message}\n    [remote traceback]\n${info.tb.join('')}`;
        return rebuilt;
      }
    } catch {
      // fall through to RemoteError, as oslo does when construction fails
    }
  }
  const remote = new RemoteError(info.class, info.message, info.tb, module, info.args, info.kwargs);
  Object.defineProperty(remote, REMOTE, { value: { module, className: info.class, traceback: info.tb }, enumerable: false });
  return remote;
}

function normaliseFailure(failure: unknown): FailureInfo {
  let data: unknown = failure;
  if (typeof failure === 'string') {
    try {
      data = JSON.parse(failure);
    } catch {
      return { class: 'Error', module: 'builtins', message: failure, tb: [], args: [failure], kwargs: {} };
    }
  }
  const obj = isPlainObject(data) ? data : {};
  const message = typeof obj.message === 'string' ? obj.message : safeJson(obj.message ?? '');
  return {
    class: typeof obj.class === 'string' && obj.class ? obj.class.replace(/_Remote$/, '') : 'Error',
    module: typeof obj.module === 'string' && obj.module ? obj.module.replace(/_Remote$/, '') : 'builtins',
    message,
    tb: Array.isArray(obj.tb) ? obj.tb.map(String) : [],
    args: Array.isArray(obj.args) ? obj.args : [message],
    kwargs: isPlainObject(obj.kwargs) ? obj.kwargs : {},
  };
}

function moduleOf(err: Error, ctor: { name: string; remoteModule?: unknown }): string {
  if (typeof ctor.remoteModule === 'string' && ctor.remoteModule) return ctor.remoteModule;
  // InvalidArgument too: a caller's bad arguments are the dispatcher's to report, and always rebuilt.
  // HandlerTimeout too: the server's answer for a handler past its deadline, like NoSuchMethod.
  if (err instanceof NoSuchMethod || err instanceof UnsupportedVersion || err instanceof InvalidArgument || err instanceof HandlerTimeout) return DISPATCHER_MODULE;
  if (err instanceof MessagingError) return EXCEPTIONS_MODULE;
  if (JS_BUILTINS.has(ctor.name)) return 'builtins';
  return DEFAULT_APP_MODULE;
}

function argsOf(err: Error): unknown[] {
  if (err instanceof NoSuchMethod) return [err.method];
  if (err instanceof UnsupportedVersion) return [err.version, err.method];
  if (err instanceof RPCVersionCapError) return [err.version, err.versionCap];
  if (err instanceof InvalidArgument) return [err.field, err.expected];
  return [err.message];
}

/** Any present member as text (null and undefined are absent). */
function textOrUndefined(v: unknown): string | undefined {
  return v === undefined || v === null ? undefined : String(v);
}

function primitive(value: unknown): unknown {
  try {
    return JSON.parse(JSON.stringify(value ?? null));
  } catch {
    return null;
  }
}

function safeJson(value: unknown): string {
  try {
    return typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
