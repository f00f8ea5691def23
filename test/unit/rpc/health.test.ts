// Health and discovery on memory://: RpcClient.ping()/discover(), the ping endpoint's detail and
// default, transport.health() and its redacted lastError.
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidArgument, MessagingTimeout, NotSupportedError } from '../../../src/core/errors.js';
import { getRpcClient } from '../../../src/rpc/client.js';
import { PING_METHOD, RpcDispatcher } from '../../../src/rpc/dispatcher.js';
import { RPC_SERVER_DEFAULTS } from '../../../src/rpc/server.js';
import { ExplicitRpcAccessPolicy } from '../../../src/rpc/access-policy.js';
import { RPC_DISCOVER_DEFAULTS } from '../../../src/rpc/discovery.js';
import { createHarness, type Harness } from './harness.js';

let h: Harness;
afterEach(async () => {
  await h?.cleanup();
});

describe('RpcClient.ping()', () => {
  it('answers out of the box: rpcPingEnabled defaults to true, even with an explicit access policy', async () => {
    h = createHarness();
    expect(RPC_SERVER_DEFAULTS.rpcPingEnabled).toBe(true);
    const server = await h.server([{ hi: () => 'hi' }], { server: 'one', accessPolicy: new ExplicitRpcAccessPolicy() });
    expect(server.dispatcher.endpoints).toHaveLength(2);
    const client = getRpcClient(await h.transport(), { topic: h.topic, namespace: 'elsewhere', version: '7.3' }, { timeout: 5000 });
    // The ping goes to the default namespace and version whatever the client's target says.
    expect(await client.ping()).toBeGreaterThanOrEqual(0);
    expect(await client.ping({ server: 'one', timeout: 5000 })).toBeGreaterThanOrEqual(0);
    // oslo's answer is unchanged for oslo callers.
    expect(await client.prepare({ namespace: null, version: null }).call({}, PING_METHOD, {})).toBe('pong');
  });

  it('a server without the endpoint: NotSupportedError naming rpcPingEnabled; no server: MessagingTimeout', async () => {
    h = createHarness();
    await h.server([{ hi: () => 'hi' }], { server: 'quiet', rpcPingEnabled: false });
    const client = getRpcClient(await h.transport(), { topic: h.topic }, { timeout: 5000 });
    const err = await client.ping({ server: 'quiet' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotSupportedError);
    expect((err as Error).message).toMatch(/Server quiet of topic .* has no oslo_rpc_server_ping endpoint: start it with rpcPingEnabled: true/);
    await expect(client.ping({ server: 'nobody', timeout: 50 })).rejects.toBeInstanceOf(MessagingTimeout);
  });

  it('validates its options before sending', async () => {
    h = createHarness();
    const client = getRpcClient(await h.transport(), { topic: h.topic });
    await expect(client.ping({ timeout: 0 })).rejects.toThrow(/timeout/);
    await expect(client.ping({ server: '' })).rejects.toBeInstanceOf(InvalidArgument);
    await expect(client.ping(null as never)).rejects.toBeInstanceOf(InvalidArgument);
    await expect(client.discover({ windowMs: -1 })).rejects.toThrow(/windowMs/);
  });
});

describe('RpcClient.discover()', () => {
  it('lists the servers that answer within the window, sorted, with topic, host, pid and inFlight', async () => {
    h = createHarness();
    await h.server([{}], { server: 'b' });
    await h.server([{}], { server: 'a' });
    await h.server([{}], { server: 'no-ping', rpcPingEnabled: false });
    const client = getRpcClient(await h.transport(), { topic: h.topic, server: 'a' });
    const found = await client.discover({ windowMs: 200 });
    expect(found.map((s) => s.server)).toEqual(['a', 'b']);
    expect(found[0]).toEqual({ server: 'a', topic: h.topic, host: expect.any(String), pid: process.pid, inFlight: 0 });
    expect(RPC_DISCOVER_DEFAULTS.windowMs).toBe(1000);
  });

  it('inFlight counts the requests a server is running, not the ping it answers', async () => {
    h = createHarness();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const endpoint = { hold: async () => { started(); await held; return 'done'; } };
    await h.server([endpoint], { server: 'busy' });
    await h.server([endpoint], { server: 'idle' });
    const client = getRpcClient(await h.transport(), { topic: h.topic }, { timeout: 10_000 });
    const call = client.prepare({ server: 'busy' }).call({}, 'hold', {});
    await running;
    try {
      const found = await client.discover({ windowMs: 500 });
      expect(found.map((s) => [s.server, s.inFlight])).toEqual([['busy', 1], ['idle', 0]]);
    } finally {
      release();
    }
    await expect(call).resolves.toBe('done');
    expect((await client.discover({ windowMs: 500 })).map((s) => s.inFlight)).toEqual([0, 0]);
  });

  it('an aborted discovery rejects with AbortError', async () => {
    h = createHarness();
    const client = getRpcClient(await h.transport(), { topic: h.topic });
    const controller = new AbortController();
    const pending = client.discover({ windowMs: 10_000, signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });
});

describe('ping endpoint detail', () => {
  it('answers "pong" unless asked for detail and given a pingDetail', async () => {
    const plain = new RpcDispatcher([], { rpcPingEnabled: true });
    const detailed = new RpcDispatcher([], { rpcPingEnabled: true, pingDetail: () => ({ server: 's' }) });
    const ping = plain.endpoints[0] as Record<string, (ctx: unknown, args?: Record<string, unknown>) => unknown>;
    const ping2 = detailed.endpoints[0] as Record<string, (ctx: unknown, args?: Record<string, unknown>) => unknown>;
    expect(ping[PING_METHOD]({}, { detail: true })).toBe('pong');
    expect(ping2[PING_METHOD]({}, {})).toBe('pong');
    expect(ping2[PING_METHOD]({}, { detail: true })).toEqual({ server: 's' });
  });
});

describe('transport.health()', () => {
  it('memory:// is healthy until cleaned up; lastError keeps the message with URLs redacted and the time', async () => {
    h = createHarness();
    const t = await h.transport();
    expect(t.health()).toEqual({ connected: true, blocked: false, reconnecting: false });
    (t.driver as unknown as { noteConnectionError(err: unknown): void }).noteConnectionError(new Error('could not reach amqp://guest:s3cret@broker:5672/ (ECONNREFUSED)'));
    const health = t.health();
    expect(health.lastError?.message).toBe('could not reach amqp://guest:***@broker:5672/ (ECONNREFUSED)');
    expect(JSON.stringify(health)).not.toContain('s3cret');
    expect(Number.isNaN(Date.parse(health.lastError!.at))).toBe(false);
    await t.cleanup();
    expect(t.health()).toMatchObject({ connected: false, blocked: false, reconnecting: false });
  });
});
