// Serializers: NoOp identity with a plain-object context, JsonPayload's toPrimitive.
import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '../../src/core/errors.js';
import { JsonPayloadSerializer, NoOpSerializer, toPrimitive } from '../../src/core/serializer.js';

describe('NoOpSerializer', () => {
  const s = new NoOpSerializer();

  it('passes entities and contexts through unchanged', () => {
    const entity = { a: new Date(0) };
    const ctx = { user: 'u' };
    expect(s.serializeEntity(ctx, entity)).toBe(entity);
    expect(s.deserializeEntity(ctx, entity)).toBe(entity);
    expect(s.serializeContext(ctx)).toBe(ctx);
    expect(s.deserializeContext(ctx)).toBe(ctx);
    expect(s.serializeContext(Object.create(null))).toEqual({});
  });

  it.each([[null], [[]], ['ctx'], [new Map()], [new (class Ctx {})()]])('refuses a non-plain context %#', (ctx) => {
    let err: unknown;
    try {
      s.serializeContext(ctx as never);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidArgument);
    expect((err as InvalidArgument).field).toBe('context');
  });
});

describe('toPrimitive / JsonPayloadSerializer', () => {
  it('keeps JSON primitives and maps the rest to JSON-safe values', () => {
    expect(toPrimitive('s')).toBe('s');
    expect(toPrimitive(true)).toBe(true);
    expect(toPrimitive(null)).toBe(null);
    expect(toPrimitive(1.5)).toBe(1.5);
    expect(toPrimitive(NaN)).toBe(null);
    expect(toPrimitive(Infinity)).toBe(null);
    expect(toPrimitive(undefined)).toBe(null);
    expect(toPrimitive(() => 1)).toBe(null);
    expect(toPrimitive(Symbol('x'))).toBe(null);
    expect(toPrimitive(12345678901234567890n)).toBe('12345678901234567890');
  });

  it('turns Dates into ISO strings and an invalid Date into null (never throws)', () => {
    expect(toPrimitive(new Date(0))).toBe('1970-01-01T00:00:00.000Z');
    expect(toPrimitive({ d: new Date('not a date') })).toEqual({ d: null });
  });

  it('turns Maps into objects and Sets into arrays, recursively', () => {
    const v = new Map<unknown, unknown>([
      ['a', new Set([1, new Date(0)])],
      [2, { big: 1n }],
    ]);
    expect(toPrimitive(v)).toEqual({ a: [1, '1970-01-01T00:00:00.000Z'], 2: { big: '1' } });
  });

  it('uses toJSON, and copies own fields of class instances', () => {
    class Point {
      constructor(
        readonly x: number,
        readonly y: number,
      ) {}
      get sum() {
        return this.x + this.y;
      }
    }
    expect(toPrimitive(new Point(1, 2))).toEqual({ x: 1, y: 2 });
    expect(toPrimitive({ toJSON: () => ({ via: 'toJSON', d: new Date(0) }) })).toEqual({ via: 'toJSON', d: '1970-01-01T00:00:00.000Z' });
  });

  it('replaces cycles by null but keeps repeated (acyclic) references', () => {
    const a: Record<string, unknown> = { name: 'a' };
    a.self = a;
    a.list = [a, { back: a }];
    expect(toPrimitive(a)).toEqual({ name: 'a', self: null, list: [null, { back: null }] });
    const shared = { k: 1 };
    expect(toPrimitive({ x: shared, y: shared, z: [shared, shared] })).toEqual({ x: { k: 1 }, y: { k: 1 }, z: [{ k: 1 }, { k: 1 }] });
  });

  it('the result survives JSON unchanged', () => {
    const out = toPrimitive({ d: new Date(0), m: new Map([['k', new Set(['v'])]]), n: 1n, u: undefined });
    expect(JSON.parse(JSON.stringify(out))).toEqual(out);
  });

  it('JsonPayloadSerializer applies toPrimitive to entities only', () => {
    const s = new JsonPayloadSerializer();
    expect(s.serializeEntity({}, { when: new Date(0) })).toEqual({ when: '1970-01-01T00:00:00.000Z' });
    const raw = { when: '1970' };
    expect(s.deserializeEntity({}, raw)).toBe(raw);
    expect(() => s.serializeContext([] as never)).toThrow(InvalidArgument);
  });
});
