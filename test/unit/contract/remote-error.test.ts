// Remote errors in oslo's failure format (oslo-wire.md §1.8) and their allow-listed rebuilding.
import { describe, expect, it } from 'vitest';
import {
  InvalidTarget,
  MessageDeliveryFailure,
  MessagingError,
  MessagingTimeout,
  NoSuchMethod,
  RemoteError,
  RPCVersionCapError,
  UnsupportedVersion,
} from '../../../src/core/errors.js';
import {
  DEFAULT_APP_MODULE,
  defaultRemoteErrorRegistry,
  deserializeRemoteError,
  DISPATCHER_MODULE,
  EXCEPTIONS_MODULE,
  RemoteErrorRegistry,
  remoteOrigin,
  serializeFailure,
  serializeRemoteError,
  type FailureInfo,
} from '../../../src/contract/remote-error.js';

class QuotaExceeded extends Error {
  static remoteModule = 'myapp.errors';
  constructor(
    readonly resource: string,
    readonly limit: number,
  ) {
    super(`Quota exceeded for ${resource} (limit ${limit})`);
    this.name = 'QuotaExceeded';
  }
  get args(): unknown[] {
    return [this.resource, this.limit];
  }
}

class Plain extends Error {}

function failure(overrides: Partial<FailureInfo>): FailureInfo {
  return { class: 'Error', module: 'builtins', message: 'm', tb: [], args: ['m'], kwargs: {}, ...overrides };
}

describe('serializeRemoteError', () => {
  it('serializes JS built-in errors under builtins with their stack as traceback', () => {
    const f = serializeRemoteError(new TypeError('bad type'));
    expect(f).toMatchObject({ class: 'TypeError', module: 'builtins', message: 'bad type', args: ['bad type'], kwargs: {} });
    expect(f.tb[0]).toBe('TypeError: bad type\n');
    expect(f.tb.every((l) => l.endsWith('\n'))).toBe(true);
    expect(f.tb.length).toBeGreaterThan(1);
  });

  it('gives app errors their static remoteModule, or tidings.app without one', () => {
    expect(serializeRemoteError(new QuotaExceeded('cores', 4))).toMatchObject({ class: 'QuotaExceeded', module: 'myapp.errors', args: ['cores', 4] });
    expect(serializeRemoteError(new Plain('x'))).toMatchObject({ class: 'Plain', module: DEFAULT_APP_MODULE, args: ['x'] });
  });

  it('serializes dispatcher errors with the Python-compatible messages and module', () => {
    expect(serializeRemoteError(new NoSuchMethod('frob'))).toMatchObject({
      class: 'NoSuchMethod',
      module: DISPATCHER_MODULE,
      message: 'Endpoint does not support RPC method frob',
      args: ['frob'],
    });
    expect(serializeRemoteError(new UnsupportedVersion('2.0', 'frob'))).toMatchObject({
      class: 'UnsupportedVersion',
      module: 'oslo_messaging.rpc.dispatcher',
      message: 'Endpoint does not support RPC version 2.0. Attempted method: frob',
      args: ['2.0', 'frob'],
    });
  });

  it('serializes other tidings errors under oslo_messaging.exceptions', () => {
    expect(serializeRemoteError(new MessagingTimeout('late'))).toMatchObject({ class: 'MessagingTimeout', module: EXCEPTIONS_MODULE, args: ['late'] });
    expect(serializeRemoteError(new RPCVersionCapError('1.5', '1.2'))).toMatchObject({ class: 'RPCVersionCapError', args: ['1.5', '1.2'] });
  });

  it('serializes non-Error throws as builtins Error', () => {
    expect(serializeRemoteError('plain string')).toEqual({ class: 'Error', module: 'builtins', message: 'plain string', tb: [], args: ['plain string'], kwargs: {} });
    expect(serializeRemoteError({ code: 7 })).toMatchObject({ class: 'Error', message: '{"code":7}' });
    expect(serializeRemoteError(undefined)).toMatchObject({ class: 'Error', module: 'builtins' });
    expect(serializeRemoteError(42).message).toBe('42');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(typeof serializeRemoteError(cyclic).message).toBe('string');
  });

  it('JSON-primitivises args and kwargs, and never throws on odd values', () => {
    const err = Object.assign(new Error('x'), { args: [new Date(0), undefined, 1n], kwargs: { when: new Date(0) } });
    const f = serializeRemoteError(err);
    // BigInt cannot be JSON'd: args fall back to [message] (never null), kwargs to {}.
    expect(f.args).toEqual(['x']);
    expect(serializeRemoteError(Object.assign(new Error('y'), { kwargs: { big: 2n } })).kwargs).toEqual({});
    const ok = serializeRemoteError(Object.assign(new Error('x'), { args: [new Date(0)], kwargs: { when: new Date(0), n: 1 } }));
    expect(ok.args).toEqual(['1970-01-01T00:00:00.000Z']);
    expect(ok.kwargs).toEqual({ when: '1970-01-01T00:00:00.000Z', n: 1 });
  });

  it('serializeFailure is the JSON string of the failure object', () => {
    const s = serializeFailure(new RangeError('r'));
    expect(JSON.parse(s)).toMatchObject({ class: 'RangeError', module: 'builtins', message: 'r' });
  });

  it('a rebuilt remote error re-serializes with its original identity', () => {
    const rebuilt = deserializeRemoteError(failure({ class: 'KeyError', module: 'builtins', message: "'k'" }));
    expect(serializeRemoteError(rebuilt)).toMatchObject({ class: 'KeyError', module: 'builtins' });
    const fromOther = deserializeRemoteError(failure({ class: 'Boom', module: 'nova.exception', message: 'b' }));
    expect(serializeRemoteError(fromOther)).toMatchObject({ class: 'Boom', module: 'nova.exception' });
  });
});

describe('deserializeRemoteError', () => {
  const registry = defaultRemoteErrorRegistry.clone().register('myapp.errors', QuotaExceeded);

  it('rebuilds a registered class from an allowed module', () => {
    const tb = ['Traceback (most recent call last):\n', '  File "x.py", line 1\n', 'QuotaExceeded: ...\n'];
    const f = serializeRemoteError(new QuotaExceeded('cores', 4));
    const err = deserializeRemoteError(JSON.stringify({ ...f, tb }), ['myapp.errors'], registry);
    expect(err).toBeInstanceOf(QuotaExceeded);
    expect((err as QuotaExceeded).resource).toBe('cores');
    expect((err as QuotaExceeded).limit).toBe(4);
    expect(err.message).toBe('Quota exceeded for cores (limit 4)');
    expect(remoteOrigin(err)).toEqual({ module: 'myapp.errors', className: 'QuotaExceeded', traceback: tb });
    expect(err.stack).toContain('[remote traceback]');
    expect(err.stack).toContain('File "x.py"');
    expect(remoteOrigin(new Error('local'))).toBeUndefined();
    expect(remoteOrigin(null)).toBeUndefined();
  });

  it('gives a RemoteError when the module is not allowed', () => {
    const tb = ['Traceback\n', 'QuotaExceeded: q\n'];
    const err = deserializeRemoteError(failure({ class: 'QuotaExceeded', module: 'myapp.errors', message: 'q', tb, args: ['cores', 4], kwargs: { a: 1 } }), [], registry);
    expect(err).toBeInstanceOf(RemoteError);
    expect(err).toBeInstanceOf(MessagingError);
    const r = err as RemoteError;
    expect(r.excType).toBe('QuotaExceeded');
    expect(r.module).toBe('myapp.errors');
    expect(r.value).toBe('q');
    expect(r.traceback).toEqual(tb);
    expect(r.args).toEqual(['cores', 4]);
    expect(r.kwargs).toEqual({ a: 1 });
    expect(r.message).toBe('Remote error: QuotaExceeded q.');
    expect(r.stack).toContain('[remote traceback]\nTraceback\nQuotaExceeded: q\n');
    expect(remoteOrigin(r)).toMatchObject({ module: 'myapp.errors', className: 'QuotaExceeded' });
  });

  it('always allows builtins and normalises exceptions to builtins', () => {
    const a = deserializeRemoteError(failure({ class: 'TypeError', module: 'builtins', message: 'tt', args: ['tt'] }));
    expect(a).toBeInstanceOf(TypeError);
    expect(a.message).toBe('tt');
    const b = deserializeRemoteError(failure({ class: 'RangeError', module: 'exceptions', message: 'rr', args: ['rr'] }));
    expect(b).toBeInstanceOf(RangeError);
    expect(remoteOrigin(b)?.module).toBe('builtins');
  });

  it('strips a trailing _Remote from class and module', () => {
    const err = deserializeRemoteError(failure({ class: 'QuotaExceeded_Remote', module: 'myapp.errors_Remote', args: ['ram', 1] }), ['myapp.errors'], registry);
    expect(err).toBeInstanceOf(QuotaExceeded);
  });

  it('falls back to RemoteError when the factory throws or returns a non-Error', () => {
    const reg = new RemoteErrorRegistry()
      .register('m', QuotaExceeded, () => {
        throw new Error('factory broke');
      })
      .register('m', Plain, () => 'not an error' as unknown as Error);
    const a = deserializeRemoteError(failure({ class: 'QuotaExceeded', module: 'm' }), ['m'], reg);
    expect(a).toBeInstanceOf(RemoteError);
    expect((a as RemoteError).excType).toBe('QuotaExceeded');
    expect(deserializeRemoteError(failure({ class: 'Plain', module: 'm' }), ['m'], reg)).toBeInstanceOf(RemoteError);
  });

  it('turns the Python ValueError failure of oslo-wire.md §1.13 into a RemoteError (no JS ValueError)', () => {
    const wire =
      '{"class": "ValueError", "module": "builtins", "message": "(\'bad\', 42)", "tb": ["Traceback (most recent call last):\\n", "ValueError: (\'bad\', 42)\\n"], "args": ["bad", 42], "kwargs": {}}';
    const err = deserializeRemoteError(wire, []);
    expect(err).toBeInstanceOf(RemoteError);
    const r = err as RemoteError;
    expect(r.excType).toBe('ValueError');
    expect(r.module).toBe('builtins');
    expect(r.value).toBe("('bad', 42)");
    expect(r.args).toEqual(['bad', 42]);
    expect(r.traceback).toHaveLength(2);
    expect(r.message).toBe("Remote error: ValueError ('bad', 42).");
  });

  it('rebuilds Python dispatcher errors as tidings classes (module always allowed)', () => {
    const nsm = deserializeRemoteError(
      JSON.stringify(failure({ class: 'NoSuchMethod', module: 'oslo_messaging.rpc.dispatcher', message: 'Endpoint does not support RPC method frob', args: ['Endpoint does not support RPC method frob'] })),
    );
    expect(nsm).toBeInstanceOf(NoSuchMethod);
    expect((nsm as NoSuchMethod).method).toBe('frob');
    const uv = deserializeRemoteError(
      failure({ class: 'UnsupportedVersion', module: DISPATCHER_MODULE, message: 'Endpoint does not support RPC version 2.1. Attempted method: frob', args: ['x'] }),
    );
    expect(uv).toBeInstanceOf(UnsupportedVersion);
    expect((uv as UnsupportedVersion).version).toBe('2.1');
    expect((uv as UnsupportedVersion).method).toBe('frob');
  });

  it('round-trips tidings dispatcher errors and allowed messaging errors', () => {
    const uv = deserializeRemoteError(serializeFailure(new UnsupportedVersion('3.0', 'go')));
    expect(uv).toBeInstanceOf(UnsupportedVersion);
    expect(uv.message).toBe('Endpoint does not support RPC version 3.0. Attempted method: go');
    expect(deserializeRemoteError(serializeFailure(new NoSuchMethod('go')))).toBeInstanceOf(NoSuchMethod);
    const cap = deserializeRemoteError(serializeFailure(new RPCVersionCapError('1.5', '1.2')), [EXCEPTIONS_MODULE]);
    expect(cap).toBeInstanceOf(RPCVersionCapError);
    expect((cap as RPCVersionCapError).versionCap).toBe('1.2');
    expect(deserializeRemoteError(serializeFailure(new MessagingTimeout('t')), [EXCEPTIONS_MODULE])).toBeInstanceOf(MessagingTimeout);
    expect(deserializeRemoteError(serializeFailure(new MessageDeliveryFailure('t')), [EXCEPTIONS_MODULE])).toBeInstanceOf(MessageDeliveryFailure);
    expect(deserializeRemoteError(serializeFailure(new InvalidTarget('t')), [EXCEPTIONS_MODULE])).toBeInstanceOf(InvalidTarget);
    // oslo_messaging.exceptions is not always allowed.
    expect(deserializeRemoteError(serializeFailure(new MessagingTimeout('t')))).toBeInstanceOf(RemoteError);
  });

  it('round-trips JS built-ins', () => {
    const err = deserializeRemoteError(serializeFailure(new SyntaxError('s')));
    expect(err).toBeInstanceOf(SyntaxError);
    expect(err.message).toBe('s');
  });

  it('copes with garbage: a non-JSON string, a non-object, missing fields', () => {
    const a = deserializeRemoteError('something went wrong');
    expect(a).toBeInstanceOf(Error);
    expect(a.message).toBe('something went wrong');
    const b = deserializeRemoteError(42);
    expect(b).toBeInstanceOf(Error);
    const c = deserializeRemoteError({ class: 'Weird', module: 'x.y' });
    expect(c).toBeInstanceOf(RemoteError);
    expect((c as RemoteError).traceback).toEqual([]);
    expect((c as RemoteError).value).toBe('');
    const d = deserializeRemoteError({ class: 'Weird', module: 'x.y', message: { nested: 1 }, tb: 'nope', args: 'nope', kwargs: [] });
    expect((d as RemoteError).value).toBe('{"nested":1}');
    expect((d as RemoteError).kwargs).toEqual({});
  });

  it('the registry clone is independent', () => {
    const base = new RemoteErrorRegistry();
    const copy = base.clone().register('m', Plain);
    expect(copy.lookup('m', 'Plain')).toBeTypeOf('function');
    expect(base.lookup('m', 'Plain')).toBeUndefined();
    expect(defaultRemoteErrorRegistry.lookup('myapp.errors', 'QuotaExceeded')).toBeUndefined();
  });
});
