// Interop: tidings RPC servers answering a Python oslo.messaging 14 client
// (test/interop/py/client.py) over RabbitMQ, including the errors Python expects.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRpcServer, getRpcTransport, Target, type Context, type Transport } from '../../src/index.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { deleteQueues, rpcQueues } from './support/amqp-admin.js';
import { PyClient, requireOsloMessaging, startPy, type PyErrorInfo, type PyReply } from './support/python.js';

/** An error that Python rebuilds as its own builtins.ValueError. */
class ValueError extends Error {
  static remoteModule = 'builtins';
  constructor(message: string) {
    super(message);
    this.name = 'ValueError';
  }
}

interface Seen {
  server: string;
  method: string;
  ctx: Context;
  args: Record<string, unknown>;
}

class Echo {
  target = new Target({ version: '1.3' });
  constructor(
    private readonly server: string,
    private readonly seen: Seen[],
  ) {}
  echo(ctx: Context, args: Record<string, unknown>) {
    this.seen.push({ server: this.server, method: 'echo', ctx, args });
    return { args, ctx, server: this.server };
  }
  record(ctx: Context, args: Record<string, unknown>) {
    this.seen.push({ server: this.server, method: 'record', ctx, args });
  }
  fail(_ctx: Context, args: { message: string }) {
    throw new ValueError(args.message);
  }
  failType(_ctx: Context, args: { message: string }) {
    throw new TypeError(args.message);
  }
  async sleep(_ctx: Context, args: { ms: number }) {
    await new Promise((r) => setTimeout(r, args.ms));
    return args.ms;
  }
}

class Calc {
  target = new Target({ namespace: 'calc', version: '1.2' });
  add(_ctx: Context, args: { a: number; b: number }) {
    return args.a + args.b;
  }
}

function errorOf(reply: PyReply): PyErrorInfo {
  if (reply.ok) throw new Error(`expected a Python exception, got result ${JSON.stringify(reply.result)}`);
  return reply.error;
}

describe('interop: Python oslo.messaging RPC client -> tidings RPC server', () => {
  const topic = uniqueName('t-tssrv');
  const seen: Seen[] = [];
  let transport: Transport;
  const servers: Array<{ stop(): Promise<void>; wait(): Promise<void> }> = [];
  let py: PyClient;

  beforeAll(async () => {
    await requireRabbitMQ();
    requireOsloMessaging();
    transport = await getRpcTransport(RABBIT_URL);
    for (const name of ['s1', 's2']) {
      const server = getRpcServer(transport, new Target({ topic, server: name }), [new Echo(name, seen), new Calc()]);
      await server.start();
      servers.push(server);
    }
    py = await startPy(new PyClient(RABBIT_URL));
  }, 90_000);

  afterAll(async () => {
    await py?.stop();
    for (const s of servers) {
      await s.stop();
      await s.wait();
    }
    await transport?.cleanup();
    await deleteQueues(rpcQueues(topic, ['s1', 's2']));
  }, 60_000);

  const seenWith = (marker: string) => seen.filter((s) => s.args.marker === marker);

  it('call: args and result survive; every context key arrives', async () => {
    const ctx = { user_id: 'u1', project_id: 'p1', request_id: 'req-9', roles: ['reader'], is_admin: true };
    const args = { x: [1, 'a', null], y: { z: 1.5 }, s: 'ünïcode ✓' };
    const reply = await py.call({ topic }, ctx, 'echo', args);
    expect(reply).toMatchObject({ ok: true });
    const result = (reply as { result: { args: unknown; ctx: Context; server: string } }).result;
    expect(result.args).toEqual(args);
    expect(result.ctx).toMatchObject(ctx);
    for (const k of Object.keys(result.ctx)) expect(k.startsWith('_')).toBe(false);
    expect(['s1', 's2']).toContain(result.server);
  });

  it('call to one server lands on that server', async () => {
    for (let i = 0; i < 3; i++) {
      const reply = await py.call({ topic, server: 's1' }, {}, 'echo', { i });
      expect(reply).toMatchObject({ ok: true, result: { server: 's1' } });
    }
  });

  it('cast reaches exactly one server with its context', async () => {
    const marker = uniqueName('cast');
    expect(await py.cast({ topic }, { user_id: 'caster' }, 'record', { marker })).toEqual({ ok: true, result: null, id: expect.any(Number) });
    await waitFor(() => seenWith(marker).length > 0, { timeoutMs: 15_000, message: 'the Python cast reached a tidings server' });
    await py.call({ topic, server: 's1' }, {}, 'echo', {});
    await py.call({ topic, server: 's2' }, {}, 'echo', {});
    expect(seenWith(marker)).toHaveLength(1);
    expect(seenWith(marker)[0].ctx).toMatchObject({ user_id: 'caster' });
  });

  it('fanout cast reaches every server', async () => {
    const marker = uniqueName('fanout');
    expect(await py.cast({ topic, fanout: true }, {}, 'record', { marker })).toMatchObject({ ok: true });
    await waitFor(() => seenWith(marker).length >= 2, { timeoutMs: 15_000, message: 'both tidings servers got the Python fanout cast' });
    expect(seenWith(marker).map((s) => s.server).sort()).toEqual(['s1', 's2']);
  });

  it('namespace and version: compatible request dispatched', async () => {
    expect(await py.call({ topic, namespace: 'calc', version: '1.2' }, {}, 'add', { a: 20, b: 22 })).toMatchObject({ ok: true, result: 42 });
    expect(await py.call({ topic, namespace: 'calc' }, {}, 'add', { a: 1, b: 2 })).toMatchObject({ ok: true, result: 3 });
  });

  it('NoSuchMethod arrives as RemoteError(exc_type NoSuchMethod) when the module is not allowed', async () => {
    const e = errorOf(await py.call({ topic }, {}, 'nope', {}));
    expect(e.is_remote_error).toBe(true);
    expect(e.exc_type).toBe('NoSuchMethod');
    expect(e.value).toContain('nope');
  });

  it('NoSuchMethod arrives as oslo_messaging NoSuchMethod when oslo_messaging.rpc.dispatcher is allowed', async () => {
    const e = errorOf(await py.call({ topic }, {}, 'nope', {}, { allowedRemoteExmods: ['oslo_messaging.rpc.dispatcher'] }));
    expect(e.is_no_such_method).toBe(true);
    expect(e.method).toBe('nope');
    expect(e.message).toContain('Endpoint does not support RPC method nope');
  });

  it('UnsupportedVersion arrives as RemoteError, or as oslo UnsupportedVersion when allowed', async () => {
    const plain = errorOf(await py.call({ topic, version: '2.0' }, {}, 'echo', {}));
    expect(plain.is_remote_error).toBe(true);
    expect(plain.exc_type).toBe('UnsupportedVersion');
    const typed = errorOf(await py.call({ topic, namespace: 'calc', version: '1.5' }, {}, 'add', { a: 1, b: 1 }, { allowedRemoteExmods: ['oslo_messaging.rpc.dispatcher'] }));
    expect(typed.is_unsupported_version).toBe(true);
    expect(typed.version).toBe('1.5');
    expect(typed.method).toBe('add');
  });

  it('an endpoint error declared as builtins.ValueError arrives as a real Python ValueError', async () => {
    const e = errorOf(await py.call({ topic }, {}, 'fail', { message: 'bad input 7' }));
    expect(e.type).toBe('ValueError');
    expect(e.is_value_error).toBe(true);
    // oslo replaces the first arg of a rebuilt builtin by message + remote traceback.
    expect(String(e.args[0]).startsWith('bad input 7')).toBe(true);
  });

  it('a JS TypeError arrives as Python TypeError', async () => {
    const e = errorOf(await py.call({ topic }, {}, 'failType', { message: 'wrong type' }));
    expect(e.type).toBe('TypeError');
    expect(e.message.startsWith('wrong type')).toBe(true);
  });

  it('a slow endpoint past the Python timeout gives MessagingTimeout; the client keeps working', async () => {
    const e = errorOf(await py.call({ topic, server: 's2' }, {}, 'sleep', { ms: 2500 }, { timeout: 1 }));
    expect(e.is_messaging_timeout).toBe(true);
    expect(await py.call({ topic, server: 's2' }, {}, 'echo', { after: 1 })).toMatchObject({ ok: true, result: { args: { after: 1 } } });
  });

  it('call-monitor: tidings heartbeats keep a Python call alive past its 2 s monitor window', async () => {
    const reply = await py.call({ topic, server: 's1' }, {}, 'sleep', { ms: 4500 }, { timeout: 30, callMonitorTimeout: 2 });
    expect(reply).toMatchObject({ ok: true, result: 4500 });
  });

  it("call-monitor: the endpoint context carries client_timeout in seconds, as oslo's does", async () => {
    const reply = await py.call({ topic, server: 's2' }, { user_id: 'cm' }, 'echo', { cm: true }, { timeout: 30, callMonitorTimeout: 4 });
    expect(reply).toMatchObject({ ok: true });
    const ctx = (reply as { result: { ctx: Context } }).result.ctx;
    expect(ctx).toMatchObject({ user_id: 'cm', client_timeout: 4 });
  });

  it('a call to a topic with no server times out in Python', async () => {
    const e = errorOf(await py.call({ topic: uniqueName('t-nobody') }, {}, 'echo', {}, { timeout: 1 }));
    expect(e.is_messaging_timeout).toBe(true);
  });
});
