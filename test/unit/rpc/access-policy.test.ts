import { describe, it, expect } from 'vitest';
import {
  DefaultRpcAccessPolicy,
  ExplicitRpcAccessPolicy,
  LegacyRpcAccessPolicy,
  expose,
  isExposed,
  lookupEndpointMethod,
} from '../../../src/rpc/access-policy.js';

class Base {
  inherited() {
    return 'base';
  }
}
class Service extends Base {
  ownField = () => 'field';
  notAFunction = 42;
  get computed() {
    return () => 'getter';
  }
  method() {
    return 'method';
  }
  _private() {
    return 'private';
  }
  exposed = expose(() => 'exposed');
}

const PROTO_NAMES = ['toString', '__proto__', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'isPrototypeOf', 'propertyIsEnumerable', 'toLocaleString'];

function allowed(policy: { isAllowed(e: object, m: string, f: (...a: any[]) => any): boolean }, endpoint: object, name: string): boolean {
  const fn = lookupEndpointMethod(endpoint, name);
  return fn !== undefined && policy.isAllowed(endpoint, name, fn);
}

describe('lookupEndpointMethod', () => {
  const svc = new Service();

  it('finds own function properties, class methods and inherited class methods', () => {
    expect(lookupEndpointMethod(svc, 'ownField')?.()).toBe('field');
    expect(lookupEndpointMethod(svc, 'method')).toBe(Service.prototype.method);
    expect(lookupEndpointMethod(svc, 'inherited')).toBe(Base.prototype.inherited);
  });

  it('never finds Object.prototype members, getters or non-functions', () => {
    for (const name of PROTO_NAMES) expect(lookupEndpointMethod(svc, name), name).toBeUndefined();
    expect(lookupEndpointMethod({}, 'constructor')).toBeUndefined();
    expect(lookupEndpointMethod(svc, 'computed')).toBeUndefined();
    expect(lookupEndpointMethod(svc, 'notAFunction')).toBeUndefined();
    expect(lookupEndpointMethod(svc, 'missing')).toBeUndefined();
  });

  it('works on null-prototype objects', () => {
    const ep = Object.assign(Object.create(null) as object, { hi: () => 'hi' });
    expect(lookupEndpointMethod(ep, 'hi')).toBeTypeOf('function');
    expect(lookupEndpointMethod(ep, 'toString')).toBeUndefined();
  });
});

describe('DefaultRpcAccessPolicy', () => {
  const policy = new DefaultRpcAccessPolicy();
  const svc = new Service();

  it('allows public methods (own, class, inherited)', () => {
    for (const name of ['ownField', 'method', 'inherited', 'exposed']) expect(allowed(policy, svc, name), name).toBe(true);
  });

  it('refuses _private names, constructor and Object.prototype members', () => {
    expect(allowed(policy, svc, '_private')).toBe(false);
    expect(allowed(policy, svc, 'constructor')).toBe(false);
    for (const name of PROTO_NAMES) expect(allowed(policy, svc, name), name).toBe(false);
    expect(policy.isAllowed(svc, '_private', Service.prototype._private)).toBe(false);
    expect(policy.isAllowed(svc, 'constructor', Service as unknown as () => unknown)).toBe(false);
  });
});

describe('LegacyRpcAccessPolicy', () => {
  const policy = new LegacyRpcAccessPolicy();
  const svc = new Service();

  it('allows _private methods but still never constructor or Object.prototype members', () => {
    expect(allowed(policy, svc, '_private')).toBe(true);
    expect(allowed(policy, svc, 'method')).toBe(true);
    expect(allowed(policy, svc, 'constructor')).toBe(false);
    for (const name of PROTO_NAMES) expect(allowed(policy, svc, name), name).toBe(false);
  });
});

describe('ExplicitRpcAccessPolicy', () => {
  const policy = new ExplicitRpcAccessPolicy();
  const svc = new Service();

  it('allows only exposed methods', () => {
    expect(allowed(policy, svc, 'exposed')).toBe(true);
    expect(allowed(policy, svc, 'method')).toBe(false);
    expect(allowed(policy, svc, 'ownField')).toBe(false);
  });

  it('expose returns the same function, marked', () => {
    const fn = () => 1;
    expect(expose(fn)).toBe(fn);
    expect(isExposed(fn)).toBe(true);
    expect(isExposed(() => 1)).toBe(false);
  });
});
