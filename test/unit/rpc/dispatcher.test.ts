import { describe, it, expect, vi, afterEach } from 'vitest';
import { InvalidArgument, MalformedMessage, NoSuchMethod, UnsupportedVersion } from '../../../src/core/errors.js';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { JsonPayloadSerializer, NoOpSerializer } from '../../../src/core/serializer.js';
import { Target } from '../../../src/core/target.js';
import { LegacyRpcAccessPolicy } from '../../../src/rpc/access-policy.js';
import { RpcDispatcher, type DispatchOutcome } from '../../../src/rpc/dispatcher.js';
import { expectedExceptions, type RpcMeta } from '../../../src/rpc/endpoint.js';
import { deferred } from '../../../src/testing/wait.js';
import { FakeRpcIncoming, request } from './fake-incoming.js';

function failureOf(outcome: DispatchOutcome): unknown {
  if (outcome.ok) throw new Error(`expected a failure, got result ${JSON.stringify(outcome.result)}`);
  return outcome.failure;
}
function resultOf(outcome: DispatchOutcome): unknown {
  if (!outcome.ok) throw new Error(`expected a result, got failure ${String(outcome.failure)}`);
  return outcome.result;
}
const run = (d: RpcDispatcher, msg: Record<string, unknown>, ctx: Record<string, unknown> = {}) => d.dispatch(new FakeRpcIncoming(ctx, msg));

class QuotaExceeded extends Error {}
class NotFound extends Error {}

describe('RpcDispatcher routing (oslo rules)', () => {
  it('serves the default target (null namespace, 1.0) and defaults a missing version to 1.0', async () => {
    const d = new RpcDispatcher([{ echo: (_c: unknown, a: { v: number }) => a.v }]);
    expect(resultOf(await run(d, request('echo', { v: 1 })))).toBe(1);
    expect(resultOf(await run(d, request('echo', { v: 2 }, { version: '1.0' })))).toBe(2);
    expect(failureOf(await run(d, request('echo', {}, { version: '1.1' })))).toBeInstanceOf(UnsupportedVersion);
    expect(failureOf(await run(d, request('echo', {}, { version: '2.0' })))).toBeInstanceOf(UnsupportedVersion);
    expect(failureOf(await run(d, request('echo', {}, { namespace: 'other' })))).toBeInstanceOf(UnsupportedVersion);
  });

  it('picks the first endpoint whose namespace and version match and that has the method', async () => {
    const v10 = { target: new Target({ namespace: 'calc', version: '1.0' }), who: () => 'v1.0', only10: () => 'only' };
    const v13 = { target: { namespace: 'calc', version: '1.3' }, who: () => 'v1.3' };
    const v2 = { target: new Target({ namespace: 'calc', version: '2.1' }), who: () => 'v2' };
    const d = new RpcDispatcher([v10, v13, v2]);
    expect(resultOf(await run(d, request('who', {}, { namespace: 'calc', version: '1.0' })))).toBe('v1.0');
    expect(resultOf(await run(d, request('who', {}, { namespace: 'calc', version: '1.2' })))).toBe('v1.3');
    expect(resultOf(await run(d, request('who', {}, { namespace: 'calc', version: '2.0' })))).toBe('v2');
    // 1.3 matches v13 only, which lacks only10: NoSuchMethod, not UnsupportedVersion.
    const err = failureOf(await run(d, request('only10', {}, { namespace: 'calc', version: '1.3' })));
    expect(err).toBeInstanceOf(NoSuchMethod);
    expect((err as NoSuchMethod).method).toBe('only10');
    const unsupported = failureOf(await run(d, request('who', {}, { namespace: 'calc', version: '3.0' })));
    expect(unsupported).toBeInstanceOf(UnsupportedVersion);
    expect(unsupported).toMatchObject({ version: '3.0', method: 'who' });
  });

  it('accepts legacy namespaces', async () => {
    const d = new RpcDispatcher([{ target: new Target({ namespace: 'new', legacyNamespaces: ['old'] }), hi: () => 'hi' }]);
    expect(resultOf(await run(d, request('hi', {}, { namespace: 'new' })))).toBe('hi');
    expect(resultOf(await run(d, request('hi', {}, { namespace: 'old' })))).toBe('hi');
    expect(failureOf(await run(d, request('hi')))).toBeInstanceOf(UnsupportedVersion);
  });

  it('an endpoint target without a version accepts every version', async () => {
    const d = new RpcDispatcher([{ target: { namespace: 'any' }, hi: () => 'hi' }]);
    expect(resultOf(await run(d, request('hi', {}, { namespace: 'any', version: '7.3' })))).toBe('hi');
  });

  it('refuses private, constructor and Object.prototype names as NoSuchMethod', async () => {
    class Svc {
      ok() {
        return 'ok';
      }
      _secret() {
        return 'secret';
      }
    }
    const d = new RpcDispatcher([new Svc()]);
    for (const name of ['_secret', 'constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'missing']) {
      const err = failureOf(await run(d, request(name)));
      expect(err, name).toBeInstanceOf(NoSuchMethod);
    }
    expect(resultOf(await run(d, request('ok')))).toBe('ok');
    // oslo passes the policy as a class; an instance works too.
    const legacy = new RpcDispatcher([new Svc()], { accessPolicy: LegacyRpcAccessPolicy });
    expect(resultOf(await run(legacy, request('_secret')))).toBe('secret');
    expect(failureOf(await run(legacy, request('toString')))).toBeInstanceOf(NoSuchMethod);
    expect(resultOf(await run(new RpcDispatcher([new Svc()], { accessPolicy: new LegacyRpcAccessPolicy() }), request('_secret')))).toBe('secret');
    expect(() => new RpcDispatcher([], { accessPolicy: {} as LegacyRpcAccessPolicy })).toThrow(/Invalid accessPolicy/);
  });

  it('reserves "target": a method named target is refused at construction, never callable', async () => {
    expect(() => new RpcDispatcher([{ target: () => 'x' }])).toThrow(InvalidArgument);
    expect(() => new RpcDispatcher([{ target: 'calc' }])).toThrow(/endpoints\[0\]\.target/);
    expect(() => new RpcDispatcher([42 as unknown as object])).toThrow(InvalidArgument);
    const d = new RpcDispatcher([{ target: new Target({ version: '1.0' }) }]);
    expect(failureOf(await run(d, request('target')))).toBeInstanceOf(NoSuchMethod);
  });

  it('gets requests the driver seam validated: malformed ones never reach it; oslo defaults apply', async () => {
    const d = new RpcDispatcher([{ hi: () => 'hi' }]);
    expect(() => run(d, request(undefined))).toThrow(MalformedMessage);
    expect(() => run(d, request('hi', [1, 2]))).toThrow(MalformedMessage);
    expect(resultOf(await run(d, { method: 'hi' }))).toBe('hi');
  });
});

describe('RpcDispatcher invocation', () => {
  it('calls method with this = endpoint, ctx as received, args and meta', async () => {
    const seen: unknown[] = [];
    class Svc {
      name = 'svc';
      greet(ctx: Record<string, unknown>, args: { who: string }, meta: RpcMeta) {
        seen.push(this.name, ctx, args, meta.method, meta.namespace, meta.version, meta.messageId, meta.unwrap());
        return `hi ${args.who}`;
      }
    }
    const d = new RpcDispatcher([new Svc()]);
    const incoming = new FakeRpcIncoming({ user: 'u1', client_timeout: null }, request('greet', { who: 'bob' }), true, undefined, 'RAW');
    expect(resultOf(await d.dispatch(incoming))).toBe('hi bob');
    expect(seen).toEqual(['svc', { user: 'u1', client_timeout: null }, { who: 'bob' }, 'greet', undefined, '1.0', incoming.msgId, 'RAW']);
  });

  it('applies the serializer to context, each arg and the result', async () => {
    const serializer = new (class extends NoOpSerializer {
      override deserializeContext(ctx: Record<string, unknown>) {
        return { ...ctx, deserialized: true };
      }
      override deserializeEntity(_ctx: unknown, entity: unknown) {
        return typeof entity === 'string' ? entity.toUpperCase() : entity;
      }
      override serializeEntity(ctx: Record<string, unknown>, entity: unknown) {
        return { wrapped: entity, ctxSeen: ctx.deserialized };
      }
    })();
    const d = new RpcDispatcher([{ m: (ctx: unknown, args: unknown) => ({ ctx, args }) }], { serializer });
    expect(resultOf(await run(d, request('m', { a: 'x', b: 1 }), { u: 1 }))).toEqual({
      wrapped: { ctx: { u: 1, deserialized: true }, args: { a: 'X', b: 1 } },
      ctxSeen: true,
    });
  });

  it('turns undefined into null and a non-JSON result into an InvalidArgument failure', async () => {
    const d = new RpcDispatcher([{ nothing: () => undefined, big: () => 10n, fn: async () => ({ f: () => 1 }) }]);
    expect(resultOf(await run(d, request('nothing')))).toBeNull();
    expect(failureOf(await run(d, request('big')))).toMatchObject({ name: 'InvalidArgument', field: 'result' });
    expect(failureOf(await run(d, request('fn')))).toMatchObject({ name: 'InvalidArgument', field: 'result.f' });
    const withJson = new RpcDispatcher([{ date: () => new Date(0) }], { serializer: new JsonPayloadSerializer() });
    expect(resultOf(await run(withJson, request('date')))).toBe('1970-01-01T00:00:00.000Z');
  });

  it('returns thrown values (Errors or not) as failures, flagged expected when declared', async () => {
    class Svc {
      static expectedErrors = [NotFound];
      boom(): never {
        throw new TypeError('boom');
      }
      str(): never {
        throw 'a string';
      }
      missing(): never {
        throw new NotFound('nope');
      }
      reserve = expectedExceptions(QuotaExceeded)(async () => {
        throw new QuotaExceeded('over');
      });
      reserveOther = expectedExceptions(QuotaExceeded)(() => {
        throw new RangeError('other');
      });
    }
    const d = new RpcDispatcher([new Svc()]);
    const boom = await run(d, request('boom'));
    expect(boom).toMatchObject({ ok: false, expected: false });
    expect(failureOf(boom)).toBeInstanceOf(TypeError);
    expect(await run(d, request('str'))).toEqual({ ok: false, failure: 'a string', expected: false });
    expect(await run(d, request('missing'))).toMatchObject({ ok: false, expected: true });
    expect(await run(d, request('reserve'))).toMatchObject({ ok: false, expected: true });
    expect(await run(d, request('reserveOther'))).toMatchObject({ ok: false, expected: false });
    // oslo: NoSuchMethod for *_ignore_errors is debug-only.
    expect(await run(d, request('x_ignore_errors'))).toMatchObject({ ok: false, expected: true });
  });

  it('adds oslo_rpc_server_ping when rpcPingEnabled', async () => {
    expect(resultOf(await run(new RpcDispatcher([], { rpcPingEnabled: true }), request('oslo_rpc_server_ping')))).toBe('pong');
    expect(failureOf(await run(new RpcDispatcher([]), request('oslo_rpc_server_ping')))).toBeInstanceOf(UnsupportedVersion);
  });
});

describe('RpcDispatcher call-monitor heartbeats', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('heartbeats every floor(seconds)/2 s while the method runs, then stops', async () => {
    vi.useFakeTimers();
    const release = deferred<string>();
    const d = new RpcDispatcher([{ slow: () => release.promise }]);
    const incoming = new FakeRpcIncoming({}, request('slow'), true, 5_500); // floor(5.5)=5 -> every 2.5 s
    const done = d.dispatch(incoming);
    await vi.advanceTimersByTimeAsync(2_400);
    expect(incoming.heartbeats).toBe(0);
    await vi.advanceTimersByTimeAsync(200);
    expect(incoming.heartbeats).toBe(1);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(incoming.heartbeats).toBe(3);
    release.resolve('done');
    expect(resultOf(await done)).toBe('done');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(incoming.heartbeats).toBe(3);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('sends none and warns when the window is under 2 s, and none for casts', async () => {
    vi.useFakeTimers();
    const logger = createMemoryLogger();
    const release = deferred<void>();
    const d = new RpcDispatcher([{ slow: () => release.promise }], { logger });
    const short = new FakeRpcIncoming({}, request('slow'), true, 1_999);
    const cast = new FakeRpcIncoming({}, request('slow'), false, 10_000);
    const both = Promise.all([d.dispatch(short), d.dispatch(cast)]);
    await vi.advanceTimersByTimeAsync(20_000);
    release.resolve();
    await both;
    expect(short.heartbeats + cast.heartbeats).toBe(0);
    expect(logger.records.filter((r) => r.level === 'warn')).toHaveLength(1);
  });
});
