// Checks that a value survives JSON on the wire unchanged in meaning, so a bad argument fails
// before anything is sent (client) and a bad result becomes a failure reply (server).
import { InvalidArgument } from './errors.js';

/**
 * Throws InvalidArgument naming the offending path (e.g. `args.user.id`) for BigInt, symbols,
 * functions, non-finite numbers, Map/Set (JSON would silently turn them into `{}`) and cycles.
 * `undefined` object members are allowed: JSON drops them, as every TypeScript user expects.
 */
export function assertJsonSafe(value: unknown, path: string): void {
  walk(value, path, new Set());
}

function walk(value: unknown, path: string, ancestors: Set<object>): void {
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new InvalidArgument(path, 'a finite number (JSON has no NaN or Infinity)', value);
      return;
    case 'bigint':
      throw new InvalidArgument(path, 'a JSON-serialisable value (convert BigInt to a string or number)', value);
    case 'function':
    case 'symbol':
      throw new InvalidArgument(path, 'a JSON-serialisable value', value);
  }
  if (value === null) return;
  const obj = value as object;
  if (ancestors.has(obj)) throw new InvalidArgument(path, 'a JSON-serialisable value without cycles', 'a circular reference');
  if (obj instanceof Map || obj instanceof Set) {
    throw new InvalidArgument(path, 'a JSON-serialisable value (Map and Set encode as {}; convert them or use JsonPayloadSerializer)', obj.constructor.name);
  }
  const toJSON = (obj as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') {
    ancestors.add(obj);
    try {
      walk(toJSON.call(obj, ''), path, ancestors);
    } finally {
      ancestors.delete(obj);
    }
    return;
  }
  ancestors.add(obj);
  try {
    if (Array.isArray(obj)) {
      for (let i = 0; i < obj.length; i++) walk(obj[i], `${path}[${i}]`, ancestors);
    } else {
      for (const [k, v] of Object.entries(obj)) walk(v, `${path}.${k}`, ancestors);
    }
  } finally {
    ancestors.delete(obj);
  }
}
