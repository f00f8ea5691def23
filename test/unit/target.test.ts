// Target: validation (oslo §3.2), copies, equality and oslo's version_is_compatible.
import { describe, expect, it } from 'vitest';
import { InvalidArgument, InvalidTarget } from '../../src/core/errors.js';
import { Target, validateNotificationTarget, validateSendTarget, validateServerTarget, versionIsCompatible, checkVersion } from '../../src/core/target.js';

describe('Target construction', () => {
  it('keeps the given fields, freezes itself and defaults legacyNamespaces to []', () => {
    const t = new Target({ exchange: 'ex', topic: 'tp', server: 's1', fanout: false, namespace: 'ns', version: '1.2', legacyNamespaces: ['old'] });
    expect(t.toJSON()).toEqual({ exchange: 'ex', topic: 'tp', server: 's1', fanout: false, namespace: 'ns', version: '1.2', legacyNamespaces: ['old'] });
    expect(Object.isFrozen(t)).toBe(true);
    expect(Object.isFrozen(t.legacyNamespaces)).toBe(true);
    expect(new Target().toJSON()).toEqual({});
    expect(new Target().legacyNamespaces).toEqual([]);
  });

  it('does not alias the caller\'s legacyNamespaces array', () => {
    const legacy = ['a'];
    const t = new Target({ legacyNamespaces: legacy });
    legacy.push('b');
    expect(t.legacyNamespaces).toEqual(['a']);
  });

  it.each([
    ['exchange', ''],
    ['topic', ''],
    ['server', 'has space'],
    ['namespace', 'tab\there'],
    ['topic', 'nul\0'],
    ['topic', 'x'.repeat(256)],
    ['topic', 42],
  ])('refuses %s = %j with InvalidArgument naming the field', (field, value) => {
    let err: unknown;
    try {
      new Target({ [field]: value } as never);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidArgument);
    expect((err as InvalidArgument).field).toBe(`target.${field}`);
    expect((err as InvalidArgument).received).toBe(value);
  });

  it('accepts names of exactly 255 characters and dotted names', () => {
    expect(new Target({ topic: 'x'.repeat(255) }).topic).toHaveLength(255);
    expect(new Target({ topic: 'compute.host-1_a' }).topic).toBe('compute.host-1_a');
  });

  it('validates fanout, version and legacyNamespaces', () => {
    expect(() => new Target({ fanout: 'yes' as never })).toThrow(InvalidArgument);
    for (const v of ['1', '1.', 'a.b', '1.2.3.4', ' 1.0', 'v1.0']) expect(() => new Target({ version: v })).toThrow(/target\.version/);
    expect(new Target({ version: '1.2.3' }).version).toBe('1.2.3');
    expect(() => new Target({ legacyNamespaces: 'ns' as never })).toThrow(InvalidArgument);
    expect(() => checkVersion('x', 1.0)).toThrow(InvalidArgument);
  });

  it('Target.from accepts a Target or an init object and refuses others', () => {
    const t = new Target({ topic: 'a' });
    expect(Target.from(t)).toBe(t);
    expect(Target.from({ topic: 'a' }).equals(t)).toBe(true);
    expect(() => Target.from(null as never)).toThrow(InvalidArgument);
    expect(() => Target.from('topic' as never)).toThrow(InvalidArgument);
  });
});

describe('Target copies and equality', () => {
  const base = new Target({ topic: 'tp', server: 's1', namespace: 'ns', version: '1.0' });

  it('with() overrides fields and leaves the original alone', () => {
    const copy = base.with({ server: 's2', fanout: true });
    expect(copy.server).toBe('s2');
    expect(copy.fanout).toBe(true);
    expect(copy.topic).toBe('tp');
    expect(base.server).toBe('s1');
    expect(base.fanout).toBeUndefined();
  });

  it('with() clears a field given as undefined, and keeps it when the key is absent', () => {
    const cleared = base.with({ server: undefined, version: undefined });
    expect(cleared.server).toBeUndefined();
    expect(cleared.version).toBeUndefined();
    expect(cleared.namespace).toBe('ns');
    expect('server' in cleared.toJSON()).toBe(false);
  });

  it('with() validates the result', () => {
    expect(() => base.with({ topic: '' })).toThrow(InvalidArgument);
  });

  it('acceptedNamespaces is [namespace, ...legacy], with undefined for the default namespace', () => {
    expect(new Target({ namespace: 'n', legacyNamespaces: ['a', 'b'] }).acceptedNamespaces).toEqual(['n', 'a', 'b']);
    expect(new Target().acceptedNamespaces).toEqual([undefined]);
  });

  it('equals compares every attribute; fanout undefined equals false', () => {
    expect(base.equals(new Target({ topic: 'tp', server: 's1', namespace: 'ns', version: '1.0' }))).toBe(true);
    expect(base.equals(base.with({ fanout: false }))).toBe(true);
    expect(base.equals(base.with({ fanout: true }))).toBe(false);
    for (const o of [{ exchange: 'x' }, { topic: 'other' }, { server: 's2' }, { namespace: 'n2' }, { version: '1.1' }, { legacyNamespaces: ['l'] }]) {
      expect(base.equals(base.with(o))).toBe(false);
    }
    expect(new Target({ legacyNamespaces: ['a', 'b'] }).equals(new Target({ legacyNamespaces: ['a', 'b'] }))).toBe(true);
    expect(new Target({ legacyNamespaces: ['ab'] }).equals(new Target({ legacyNamespaces: ['a', 'b'] }))).toBe(false);
  });

  it('toString shows the set fields', () => {
    expect(new Target({ topic: 't', legacyNamespaces: ['a', 'b'] }).toString()).toBe('<Target topic=t, legacyNamespaces=a,b>');
  });
});

describe('target validation per use', () => {
  it('validateSendTarget: topic required; call refuses fanout, cast allows it', () => {
    expect(() => validateSendTarget(new Target(), false)).toThrow(InvalidTarget);
    expect(() => validateSendTarget(new Target({ topic: 't', fanout: true }), true)).toThrow(/fanout/);
    expect(() => validateSendTarget(new Target({ topic: 't', fanout: true }), false)).not.toThrow();
    expect(() => validateSendTarget(new Target({ topic: 't', server: 's' }), true)).not.toThrow();
    try {
      validateSendTarget(new Target({ server: 's' }), true);
    } catch (err) {
      expect((err as InvalidTarget).target).toBeInstanceOf(Target);
    }
  });

  it('validateServerTarget: topic and server required, exchange optional', () => {
    expect(() => validateServerTarget(new Target({ server: 's' }))).toThrow(/topic/);
    expect(() => validateServerTarget(new Target({ topic: 't' }))).toThrow(/server/);
    expect(() => validateServerTarget(new Target({ topic: 't', server: 's' }))).not.toThrow();
  });

  it('validateNotificationTarget: topic required, server and fanout ignored', () => {
    expect(() => validateNotificationTarget(new Target({ exchange: 'e' }))).toThrow(InvalidTarget);
    expect(() => validateNotificationTarget(new Target({ topic: 'n', server: 's', fanout: true }))).not.toThrow();
  });
});

describe('versionIsCompatible (oslo _utils.version_is_compatible)', () => {
  it.each([
    [undefined, '1.0', true],
    [undefined, undefined, true],
    ['1.0', undefined, false],
    ['1.0', '1.0', true],
    ['1.5', '1.2', true],
    ['1.2', '1.5', false],
    ['1.0', '2.0', false],
    ['2.0', '1.0', false],
    ['1.2', '1.2.0', true],
    ['1.2', '1.2.1', false],
    ['1.2.1', '1.2.1', true],
    ['1.2.3', '1.2.1', true],
    ['1.2.1', '1.2.3', false],
    ['1.3.0', '1.2.9', true],
    ['1.10', '1.9', true],
    ['1.9', '1.10', false],
  ] as const)('impl %s serves requested %s: %s', (impl, requested, expected) => {
    expect(versionIsCompatible(impl, requested)).toBe(expected);
  });
});
