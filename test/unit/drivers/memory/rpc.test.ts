// RPC through the memory:// driver API: call/reply, cast, routing (shared topic queue, server
// queue, fanout), timeouts, abort, call-monitor, remote errors and the JSON wire.
import { afterEach, describe, expect, it } from 'vitest';
import { decodeBody } from '../../../../src/contract/envelope.js';
import type { RpcIncomingMessage } from '../../../../src/contract/incoming-message.js';
import { RemoteErrorRegistry, defaultRemoteErrorRegistry, remoteOrigin } from '../../../../src/contract/remote-error.js';
import { AbortError, InvalidArgument, InvalidState, InvalidTarget, MessageDeliveryFailure, MessagingTimeout, RemoteError } from '../../../../src/core/errors.js';
import { createMemoryLogger } from '../../../../src/core/logger.js';
import { Target } from '../../../../src/core/target.js';
import { deferred, uniqueName, waitFor } from '../../../../src/testing/wait.js';
import { getMemoryBroker } from '../../../../src/drivers/memory/index.js';
import { cleanupAll, echoServer, makePair, record } from './helpers.js';

afterEach(cleanupAll);

const call = { waitForReply: true, timeout: 5000 } as const;

/** The rejection of `promise`; fails the test when it resolves. */
async function rejectionOf(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('memory driver: call and cast', () => {
  it('delivers a call with its context and args and resolves with the reply result', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    await echoServer(server, topic);
    const result = await client.send(new Target({ topic }), { user: 'u1', roles: ['a'] }, { method: 'echo', args: { x: [1, 'a'] } }, call);
    expect(result).toEqual({ echo: { x: [1, 'a'] }, ctx: { user: 'u1', roles: ['a'], client_timeout: null }, method: 'echo', server: 'host-1' });
  });

  it('hands the server the message without wire keys and with the envelope fields removed', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const seen = record(await server.listen(new Target({ topic, server: 's' })), (m) => m.reply({ result: null }));
    await client.send(new Target({ topic, namespace: 'ns', version: '1.2' }), { u: 1 }, { method: 'm', args: { a: 1 }, namespace: 'ns', version: '1.2' }, call);
    const m = seen.messages[0];
    expect(m.request).toEqual({ method: 'm', args: { a: 1 }, namespace: 'ns', version: '1.2' });
    expect(m.ctx).toEqual({ u: 1, client_timeout: null });
    expect(m.expectsReply).toBe(true);
    expect(m.callMonitorTimeout).toBeUndefined();
    expect(m.msgId).toMatch(/^[0-9a-f]{32}$/);
  });

  it('resolves a call whose result is null, and fills in missing args with {}', async () => {
    const { client, server, vhost } = makePair();
    const topic = uniqueName();
    const seen = record(await server.listen(new Target({ topic, server: 's' })), (m) => m.reply({ result: undefined }));
    expect(await client.send(new Target({ topic }), {}, { method: 'm', args: {} }, call)).toBeNull();
    getMemoryBroker(vhost).publishRaw('openstack', topic, JSON.stringify({ method: 'noargs' }));
    await waitFor(() => seen.messages.length === 2);
    expect(seen.messages[1].request).toEqual({ method: 'noargs', args: {}, namespace: undefined, version: '1.0' });
    expect(seen.messages[1].expectsReply).toBe(false);
  });

  it('resolves a cast once accepted, and the server gets it without expecting a reply', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const seen = record(await server.listen(new Target({ topic, server: 's' })));
    await expect(client.send(new Target({ topic }), {}, { method: 'ping', args: { n: 1 } })).resolves.toBeUndefined();
    await waitFor(() => seen.messages.length === 1);
    expect(seen.messages[0].expectsReply).toBe(false);
    await seen.messages[0].reply({ result: 1 }); // a no-op for casts, must not throw
  });

  it('round-robins calls on a topic between two servers', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const a = await echoServer(server, topic, 'a');
    const b = await echoServer(server, topic, 'b');
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => client.send(new Target({ topic }), {}, { method: 'm', args: { i } }, call)));
    const servers = results.map((r) => (r as { server: string }).server);
    expect(servers.filter((s) => s === 'a')).toHaveLength(5);
    expect(servers.filter((s) => s === 'b')).toHaveLength(5);
    expect(a.messages.length + b.messages.length).toBe(10);
  });

  it('sends a server-targeted call only to that server', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const a = await echoServer(server, topic, 'a');
    const b = await echoServer(server, topic, 'b');
    for (let i = 0; i < 4; i++) {
      expect(await client.send(new Target({ topic, server: 'b' }), {}, { method: 'm', args: {} }, call)).toMatchObject({ server: 'b' });
    }
    expect(a.messages).toHaveLength(0);
    expect(b.messages).toHaveLength(4);
  });

  it('copies a fanout cast to every server of the topic, and refuses a fanout call', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const a = record(await server.listen(new Target({ topic, server: 'a' })));
    const b = record(await server.listen(new Target({ topic, server: 'b' })));
    const other = record(await server.listen(new Target({ topic: uniqueName(), server: 'a' })));
    await client.send(new Target({ topic, fanout: true }), {}, { method: 'refresh', args: {} });
    await waitFor(() => a.messages.length === 1 && b.messages.length === 1);
    expect(other.messages).toHaveLength(0);
    await expect(client.send(new Target({ topic, fanout: true }), {}, { method: 'm', args: {} }, call)).rejects.toBeInstanceOf(InvalidTarget);
  });

  it('isolates exchanges: a call on another exchange does not reach the server', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    await echoServer(server, topic, 'a', 'nova');
    expect(await client.send(new Target({ topic, exchange: 'nova' }), {}, { method: 'm', args: {} }, call)).toMatchObject({ server: 'a' });
    await expect(client.send(new Target({ topic }), {}, { method: 'm', args: {} }, { waitForReply: true, timeout: 100 })).rejects.toBeInstanceOf(MessagingTimeout);
  });

  it('keeps isolated virtual hosts apart', async () => {
    const one = makePair();
    const two = makePair();
    const topic = uniqueName();
    await echoServer(one.server, topic);
    await expect(two.client.send(new Target({ topic }), {}, { method: 'm', args: {} }, { waitForReply: true, timeout: 100 })).rejects.toBeInstanceOf(MessagingTimeout);
    await expect(one.client.send(new Target({ topic }), {}, { method: 'm', args: {} }, call)).resolves.toMatchObject({ method: 'm' });
  });

  it('sends one final reply per call: a second reply and later heartbeats are ignored', async () => {
    const logger = createMemoryLogger();
    const { client, server } = makePair({ logger });
    const topic = uniqueName();
    record(await server.listen(new Target({ topic, server: 's' })), async (m) => {
      await m.reply({ result: 'first' });
      await m.reply({ result: 'second' });
      await m.heartbeat();
      await m.acknowledge();
      await m.requeue();
    });
    await expect(client.send(new Target({ topic }), {}, { method: 'm', args: {} }, call)).resolves.toBe('first');
    await waitFor(() => logger.records.some((r) => r.level === 'warn' && /second final reply/.test(r.msg)));
  });

  it('accepts the retry option (memory never loses its connection)', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    await echoServer(server, topic);
    await expect(client.send(new Target({ topic }), {}, { method: 'm', args: {} }, { ...call, retry: 0 })).resolves.toMatchObject({ method: 'm' });
    await expect(client.send(new Target({ topic }), {}, { method: 'm', args: {} }, { retry: 3 })).resolves.toBeUndefined();
  });

  it('requires a topic', async () => {
    const { client } = makePair();
    await expect(client.send(new Target({}), {}, { method: 'm', args: {} })).rejects.toBeInstanceOf(InvalidTarget);
  });
});

describe('memory driver: timeouts, abort, call-monitor', () => {
  it('times out a call to a topic without servers with MessagingTimeout naming the topic', async () => {
    const { client } = makePair();
    const topic = uniqueName();
    const started = performance.now();
    const err = await rejectionOf(client.send(new Target({ topic }), {}, { method: 'm', args: {} }, { waitForReply: true, timeout: 200 }));
    expect(err).toBeInstanceOf(MessagingTimeout);
    expect(err.message).toContain(topic);
    expect(err.message).toContain('200 ms');
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it('drops a reply that arrives after the timeout, with a debug log', async () => {
    const logger = createMemoryLogger();
    const { client, server } = makePair({ logger });
    const topic = uniqueName();
    const release = deferred();
    const seen = record(await server.listen(new Target({ topic, server: 's' })), async (m) => {
      await release.promise;
      await m.reply({ result: 'late' });
    });
    await expect(client.send(new Target({ topic }), {}, { method: 'slow', args: {} }, { waitForReply: true, timeout: 100 })).rejects.toBeInstanceOf(MessagingTimeout);
    release.resolve();
    await waitFor(() => seen.messages.length === 1);
    await waitFor(() => logger.records.some((r) => r.level === 'debug' && /No calling threads waiting/.test(r.msg)));
    // The driver still works for the next call.
    const next = record(await server.listen(new Target({ topic: `${topic}-2`, server: 's' })), (m) => m.reply({ result: 'ok' }));
    await expect(client.send(new Target({ topic: `${topic}-2` }), {}, { method: 'm', args: {} }, call)).resolves.toBe('ok');
    expect(next.messages).toHaveLength(1);
  });

  it('rejects with AbortError when the signal aborts, and at once for an aborted signal', async () => {
    const { client } = makePair();
    const topic = uniqueName();
    const ac = new AbortController();
    const pending = client.send(new Target({ topic }), {}, { method: 'm', args: {} }, { waitForReply: true, timeout: 10_000, signal: ac.signal });
    setTimeout(() => ac.abort(), 20);
    await expect(pending).rejects.toBeInstanceOf(AbortError);
    await expect(client.send(new Target({ topic }), {}, { method: 'm', args: {} }, { waitForReply: true, signal: ac.signal })).rejects.toBeInstanceOf(AbortError);
  });

  it('sends the call-monitor window in seconds on the wire and in ms to the server', async () => {
    const { client, server, vhost } = makePair();
    const topic = uniqueName();
    const seen = record(await server.listen(new Target({ topic, server: 's' })), (m) => m.reply({ result: m.callMonitorTimeout }));
    const broker = getMemoryBroker(vhost);
    // Watch the raw wire with our own queue bound to the topic on the exchange.
    broker.declareQueue('spy');
    broker.bindQueue('spy', 'openstack', topic);
    await expect(client.send(new Target({ topic }), {}, { method: 'm', args: {} }, { waitForReply: true, timeout: 5000, callMonitorTimeout: 1500 })).resolves.toBe(1500);
    expect(seen.messages[0].callMonitorTimeout).toBe(1500);
    const wire = await new Promise<string>((resolve) => broker.consume('spy', (d) => resolve(d.body)));
    const inner = decodeBody(wire);
    expect(inner._timeout).toBe(1.5);
    expect(inner._reply_q).toMatch(/^reply_[0-9a-f]{32}$/);
  });

  it('keeps a call alive past the call-monitor window while heartbeats arrive', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    record(await server.listen(new Target({ topic, server: 's' })), async (m: RpcIncomingMessage) => {
      for (let i = 0; i < 20; i++) {
        await new Promise((r) => setTimeout(r, 30));
        await m.heartbeat();
      }
      await m.reply({ result: 'done' });
    });
    await expect(client.send(new Target({ topic }), {}, { method: 'm', args: {} }, { waitForReply: true, timeout: 10_000, callMonitorTimeout: 300 })).resolves.toBe('done');
  });

  it('fails a call with MessagingTimeout when no heartbeat arrives within the call-monitor window', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const release = deferred();
    record(await server.listen(new Target({ topic, server: 's' })), async (m) => {
      await release.promise;
      await m.reply({ result: 'too late' });
    });
    const started = performance.now();
    const err = await rejectionOf(client.send(new Target({ topic }), {}, { method: 'm', args: {} }, { waitForReply: true, timeout: 20_000, callMonitorTimeout: 150 }));
    release.resolve();
    expect(err).toBeInstanceOf(MessagingTimeout);
    expect(err.message).toContain(topic);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('applies the overall timeout even while heartbeats arrive', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    let beating = true;
    record(await server.listen(new Target({ topic, server: 's' })), async (m) => {
      while (beating) {
        await m.heartbeat();
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    const err = await rejectionOf(client.send(new Target({ topic }), {}, { method: 'm', args: {} }, { waitForReply: true, timeout: 300, callMonitorTimeout: 200 }));
    beating = false;
    expect(err).toBeInstanceOf(MessagingTimeout);
    expect(err.message).toContain('300 ms');
  });
});

describe('memory driver: remote errors', () => {
  class QuotaExceeded extends Error {
    static remoteModule = 'myapp.errors';
    constructor(readonly resource: string) {
      super(`quota exceeded for ${resource}`);
    }
  }

  async function failingServer(server: ReturnType<typeof makePair>['server'], topic: string, error: unknown) {
    record(await server.listen(new Target({ topic, server: 's' })), (m) => m.reply({ failure: error }));
  }

  it('rebuilds a JS built-in error on the caller', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    await failingServer(server, topic, new TypeError('bad input'));
    const err = await rejectionOf(client.send(new Target({ topic }), {}, { method: 'm', args: {} }, call));
    expect(err).toBeInstanceOf(TypeError);
    expect(err.message).toBe('bad input');
    expect(remoteOrigin(err)).toMatchObject({ module: 'builtins', className: 'TypeError' });
  });

  it('rebuilds an application error only when its module is allowed, RemoteError otherwise', async () => {
    const registry: RemoteErrorRegistry = defaultRemoteErrorRegistry.clone().register('myapp.errors', QuotaExceeded, (i) => new QuotaExceeded(String(i.args[0] ?? '')));
    const vhostPair = makePair({ allowedRemoteExmods: ['myapp.errors'], remoteErrors: registry });
    const topic = uniqueName();
    const quota = Object.assign(new QuotaExceeded('cores'), { args: ['cores'] });
    await failingServer(vhostPair.server, topic, quota);
    const allowed = await rejectionOf(vhostPair.client.send(new Target({ topic }), {}, { method: 'm', args: {} }, call));
    expect(allowed).toBeInstanceOf(QuotaExceeded);
    expect(allowed.resource).toBe('cores');

    const denied = makePair({ remoteErrors: registry });
    const topic2 = uniqueName();
    await failingServer(denied.server, topic2, quota);
    const err = await rejectionOf(denied.client.send(new Target({ topic: topic2 }), {}, { method: 'm', args: {} }, call));
    expect(err).toBeInstanceOf(RemoteError);
    expect(err.excType).toBe('QuotaExceeded');
    expect(err.module).toBe('myapp.errors');
    expect(err.value).toBe('quota exceeded for cores');
  });

  it('replies with a failure (the caller does not hang) when the result cannot be JSON-encoded', async () => {
    const logger = createMemoryLogger();
    const { client, server } = makePair({ logger });
    const topic = uniqueName();
    record(await server.listen(new Target({ topic, server: 's' })), (m) => m.reply({ result: { n: 10n } }));
    const err = await rejectionOf(client.send(new Target({ topic }), {}, { method: 'm', args: {} }, call));
    // tidings' own InvalidArgument is rebuilt (dispatcher module): it names the failing field.
    expect(err).toBeInstanceOf(InvalidArgument);
    expect(err).toMatchObject({ field: 'result' });
    expect(err.message).toContain('JSON-serialisable');
    expect(logger.records.some((r) => r.level === 'error' && /not JSON-serialisable/.test(r.msg))).toBe(true);
  });
});

describe('memory driver: JSON wire', () => {
  it('rejects a payload JSON cannot carry with InvalidArgument and queues nothing', async () => {
    const { client, server, vhost } = makePair();
    const topic = uniqueName();
    getMemoryBroker(vhost).declareQueue(topic);
    getMemoryBroker(vhost).declareExchange('openstack');
    getMemoryBroker(vhost).bindQueue(topic, 'openstack', topic);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const big = await rejectionOf(client.send(new Target({ topic }), {}, { method: 'm', args: { n: 1n } }));
    expect(big).toBeInstanceOf(InvalidArgument);
    expect(big.field).toBe('message');
    await expect(client.send(new Target({ topic }), {}, { method: 'm', args: { cyclic } }, call)).rejects.toBeInstanceOf(InvalidArgument);
    const badCtx = await rejectionOf(client.send(new Target({ topic }), { n: 1n }, { method: 'm', args: {} }));
    expect(badCtx).toBeInstanceOf(InvalidArgument);
    expect(badCtx.field).toBe('context');
    expect(getMemoryBroker(vhost).queueDepth(topic)).toBe(0);
    void server;
  });

  it('drops undefined values and functions exactly as JSON does', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const seen = record(await server.listen(new Target({ topic, server: 's' })), (m) => m.reply({ result: m.request.args }));
    const result = await client.send(new Target({ topic }), { gone: undefined, kept: 1 }, { method: 'm', args: { a: undefined, f: () => 1, d: new Date(0), arr: [undefined] } }, call);
    expect(result).toEqual({ d: '1970-01-01T00:00:00.000Z', arr: [null] });
    expect(seen.messages[0].ctx).toEqual({ kept: 1, client_timeout: null });
  });
});

describe('memory driver: cleanup', () => {
  it('rejects pending calls on cleanup, and every later method with InvalidState', async () => {
    const { client } = makePair();
    const topic = uniqueName();
    const pending = client.send(new Target({ topic }), {}, { method: 'm', args: {} }, { waitForReply: true, timeout: 60_000 });
    await client.cleanup();
    await expect(pending).rejects.toBeInstanceOf(MessageDeliveryFailure);
    await client.cleanup(); // idempotent
    await expect(client.send(new Target({ topic }), {}, { method: 'm', args: {} })).rejects.toBeInstanceOf(InvalidState);
    await expect(client.sendNotification(new Target({ topic: `${topic}.info` }), {}, {})).rejects.toBeInstanceOf(InvalidState);
    await expect(client.listen(new Target({ topic, server: 's' }))).rejects.toBeInstanceOf(InvalidState);
    await expect(client.listenForNotifications([[new Target({ topic }), 'info']])).rejects.toBeInstanceOf(InvalidState);
  });

  it('deletes its reply queue and its listeners\' fanout queues on cleanup', async () => {
    const { client, server, vhost } = makePair();
    const topic = uniqueName();
    await echoServer(server, topic);
    await client.send(new Target({ topic }), {}, { method: 'm', args: {} }, call);
    const broker = getMemoryBroker(vhost);
    expect(broker.queueNames().filter((q) => q.startsWith('reply_'))).toHaveLength(1);
    expect(broker.queueNames().filter((q) => q.startsWith(`${topic}_fanout_`))).toHaveLength(1);
    await client.cleanup();
    await server.cleanup();
    expect(broker.queueNames().filter((q) => q.startsWith('reply_') || q.includes('_fanout_'))).toEqual([]);
    // Shared queues outlive their consumers, as on RabbitMQ.
    expect(broker.hasQueue(topic)).toBe(true);
  });
});
