// Interop: Python oslo.messaging 14 RPC servers (test/interop/py/rpc_server.py) answered by
// the tidings RPC client over RabbitMQ. Fails, never skips, without Python oslo or RabbitMQ.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getRpcClient,
  getRpcTransport,
  MessagingTimeout,
  NoSuchMethod,
  RemoteError,
  remoteOrigin,
  UnsupportedVersion,
  defaultRemoteErrorRegistry,
  type Transport,
} from '../../src/index.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { deleteQueues, rpcQueues } from './support/amqp-admin.js';
import { PyProcess, requireOsloMessaging, startPy } from './support/python.js';
import { createOtelHarness } from '../support/otel.js';

/** A local class registered for Python's builtins.ValueError, to check typed rebuilding. */
class ValueError extends Error {
  constructor(message?: string) {
    super(message);
    this.name = 'ValueError';
  }
}

describe('interop: tidings RPC client -> Python oslo.messaging RPC server', () => {
  const topic = uniqueName('t-pysrv');
  const servers: PyProcess[] = [];
  let transport: Transport;
  let typedTransport: Transport;

  beforeAll(async () => {
    await requireRabbitMQ();
    requireOsloMessaging();
    for (const server of ['s1', 's2']) servers.push(new PyProcess('rpc_server.py', { url: RABBIT_URL, topic, server }));
    await Promise.all(servers.map((p) => startPy(p)));
    transport = await getRpcTransport(RABBIT_URL);
    const registry = defaultRemoteErrorRegistry.clone().register('builtins', ValueError);
    typedTransport = await getRpcTransport(RABBIT_URL, { remoteErrors: registry });
  }, 90_000);

  afterAll(async () => {
    await transport?.cleanup();
    await typedTransport?.cleanup();
    await Promise.all(servers.map((p) => p.stop()));
    await deleteQueues(rpcQueues(topic, ['s1', 's2']));
  }, 60_000);

  const requestsWith = (method: string, marker: string) =>
    servers.flatMap((p) => p.events.filter((e) => e.event === 'request' && e.method === method && e.args?.marker === marker));

  it('call: args, result and every context key survive; Python sees client_timeout', async () => {
    const client = getRpcClient(transport, { topic }, { timeout: 15_000 });
    const ctx = { user_id: 'u1', project_id: 'p1', request_id: 'req-1', roles: ['admin', 'member'], is_admin: false, nested: { a: [1, 'x'] } };
    const args = { x: [1, 'a', null], y: { z: true }, s: 'ünïcode ✓' };
    const result = (await client.call(ctx, 'echo', args)) as { args: unknown; ctx: Record<string, unknown>; server: string };
    expect(result.args).toEqual(args);
    expect(result.ctx).toEqual({ ...ctx, client_timeout: null });
    expect(['s1', 's2']).toContain(result.server);
  });

  it('OpenTelemetry: the W3C keys tidings injects reach the Python server untouched, with the call span\'s trace and span ids', async () => {
    const o = createOtelHarness();
    const traced = await getRpcTransport(RABBIT_URL, { instrumentation: o.instrumentation });
    try {
      const client = getRpcClient(traced, { topic }, { timeout: 15_000 });
      const result = (await client.call({ user_id: 'u-trace' }, 'echo', {})) as { ctx: Record<string, unknown> };
      const span = o.span(`call ${topic}`).spanContext();
      expect(result.ctx).toEqual({ user_id: 'u-trace', traceparent: `00-${span.traceId}-${span.spanId}-01`, client_timeout: null });
    } finally {
      await traced.cleanup();
      await o.shutdown();
    }
  });

  it('call to one server: every call lands on that server', async () => {
    const client = getRpcClient(transport, { topic }, { timeout: 15_000 }).prepare({ server: 's2' });
    for (let i = 0; i < 4; i++) {
      const result = (await client.call({}, 'echo', { i })) as { server: string };
      expect(result.server).toBe('s2');
    }
  });

  it('cast: one server receives it once, with the context', async () => {
    const marker = uniqueName('cast');
    const client = getRpcClient(transport, { topic }, { timeout: 15_000 });
    await expect(client.cast({ user_id: 'caster' }, 'record', { marker })).resolves.toBeUndefined();
    await waitFor(() => requestsWith('record', marker).length > 0, { timeoutMs: 15_000, message: 'the cast reached a Python server' });
    // A later call to each server proves both have drained what was sent before it.
    await client.prepare({ server: 's1' }).call({}, 'echo', {});
    await client.prepare({ server: 's2' }).call({}, 'echo', {});
    const got = requestsWith('record', marker);
    expect(got).toHaveLength(1);
    expect(got[0].ctx).toEqual({ user_id: 'caster', client_timeout: null });
  });

  it('fanout cast: every server receives it', async () => {
    const marker = uniqueName('fanout');
    const client = getRpcClient(transport, { topic }, { timeout: 15_000 });
    await client.prepare({ fanout: true }).cast({ user_id: 'fan' }, 'record', { marker });
    await waitFor(() => requestsWith('record', marker).length >= 2, { timeoutMs: 15_000, message: 'both Python servers got the fanout cast' });
    expect(requestsWith('record', marker).map((e) => e.server).sort()).toEqual(['s1', 's2']);
  });

  it('namespace and version: a compatible version is dispatched, a newer one is UnsupportedVersion', async () => {
    const calc = getRpcClient(transport, { topic, namespace: 'calc', version: '1.1' }, { timeout: 15_000 });
    await expect(calc.call({}, 'add', { a: 2, b: 40 })).resolves.toBe(42);
    const err = await calc.prepare({ version: '1.3' }).call({}, 'add', { a: 1, b: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedVersion);
    expect((err as UnsupportedVersion).version).toBe('1.3');
    expect((err as UnsupportedVersion).method).toBe('add');
    expect(remoteOrigin(err)?.module).toBe('oslo_messaging.rpc.dispatcher');
  });

  it('a method missing in the matched namespace is NoSuchMethod', async () => {
    const calc = getRpcClient(transport, { topic, namespace: 'calc', version: '1.0' }, { timeout: 15_000 });
    const err = await calc.call({}, 'echo', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NoSuchMethod);
    expect((err as NoSuchMethod).method).toBe('echo');
  });

  it('a remote ValueError arrives as RemoteError with type, message, module and traceback', async () => {
    const client = getRpcClient(transport, { topic }, { timeout: 15_000 });
    const err = await client.call({}, 'fail', { message: 'bad input 42' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteError);
    const remote = err as RemoteError;
    expect(remote.excType).toBe('ValueError');
    expect(remote.value).toBe('bad input 42');
    expect(remote.module).toBe('builtins');
    expect(remote.args).toEqual(['bad input 42']);
    expect(remote.traceback.join('')).toContain('ValueError: bad input 42');
  });

  it('a remote ValueError is rebuilt as a registered local class for module builtins', async () => {
    const client = getRpcClient(typedTransport, { topic }, { timeout: 15_000 });
    const err = await client.call({}, 'fail', { message: 'typed' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValueError);
    expect((err as Error).message).toBe('typed');
    expect(remoteOrigin(err)).toMatchObject({ module: 'builtins', className: 'ValueError' });
  });

  it('call-monitor: _timeout goes out in seconds (Python ctx client_timeout) and Python heartbeats keep a long call alive', async () => {
    const client = getRpcClient(transport, { topic }, { timeout: 30_000, callMonitorTimeout: 2000 }).prepare({ server: 's1' });
    const echoed = (await client.call({ user_id: 'cm' }, 'echo', {})) as { ctx: Record<string, unknown> };
    expect(echoed.ctx).toEqual({ user_id: 'cm', client_timeout: 2 });
    // Python heartbeats every int(2)/2 = 1 s; without them the 2 s window would end the call.
    await expect(client.call({}, 'sleep', { ms: 4500 })).resolves.toBe(4500);
  });

  it('a call to a topic with no server fails with MessagingTimeout', async () => {
    const client = getRpcClient(transport, { topic: uniqueName('t-nobody') }, { timeout: 1000 });
    const started = Date.now();
    const err = await client.call({}, 'echo', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MessagingTimeout);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('a call that outlives its timeout fails with MessagingTimeout and the late reply does not disturb the next call', async () => {
    const client = getRpcClient(transport, { topic }, { timeout: 15_000 }).prepare({ server: 's1' });
    const err = await client.prepare({ timeout: 500 }).call({}, 'sleep', { ms: 2000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MessagingTimeout);
    const result = (await client.call({}, 'echo', { after: 'timeout' })) as { args: unknown };
    expect(result.args).toEqual({ after: 'timeout' });
  });
});
