import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '../../src/core/errors.js';
import { assertJsonSafe, isPlainObject } from '../../src/core/json-check.js';

const fieldOf = (value: unknown): string | undefined => {
  try {
    assertJsonSafe(value, 'args');
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgument);
    return (err as InvalidArgument).field;
  }
};

describe('assertJsonSafe', () => {
  it('accepts JSON values, Dates (toJSON), undefined members and shared (non-cyclic) references', () => {
    const shared = { x: 1 };
    expect(fieldOf({ s: 'a', n: 1.5, b: true, z: null, u: undefined, d: new Date(0), l: [1, 'a', { k: [] }], a: shared, b2: shared })).toBeUndefined();
    expect(fieldOf({ custom: { toJSON: () => ({ ok: 1 }) } })).toBeUndefined();
  });

  it('names the path of the first offending value', () => {
    expect(fieldOf({ a: { b: [0, 1n] } })).toBe('args.a.b[1]');
    expect(fieldOf({ f() {} })).toBe('args.f');
    expect(fieldOf({ s: new Set([1]) })).toBe('args.s');
    expect(fieldOf({ inf: -Infinity })).toBe('args.inf');
    expect(fieldOf({ bad: { toJSON: () => 1n } })).toBe('args.bad');
    const cycle: unknown[] = [];
    cycle.push({ back: cycle });
    expect(fieldOf({ cycle })).toBe('args.cycle[0].back');
  });
});

describe('isPlainObject', () => {
  it('accepts object literals and null-prototype objects only', () => {
    expect(isPlainObject({})).toBe(true);
    expect(isPlainObject(Object.create(null))).toBe(true);
    for (const v of [null, [], new Date(), new Map(), 'x', 1, new (class A {})()]) expect(isPlainObject(v)).toBe(false);
  });
});
