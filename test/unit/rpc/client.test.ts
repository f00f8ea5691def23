import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  AbortError,
  InvalidArgument,
  InvalidTarget,
  MessagingTimeout,
  NoSuchMethod,
  NotSupportedError,
  RemoteError,
  RPCVersionCapError,
  UnsupportedVersion,
} from '../../../src/core/errors.js';
import { defaultRemoteErrorRegistry } from '../../../src/contract/remote-error.js';
import { NoOpSerializer } from '../../../src/core/serializer.js';
import { Target } from '../../../src/core/target.js';
import { getRpcClient } from '../../../src/rpc/client.js';
import type { RpcMeta } from '../../../src/rpc/endpoint.js';
import { deferred, waitFor } from '../../../src/testing/wait.js';
import { createHarness, type Harness } from './harness.js';

let h: Harness;
afterEach(async () => {
  await h?.cleanup();
});

class Calculator {
  target = new Target({ namespace: 'calc', version: '1.2' });
  add(_ctx: unknown, args: { a: number; b: number }) {
    return args.a + args.b;
  }
  async whoami(ctx: Record<string, unknown>, _args: undefined, meta: RpcMeta) {
    return { user: ctx.user, method: meta.method, version: meta.version, namespace: meta.namespace ?? null };
  }
}

describe('RpcClient validation (nothing is sent)', () => {
  it('rejects bad targets, methods, args, contexts, versions and timeouts before send', async () => {
    h = createHarness();
    const transport = await h.transport();
    const send = vi.spyOn(transport.driver, 'send');
    const client = getRpcClient(transport, { topic: h.topic });
    const cases: Array<[Promise<unknown>, new (...a: any[]) => Error, Record<string, unknown>?]> = [
      [getRpcClient(transport, {}).call({}, 'm', {}), InvalidTarget],
      [getRpcClient(transport, {}).cast({}, 'm', {}), InvalidTarget],
      [client.prepare({ fanout: true }).call({}, 'm', {}), InvalidTarget],
      [client.call({}, '', {}), InvalidArgument, { field: 'method' }],
      [client.call({}, 42 as unknown as string, {}), InvalidArgument, { field: 'method' }],
      [client.call({}, 'm', [1] as unknown as Record<string, unknown>), InvalidArgument, { field: 'args' }],
      [client.cast({}, 'm', 'x' as unknown as Record<string, unknown>), InvalidArgument, { field: 'args' }],
      [client.call({}, 'm', { n: 1n }), InvalidArgument, { field: 'args.n' }],
      [client.call({}, 'm', { fn: () => 1 }), InvalidArgument, { field: 'args.fn' }],
      [client.call({}, 'm', { deep: { list: [1, Symbol('s')] } }), InvalidArgument, { field: 'args.deep.list[1]' }],
      [client.call({}, 'm', { m: new Map() }), InvalidArgument, { field: 'args.m' }],
      [client.call({}, 'm', { x: NaN }), InvalidArgument, { field: 'args.x' }],
      [client.call([] as unknown as Record<string, unknown>, 'm', {}), InvalidArgument, { field: 'context' }],
      [client.call(new Target() as unknown as Record<string, unknown>, 'm', {}), InvalidArgument, { field: 'context' }],
      [client.call({ big: 2n }, 'm', {}), InvalidArgument, { field: 'context.big' }],
      [client.call({}, 'm', {}, { timeout: 0 }), InvalidArgument, { field: 'timeout' }],
      [client.call({}, 'm', {}, { timeout: Infinity }), InvalidArgument, { field: 'timeout' }],
      [client.prepare({ version: '1.3', versionCap: '1.2' }).call({}, 'm', {}), RPCVersionCapError],
      [client.prepare({ version: '2.0', versionCap: '1.2' }).cast({}, 'm', {}), RPCVersionCapError],
      [client.prepare({ versionCap: '1.2' }).call({}, 'm', {}), RPCVersionCapError],
    ];
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    cases.push([client.call({}, 'm', { cyclic }), InvalidArgument, { field: 'args.cyclic.self' }]);
    for (const [i, [promise, cls, fields]] of cases.entries()) {
      const err = await promise.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, `case ${i}`).toBeInstanceOf(cls);
      if (fields) expect(err, `case ${i}`).toMatchObject(fields);
    }
    expect(send).not.toHaveBeenCalled();
  });

  it('rejects bad options at construction and prepare', async () => {
    h = createHarness();
    const transport = await h.transport();
    expect(() => getRpcClient(transport, { topic: 't' }, { timeout: -1 })).toThrow(InvalidArgument);
    expect(() => getRpcClient(transport, { topic: 't' }, { timeout: '5' as unknown as number })).toThrow(/Invalid timeout/);
    expect(() => getRpcClient(transport, { topic: 't' }, { retry: -2 })).toThrow(/Invalid retry/);
    expect(() => getRpcClient(transport, { topic: 't' }, { versionCap: 'one' })).toThrow(/Invalid versionCap/);
    expect(() => getRpcClient(transport, { topic: 't' }, { callMonitorTimeout: 0 })).toThrow(/Invalid callMonitorTimeout/);
    expect(() => getRpcClient(transport, { topic: 't' }, { serializer: {} as NoOpSerializer })).toThrow(/Invalid serializer/);
    expect(() => getRpcClient(transport, { topic: 'has space' })).toThrow(InvalidArgument);
    expect(() => getRpcClient({} as never, { topic: 't' })).toThrow(/Invalid transport/);
    const client = getRpcClient(transport, { topic: 't' });
    expect(() => client.prepare({ version: 'x' })).toThrow(InvalidArgument);
    expect(() => client.prepare({ tiemout: 1 } as never)).toThrow(/prepare\.tiemout/);
  });

  it('asks the driver for fanout / callMonitor capabilities when prepared', async () => {
    h = createHarness();
    const transport = await h.transport();
    const requireFeatures = vi.spyOn(transport.driver, 'requireFeatures');
    getRpcClient(transport, { topic: 't' }).prepare({ fanout: true });
    getRpcClient(transport, { topic: 't' }, { callMonitorTimeout: 5000 });
    expect(requireFeatures.mock.calls).toEqual([[{ fanout: true }], [{ callMonitor: true }]]);
    requireFeatures.mockImplementation(() => {
      throw new NotSupportedError('no fanout here');
    });
    expect(() => getRpcClient(transport, { topic: 't', fanout: true })).toThrow(NotSupportedError);
  });
});

describe('RpcClient prepare and canSendVersion', () => {
  it('overrides what is given, inherits the rest, clears with null, leaves the original alone', async () => {
    h = createHarness();
    const transport = await h.transport();
    const base = getRpcClient(transport, { topic: 't', server: 's1', namespace: 'ns', version: '1.1' }, { timeout: 5000, retry: 2, versionCap: '1.5' });
    const p = base.prepare({ server: 's2', timeout: 1000, version: undefined });
    expect(p.target.toJSON()).toEqual({ topic: 't', server: 's2', namespace: 'ns', version: '1.1' });
    expect([p.timeout, p.retry, p.versionCap, p.callMonitorTimeout]).toEqual([1000, 2, '1.5', undefined]);
    const cleared = p.prepare({ server: null, namespace: null, versionCap: null, retry: null });
    expect(cleared.target.toJSON()).toEqual({ topic: 't', version: '1.1' });
    expect([cleared.retry, cleared.versionCap, cleared.timeout]).toEqual([undefined, undefined, 1000]);
    expect(base.target.server).toBe('s1');
    expect(base.timeout).toBe(5000);
    expect(getRpcClient(transport, { topic: 't' }).timeout).toBe(60_000);
  });

  it('canSendVersion checks a version (default: the target version) against the cap', async () => {
    h = createHarness();
    const transport = await h.transport();
    const capped = getRpcClient(transport, { topic: 't', version: '1.3' }, { versionCap: '1.4' });
    expect(capped.canSendVersion()).toBe(true);
    expect(capped.canSendVersion('1.4')).toBe(true);
    expect(capped.canSendVersion('1.5')).toBe(false);
    expect(capped.canSendVersion('2.0')).toBe(false);
    expect(capped.prepare({ version: '1.5' }).canSendVersion()).toBe(false);
    expect(getRpcClient(transport, { topic: 't' }).canSendVersion('9.9')).toBe(true);
  });
});

describe('RpcClient end to end over memory://', () => {
  it('calls and casts; a typed client gets typed results', async () => {
    h = createHarness();
    const seen: number[] = [];
    await h.server([new Calculator(), { record: (_c: unknown, a: { n: number }) => void seen.push(a.n) }]);
    const transport = await h.transport();
    const calc = getRpcClient<Calculator>(transport, { topic: h.topic, namespace: 'calc', version: '1.2' }, { timeout: 5000 });
    const sum: number = await calc.call({ user: 'u1' }, 'add', { a: 1, b: 2 });
    expect(sum).toBe(3);
    expect(await calc.call({ user: 'u1' }, 'whoami')).toEqual({ user: 'u1', method: 'whoami', version: '1.2', namespace: 'calc' });
    expect(await calc.prepare({ version: '1.0' }).call({}, 'add', { a: 2, b: 2 })).toBe(4);
    const untyped = getRpcClient(transport, { topic: h.topic });
    await untyped.cast({}, 'record', { n: 7 });
    await waitFor(() => seen.includes(7), { timeoutMs: 5000 });
    expect(await untyped.call({}, 'record', { n: 8 })).toBeNull();
  });

  it('reaches one server with prepare({server}) and every server with a fanout cast', async () => {
    h = createHarness();
    const hits: string[] = [];
    const endpoint = (name: string) => ({ hit: () => (hits.push(name), name) });
    await h.server([endpoint('a')], { server: 'host-a' });
    await h.server([endpoint('b')], { server: 'host-b' });
    const client = getRpcClient(await h.transport(), { topic: h.topic }, { timeout: 5000 });
    for (let i = 0; i < 3; i++) expect(await client.prepare({ server: 'host-b' }).call({}, 'hit', {})).toBe('b');
    hits.length = 0;
    await client.prepare({ fanout: true }).cast({}, 'hit', {});
    await waitFor(() => hits.length === 2, { timeoutMs: 5000 });
    expect(hits.sort()).toEqual(['a', 'b']);
  });

  it('NoSuchMethod and UnsupportedVersion reach the caller as those classes', async () => {
    h = createHarness();
    await h.server([new Calculator()]);
    const client = getRpcClient(await h.transport(), { topic: h.topic, namespace: 'calc', version: '1.2' }, { timeout: 5000 });
    const noMethod = await client.call({}, 'sub', {}).catch((e: unknown) => e);
    expect(noMethod).toBeInstanceOf(NoSuchMethod);
    expect((noMethod as NoSuchMethod).method).toBe('sub');
    for (const name of ['_private', 'constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      expect(await client.call({}, name, {}).catch((e: unknown) => e), name).toBeInstanceOf(NoSuchMethod);
    }
    const unsupported = await client.prepare({ version: '1.3' }).call({}, 'add', { a: 1, b: 1 }).catch((e: unknown) => e);
    expect(unsupported).toBeInstanceOf(UnsupportedVersion);
    expect(unsupported).toMatchObject({ version: '1.3', method: 'add' });
  });

  it('rebuilds a registered remote error only when its module is allowed', async () => {
    class QuotaExceeded extends Error {
      static remoteModule = 'myapp.errors';
      constructor(message: string) {
        super(message);
        this.name = 'QuotaExceeded';
      }
    }
    const remoteErrors = defaultRemoteErrorRegistry.clone().register('myapp.errors', QuotaExceeded);
    h = createHarness();
    await h.server([{ reserve: () => { throw new QuotaExceeded('quota of 3 exceeded'); } }]);
    const allowed = getRpcClient(await h.transport({ allowedRemoteExmods: ['myapp.errors'], remoteErrors }), { topic: h.topic }, { timeout: 5000 });
    const denied = getRpcClient(await h.transport({ remoteErrors }), { topic: h.topic }, { timeout: 5000 });
    const rebuilt = await allowed.call({}, 'reserve', {}).catch((e: unknown) => e);
    expect(rebuilt).toBeInstanceOf(QuotaExceeded);
    expect((rebuilt as Error).message).toBe('quota of 3 exceeded');
    const remote = await denied.call({}, 'reserve', {}).catch((e: unknown) => e);
    expect(remote).toBeInstanceOf(RemoteError);
    expect(remote).toMatchObject({ excType: 'QuotaExceeded', module: 'myapp.errors', value: 'quota of 3 exceeded' });
  });

  it('times out, and aborts through the signal (also before sending)', async () => {
    h = createHarness();
    const gate = deferred<void>();
    await h.server([{ hang: () => gate.promise }]);
    const transport = await h.transport();
    const client = getRpcClient(transport, { topic: h.topic }, { timeout: 10_000 });
    const started = Date.now();
    await expect(client.call({}, 'hang', {}, { timeout: 200 })).rejects.toBeInstanceOf(MessagingTimeout);
    expect(Date.now() - started).toBeLessThan(5000);
    const controller = new AbortController();
    const pending = client.call({}, 'hang', {}, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toBeInstanceOf(AbortError);
    const send = vi.spyOn(transport.driver, 'send');
    await expect(client.call({}, 'hang', {}, { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(AbortError);
    expect(send).not.toHaveBeenCalled();
    gate.resolve();
  });

  it('call-monitor heartbeats keep a long call alive past its window; without heartbeats it times out', async () => {
    h = createHarness();
    const gate = deferred<void>();
    await h.server([
      { slow: () => new Promise((r) => setTimeout(() => r('slow done'), 3_000)) },
      { stuck: () => gate.promise.then(() => 'late') },
    ]);
    const transport = await h.transport();
    // 2 s window: the server heartbeats every 1 s, so a 3 s call succeeds.
    const monitored = getRpcClient(transport, { topic: h.topic }, { timeout: 20_000, callMonitorTimeout: 2_000 });
    expect(await monitored.call({}, 'slow', {})).toBe('slow done');
    // 1.5 s window: below 2 s the server sends no heartbeats, so the window expires.
    const unmonitored = getRpcClient(transport, { topic: h.topic }, { timeout: 20_000, callMonitorTimeout: 1_500 });
    const started = Date.now();
    await expect(unmonitored.call({}, 'stuck', {})).rejects.toBeInstanceOf(MessagingTimeout);
    expect(Date.now() - started).toBeLessThan(15_000);
    gate.resolve();
  });

  it('applies the client serializer to args, context and result', async () => {
    h = createHarness();
    await h.server([{ echo: (ctx: Record<string, unknown>, args: Record<string, unknown>) => ({ ctx: ctx.tenant, args }) }]);
    const serializer = new (class extends NoOpSerializer {
      override serializeContext(ctx: Record<string, unknown>) {
        return { tenant: String(ctx.tenant).toUpperCase() };
      }
      override serializeEntity(_ctx: unknown, entity: unknown) {
        return entity instanceof Date ? entity.toISOString() : entity;
      }
      override deserializeEntity(_ctx: unknown, entity: unknown) {
        return { received: entity };
      }
    })();
    const client = getRpcClient(await h.transport(), { topic: h.topic }, { serializer, timeout: 5000 });
    expect(await client.call({ tenant: 'acme' }, 'echo', { when: new Date(0) })).toEqual({
      received: { ctx: 'ACME', args: { when: '1970-01-01T00:00:00.000Z' } },
    });
  });
});

