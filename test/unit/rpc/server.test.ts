import diagnostics from 'node:diagnostics_channel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConnectionError, InvalidArgument, InvalidState, InvalidTarget, MessagingTimeout, ServerListenError } from '../../../src/core/errors.js';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { getRpcClient } from '../../../src/rpc/client.js';
import { expectedExceptions } from '../../../src/rpc/endpoint.js';
import { RPC_CHANNELS } from '../../../src/rpc/instrumentation.js';
import { getRpcServer, type RpcDispatchInfo } from '../../../src/rpc/server.js';
import { ExplicitRpcAccessPolicy, expose } from '../../../src/rpc/access-policy.js';
import { deferred, uniqueName, waitFor } from '../../../src/testing/wait.js';
import { createHarness, type Harness } from './harness.js';

let h: Harness;
afterEach(async () => {
  await h?.cleanup();
});

class QuotaExceeded extends Error {}

describe('RpcServer lifecycle', () => {
  it('start() validates the target: topic and server are required', async () => {
    h = createHarness();
    const transport = await h.transport();
    await expect(getRpcServer(transport, { topic: 't' }, []).start()).rejects.toBeInstanceOf(InvalidTarget);
    await expect(getRpcServer(transport, { server: 's' }, []).start()).rejects.toBeInstanceOf(InvalidTarget);
    expect(() => getRpcServer(transport, { topic: 't', server: 's' }, [], { executorSize: 0 })).toThrow(InvalidArgument);
    expect(() => getRpcServer(transport, { topic: 't', server: 's' }, [{ target: () => 1 }])).toThrow(/endpoints\[0\]\.target/);
  });

  it('wraps driver failures to listen in ServerListenError; a cleaned-up transport is InvalidState', async () => {
    h = createHarness();
    const transport = await h.transport();
    const listen = vi.spyOn(transport.driver, 'listen').mockRejectedValueOnce(new ConnectionError('broker went away'));
    const server = getRpcServer(transport, { topic: h.topic, server: 's' }, [{ hi: () => 'hi' }]);
    const err = await server.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerListenError);
    expect((err as Error).cause).toBeInstanceOf(ConnectionError);
    listen.mockRestore();
    // A failed start leaves the server startable.
    await server.start();
    await server.stop();
    await server.wait();
    await transport.cleanup();
    await expect(getRpcServer(transport, { topic: 't', server: 's' }, []).start()).rejects.toBeInstanceOf(InvalidState);
  });

  it('enforces start → stop → wait order and can restart after wait', async () => {
    h = createHarness();
    const transport = await h.transport();
    const server = getRpcServer(transport, { topic: h.topic, server: 'host' }, [{ hi: () => 'hi' }]);
    await expect(server.stop()).rejects.toBeInstanceOf(InvalidState);
    await expect(server.wait()).rejects.toBeInstanceOf(InvalidState);
    const first = server.start();
    expect(server.start()).toBe(first);
    await first;
    await expect(server.wait()).rejects.toBeInstanceOf(InvalidState);
    const client = getRpcClient(transport, { topic: h.topic }, { timeout: 5000 });
    expect(await client.call({}, 'hi', {})).toBe('hi');
    await server.stop();
    await expect(server.start()).rejects.toBeInstanceOf(InvalidState);
    await server.wait();
    await server.wait();
    await server.start();
    expect(await client.call({}, 'hi', {})).toBe('hi');
    await server.stop();
    await server.wait();
  });

  it('stop() stops receiving; wait() drains in-flight calls before resolving', async () => {
    h = createHarness();
    const gate = deferred<void>();
    let started = 0;
    const server = await h.server([{ slow: async () => (started++, await gate.promise, 'finished') }]);
    const client = getRpcClient(await h.transport(), { topic: h.topic }, { timeout: 10_000 });
    const inFlight = client.call({}, 'slow', {});
    await waitFor(() => started === 1, { timeoutMs: 5000 });
    await server.stop();
    let waited = false;
    const waiting = server.wait().then(() => (waited = true));
    await expect(client.call({}, 'slow', {}, { timeout: 300 })).rejects.toBeInstanceOf(MessagingTimeout);
    expect(waited).toBe(false);
    gate.resolve();
    expect(await inFlight).toBe('finished');
    await waiting;
    expect(started).toBe(1);
  });
});

describe('RpcServer dispatch', () => {
  it('messages already received when stop() is called are still dispatched', async () => {
    h = createHarness();
    const gate = deferred<void>();
    const handled: number[] = [];
    const events: string[] = [];
    const server = await h.server([{ work: async (_c: unknown, a: { n: number }) => (await gate.promise, handled.push(a.n)) }], { executorSize: 1 });
    server.events.on('stopped', () => events.push('stopped'));
    const client = getRpcClient(await h.transport(), { topic: h.topic });
    for (let n = 1; n <= 3; n++) await client.cast({}, 'work', { n });
    await waitFor(() => server.inFlight === 1, { timeoutMs: 5000 });
    const stopping = server.stop();
    gate.resolve();
    await stopping;
    await server.wait();
    expect(handled.sort()).toEqual([1, 2, 3]);
    expect(events).toEqual(['stopped']);
  });
  it('never runs more than executorSize handlers at once, and applies back-pressure', async () => {
    h = createHarness();
    const gate = deferred<void>();
    let running = 0;
    let maxRunning = 0;
    let done = 0;
    const server = await h.server(
      [{ work: async () => { running++; maxRunning = Math.max(maxRunning, running); await gate.promise; running--; done++; } }],
      { executorSize: 3 },
    );
    const client = getRpcClient(await h.transport(), { topic: h.topic });
    for (let i = 0; i < 10; i++) await client.cast({}, 'work', {});
    await waitFor(() => running === 3, { timeoutMs: 5000 });
    expect(server.inFlight).toBe(3);
    gate.resolve();
    await waitFor(() => done === 10, { timeoutMs: 5000 });
    expect(maxRunning).toBe(3);
  });

  it('a throwing handler never kills the server; errors are logged without payload and emitted', async () => {
    h = createHarness();
    const logger = createMemoryLogger();
    const errors: unknown[] = [];
    const dispatched: RpcDispatchInfo[] = [];
    const server = await h.server(
      [
        {
          boom: (_c: unknown, args: { secret: string }) => {
            throw new Error(`failed for ${args.secret.length} chars`);
          },
          raw: () => {
            throw { not: 'an error' };
          },
          ok: () => 'ok',
        },
      ],
      { logger },
    );
    server.events.on('error', (err) => errors.push(err));
    server.events.on('dispatched', (info) => dispatched.push(info));
    const client = getRpcClient(await h.transport(), { topic: h.topic }, { timeout: 5000 });
    await expect(client.call({ token: 'tok-123' }, 'boom', { secret: 'hunter2' })).rejects.toThrow('failed for 7 chars');
    await expect(client.call({}, 'raw', {})).rejects.toThrow();
    await client.cast({}, 'boom', { secret: 'x' });
    await waitFor(() => errors.length === 3, { timeoutMs: 5000 });
    expect(await client.call({}, 'ok', {})).toBe('ok');
    const errorRecords = logger.records.filter((r) => r.level === 'error');
    expect(errorRecords).toHaveLength(3);
    expect(errorRecords[0].fields).toMatchObject({ method: 'boom', err: { name: 'Error', message: 'failed for 7 chars' } });
    expect(JSON.stringify(logger.records)).not.toMatch(/hunter2|tok-123/);
    expect(dispatched.map((d) => [d.method, d.outcome, d.expectsReply])).toEqual([
      ['boom', 'failure', true],
      ['raw', 'failure', true],
      ['boom', 'failure', false],
      ['ok', 'result', true],
    ]);
  });

  it('a throwing event listener never breaks start, dispatch or the reply; it is logged', async () => {
    h = createHarness();
    const logger = createMemoryLogger();
    const server = getRpcServer(await h.transport(), { topic: h.topic, server: uniqueName('host') }, [
      {
        ok: () => 'ok',
        boom: () => {
          throw new Error('handler failed');
        },
      },
    ], { logger });
    for (const event of ['started', 'dispatched', 'error'] as const) {
      server.events.on(event, () => {
        throw new Error(`${event} listener bug`);
      });
    }
    await server.start();
    await server.stop();
    await server.wait();
    await server.start();
    const client = getRpcClient(await h.transport(), { topic: h.topic }, { timeout: 5000 });
    expect(await client.call({}, 'ok', {})).toBe('ok');
    await expect(client.call({}, 'boom', {})).rejects.toThrow('handler failed');
    expect(await client.call({}, 'ok', {})).toBe('ok');
    await server.stop();
    await server.wait();
    const warned = logger.records.filter((r) => r.level === 'warn' && r.msg === 'an event listener threw').map((r) => r.fields.event);
    expect(warned).toEqual(['started', 'started', 'dispatched', 'error', 'dispatched', 'dispatched']);
  });

  it('expected exceptions reach the caller but are logged at debug level only', async () => {
    h = createHarness();
    const logger = createMemoryLogger();
    class Inventory {
      static expectedErrors = [RangeError];
      reserve = expectedExceptions(QuotaExceeded)(() => {
        throw new QuotaExceeded('quota');
      });
      take(): never {
        throw new RangeError('none left');
      }
    }
    const server = await h.server([new Inventory()], { logger });
    const errors: unknown[] = [];
    server.events.on('error', (e) => errors.push(e));
    const client = getRpcClient(await h.transport(), { topic: h.topic }, { timeout: 5000 });
    await expect(client.call({}, 'reserve', {})).rejects.toThrow('quota');
    await expect(client.call({}, 'take', {})).rejects.toBeInstanceOf(RangeError);
    expect(logger.records.filter((r) => r.level === 'error')).toEqual([]);
    expect(logger.records.filter((r) => r.level === 'debug' && r.msg.includes('expected')).map((r) => r.fields.method)).toEqual(['reserve', 'take']);
    expect(errors).toEqual([]);
  });

  it('replies with a failure for results JSON cannot carry, and null for undefined', async () => {
    h = createHarness();
    await h.server([{ big: () => 1n, nothing: () => undefined }]);
    const client = getRpcClient(await h.transport(), { topic: h.topic }, { timeout: 5000 });
    await expect(client.call({}, 'big', {})).rejects.toThrow(/Invalid result/);
    expect(await client.call({}, 'nothing', {})).toBeNull();
  });

  it('answers oslo_rpc_server_ping when rpcPingEnabled, honouring ExplicitRpcAccessPolicy', async () => {
    h = createHarness();
    await h.server([{ hidden: () => 'no', shown: expose(() => 'yes') }], { rpcPingEnabled: true, accessPolicy: new ExplicitRpcAccessPolicy() });
    const client = getRpcClient(await h.transport(), { topic: h.topic }, { timeout: 5000 });
    expect(await client.call({}, 'oslo_rpc_server_ping', {})).toBe('pong');
    expect(await client.call({}, 'shown', {})).toBe('yes');
    await expect(client.call({}, 'hidden', {})).rejects.toThrow(/does not support RPC method hidden/);
  });

  it('publishes client and server spans on diagnostics_channel tracing channels, with their contexts', async () => {
    h = createHarness();
    const events: string[] = [];
    const contexts: Record<string, unknown[]> = { call: [], cast: [], dispatch: [] };
    const method = uniqueName('m').replace(/-/g, '_');
    const handlers = (kind: 'call' | 'cast' | 'dispatch') => ({
      start: (ctx: unknown) => (ctx as { method: string }).method === method && events.push(`${kind}:start`) && contexts[kind].push({ ...(ctx as object) }),
      end: () => {},
      asyncStart: () => {},
      asyncEnd: (ctx: unknown) => (ctx as { method: string }).method === method && events.push(`${kind}:asyncEnd`),
      error: () => {},
    });
    const channels = (['call', 'cast', 'dispatch'] as const).map((kind) => [diagnostics.tracingChannel(RPC_CHANNELS[kind]), handlers(kind)] as const);
    for (const [channel, handler] of channels) channel.subscribe(handler);
    try {
      const server = await h.server([{ [method]: () => 'traced' }], { server: 'host-t' });
      const client = getRpcClient(await h.transport(), { topic: h.topic }, { timeout: 5000 });
      expect(await client.call({}, method, {})).toBe('traced');
      await client.prepare({ version: '1.1' }).cast({}, method, {});
      await waitFor(() => contexts.dispatch.length === 2 && events.filter((e) => e === 'dispatch:asyncEnd').length === 2, { timeoutMs: 5000 });
      expect(events).toEqual(expect.arrayContaining(['call:start', 'call:asyncEnd', 'cast:start', 'cast:asyncEnd', 'dispatch:start', 'dispatch:asyncEnd']));
      const target = { exchange: undefined, topic: h.topic, server: undefined, fanout: undefined, namespace: undefined };
      expect(contexts.call).toEqual([{ kind: 'call', method, ...target, version: undefined, timeout: 5000, context: {} }]);
      expect(contexts.cast).toEqual([{ kind: 'cast', method, ...target, version: '1.1', context: {} }]);
      expect(contexts.cast[0]).not.toHaveProperty('timeout');
      expect(contexts.dispatch).toEqual([
        { kind: 'dispatch', topic: h.topic, server: server.target.server, method, namespace: undefined, version: '1.0', messageId: expect.any(String), expectsReply: true, context: expect.any(Object) },
        { kind: 'dispatch', topic: h.topic, server: server.target.server, method, namespace: undefined, version: '1.1', messageId: expect.any(String), expectsReply: false, context: expect.any(Object) },
      ]);
    } finally {
      for (const [channel, handler] of channels) channel.unsubscribe(handler);
    }
  });

  it('puts the request context on the tracing channels and an endpoint failure on the dispatch error channel', async () => {
    h = createHarness();
    const method = uniqueName('m').replace(/-/g, '_');
    const seen: Array<{ kind: string; context: unknown; error?: unknown }> = [];
    const handlers = (kind: 'call' | 'dispatch') => ({
      start: (ctx: unknown) => void ((ctx as { method: string }).method === method && seen.push({ kind: `${kind}:start`, context: (ctx as { context: unknown }).context })),
      end: () => {},
      asyncStart: () => {},
      asyncEnd: () => {},
      error: (ctx: unknown) => void ((ctx as { method: string }).method === method && seen.push({ kind: `${kind}:error`, context: undefined, error: (ctx as { error: unknown }).error })),
    });
    const channels = (['call', 'dispatch'] as const).map((kind) => [diagnostics.tracingChannel(RPC_CHANNELS[kind]), handlers(kind)] as const);
    for (const [channel, handler] of channels) channel.subscribe(handler);
    const failure = new RangeError('out of range');
    const errors: unknown[] = [];
    try {
      const server = await h.server([{ [method]: () => Promise.reject(failure) }], { server: 'host-e' });
      server.events.on('error', (err) => errors.push(err));
      const client = getRpcClient(await h.transport(), { topic: h.topic }, { timeout: 5000 });
      await expect(client.call({ request_id: 'req-9' }, method, {})).rejects.toThrow(/out of range/);
      await waitFor(() => seen.filter((e) => e.kind.endsWith(':error')).length === 2, { timeoutMs: 5000 });
    } finally {
      for (const [channel, handler] of channels) channel.unsubscribe(handler);
    }
    expect(seen.find((e) => e.kind === 'call:start')?.context).toEqual({ request_id: 'req-9' });
    expect(seen.find((e) => e.kind === 'dispatch:start')?.context).toMatchObject({ request_id: 'req-9' });
    expect(seen.find((e) => e.kind === 'dispatch:error')?.error).toBe(failure);
    expect(seen.find((e) => e.kind === 'call:error')?.error).toMatchObject({ name: 'RangeError' });
    // traced or not, the failure is reported and replied the same way
    expect(errors).toEqual([failure]);
  });
});
