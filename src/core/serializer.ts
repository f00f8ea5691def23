// Serializer hooks: how entities (args, results, payloads) and contexts cross the wire.
import { InvalidArgument } from './errors.js';
import type { Context } from './types.js';
import { isPlainObject } from './json-check.js';

/** oslo's Serializer: entity and context hooks applied by the façades on both sides. */
export interface Serializer<Ctx = Context> {
  /** An argument, result or payload, before it is sent: MUST return a JSON value. */
  serializeEntity(ctx: Ctx, entity: unknown): unknown;
  /** An argument, result or payload, as received. */
  deserializeEntity(ctx: Ctx, entity: unknown): unknown;
  /** The context before it is sent: MUST return a plain JSON object. */
  serializeContext(ctx: Ctx): Context;
  /** The context as received, into what handlers get as `ctx`. */
  deserializeContext(ctx: Context): Ctx;
}

/** Identity; the context must be a plain object. The default everywhere. */
export class NoOpSerializer implements Serializer<Context> {
  serializeEntity(_ctx: Context, entity: unknown): unknown {
    return entity;
  }
  deserializeEntity(_ctx: Context, entity: unknown): unknown {
    return entity;
  }
  serializeContext(ctx: Context): Context {
    if (!isPlainObject(ctx)) throw new InvalidArgument('context', 'a plain object', ctx);
    return ctx;
  }
  deserializeContext(ctx: Context): Context {
    return ctx;
  }
}

/** Converts entities to JSON primitives (Dates to ISO strings, Maps/Sets to objects/arrays, class instances to their own fields). */
export class JsonPayloadSerializer extends NoOpSerializer {
  override serializeEntity(_ctx: Context, entity: unknown): unknown {
    return toPrimitive(entity);
  }
}

/** oslo `jsonutils.to_primitive` in spirit: a JSON-safe copy, cycles replaced by null. */
export function toPrimitive(value: unknown, seen: WeakSet<object> = new WeakSet()): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'bigint') return value.toString();
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return null;
  // An invalid Date's toISOString() throws a RangeError; JSON.stringify writes null for it.
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (typeof value !== 'object') return null;
  if (seen.has(value)) return null;
  seen.add(value);
  try {
    if (Array.isArray(value) || value instanceof Set) return [...value].map((v) => toPrimitive(v, seen));
    if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), toPrimitive(v, seen)]));
    if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return toPrimitive((value as { toJSON(): unknown }).toJSON(), seen);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = toPrimitive(v, seen);
    return out;
  } finally {
    seen.delete(value);
  }
}
