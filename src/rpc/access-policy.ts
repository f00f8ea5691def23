// Which endpoint methods a remote caller may invoke (oslo RPCAccessPolicyBase and friends).
// The dispatcher only ever sees methods found by lookupEndpointMethod: never Object.prototype's.

type AnyFunction = (...args: any[]) => any;

/**
 * Decides whether `method` of `endpoint` may be called remotely. The dispatcher asks only for
 * methods that exist on the endpoint (see `lookupEndpointMethod`), passing the function found.
 * Implementations MUST be synchronous and MUST NOT throw; a refusal reaches the caller as
 * `NoSuchMethod`, exactly as if the method did not exist.
 */
export interface RpcAccessPolicy {
  /** True when remote callers may invoke `endpoint[method]` (the function `fn`). */
  isAllowed(endpoint: object, method: string, fn: AnyFunction): boolean;
}

/**
 * The function `name` resolves to on `endpoint`: an own data property holding a function, or a
 * method defined on the prototype chain BELOW Object.prototype (class methods, inherited ones).
 * Getters are not invoked and count as absent; so do `toString`, `__proto__`, `hasOwnProperty`
 * and everything else every object inherits.
 */
export function lookupEndpointMethod(endpoint: object, name: string): AnyFunction | undefined {
  for (let obj: object | null = endpoint; obj !== null && obj !== Object.prototype; obj = Object.getPrototypeOf(obj)) {
    const descriptor = Object.getOwnPropertyDescriptor(obj, name);
    if (descriptor) return typeof descriptor.value === 'function' ? (descriptor.value as AnyFunction) : undefined;
  }
  return undefined;
}

function isClassConstructor(endpoint: object, method: string, fn: AnyFunction): boolean {
  return method === 'constructor' || fn === (endpoint as { constructor?: unknown }).constructor;
}

/** oslo's default: refuses `_private` names and `constructor`; allows every other endpoint method. */
export class DefaultRpcAccessPolicy implements RpcAccessPolicy {
  isAllowed(endpoint: object, method: string, fn: AnyFunction): boolean {
    return !method.startsWith('_') && !isClassConstructor(endpoint, method, fn);
  }
}

/** oslo's legacy policy: every endpoint method, `_private` ones included (never `constructor`). */
export class LegacyRpcAccessPolicy implements RpcAccessPolicy {
  isAllowed(endpoint: object, method: string, fn: AnyFunction): boolean {
    return !isClassConstructor(endpoint, method, fn);
  }
}

const EXPOSED = Symbol.for('tidings.rpc.exposed');

/** oslo's explicit policy: only methods marked with `expose`. */
export class ExplicitRpcAccessPolicy implements RpcAccessPolicy {
  isAllowed(endpoint: object, method: string, fn: AnyFunction): boolean {
    return isExposed(fn) && !isClassConstructor(endpoint, method, fn);
  }
}

/**
 * Marks a method as callable under `ExplicitRpcAccessPolicy` (oslo `@expose`). Use as a
 * wrapper, `ping = expose((ctx) => 'pong')`, or as a method decorator, `@expose ping(ctx) {}`.
 * Returns the same function, marked.
 */
export function expose<F extends AnyFunction>(fn: F, _decoratorContext?: unknown): F {
  Object.defineProperty(fn, EXPOSED, { value: true, configurable: true, enumerable: false });
  return fn;
}

/** True when `fn` was marked with `expose`. */
export function isExposed(fn: AnyFunction): boolean {
  return (fn as { [EXPOSED]?: boolean })[EXPOSED] === true;
}
