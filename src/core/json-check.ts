// Core JSON checks: does a value survive JSON on the wire unchanged in meaning (so a bad argument
// fails before anything is sent and a bad result becomes a failure reply), and is it a plain object.
import { InvalidArgument } from './errors.js';

/** True for `{...}` objects (prototype Object or null): what JSON decodes objects to. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Throws InvalidArgument naming the offending path (e.g. `args.user.id`) for BigInt, symbols,
 * functions, non-finite numbers, Map/Set (JSON would silently turn them into `{}`) and cycles.
 * `undefined` object members are allowed: JSON drops them, as every TypeScript user expects.
 */
export function assertJsonSafe(value: unknown, path: string): void {
  // Hot path (every call and notification): no allocation per value; the path is only built
  // when something fails, from the stack of keys walked so far.
  new JsonWalker(path).walk(value);
}

class JsonWalker {
  /** Objects on the current path (for cycle detection) and the keys leading to them. */
  private readonly ancestors: object[] = [];
  private readonly keys: Array<string | number> = [];

  constructor(private readonly root: string) {}

  walk(value: unknown): void {
    switch (typeof value) {
      case 'string':
      case 'boolean':
      case 'undefined':
        return;
      case 'number':
        if (!Number.isFinite(value)) this.fail('a finite number (JSON has no NaN or Infinity)', value);
        return;
      case 'bigint':
        return this.fail('a JSON-serialisable value (convert BigInt to a string or number)', value);
      case 'function':
      case 'symbol':
        return this.fail('a JSON-serialisable value', value);
    }
    if (value === null) return;
    const obj = value as object;
    if (this.ancestors.includes(obj)) this.fail('a JSON-serialisable value without cycles', 'a circular reference');
    if (obj instanceof Map || obj instanceof Set) {
      this.fail('a JSON-serialisable value (Map and Set encode as {}; convert them or use JsonPayloadSerializer)', obj.constructor.name);
    }
    this.ancestors.push(obj);
    try {
      const toJSON = (obj as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === 'function') {
        this.walk(toJSON.call(obj, ''));
      } else if (Array.isArray(obj)) {
        for (let i = 0; i < obj.length; i++) this.child(i, obj[i]);
      } else {
        const record = obj as Record<string, unknown>;
        const keys = Object.keys(record);
        for (let i = 0; i < keys.length; i++) this.child(keys[i], record[keys[i]]);
      }
    } finally {
      this.ancestors.pop();
    }
  }

  private child(key: string | number, value: unknown): void {
    // Primitives that JSON carries as they are need no bookkeeping.
    const t = typeof value;
    if (t === 'string' || t === 'boolean' || t === 'undefined' || value === null || (t === 'number' && Number.isFinite(value))) return;
    this.keys.push(key);
    this.walk(value);
    this.keys.pop();
  }

  private fail(expected: string, received: unknown): never {
    let path = this.root;
    for (const k of this.keys) path += typeof k === 'number' ? `[${k}]` : `.${k}`;
    throw new InvalidArgument(path, expected, received);
  }
}
