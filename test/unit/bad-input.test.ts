// Bad input over memory://: every mistake fails with the right tidings error, names the
// field, leaks no password, sends nothing, and never takes a server or listener down.
import { afterEach, describe, expect, it } from 'vitest';
import {
  createMemoryLogger,
  getBatchNotificationListener,
  getNotificationListener,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  InvalidArgument,
  InvalidTarget,
  InvalidTransportURL,
  NoSuchMethod,
  NotificationResult,
  Notifier,
  Target,
  UnsupportedVersion,
  type Context,
  type MemoryLogger,
  type Transport,
} from '../../src/index.js';
import { getMemoryBroker } from '../../src/drivers/memory/index.js';
import { expectFailure, type Startable } from '../../src/testing/harness.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.reverse().splice(0)) await close();
});

async function setup(logger?: MemoryLogger) {
  const vhost = uniqueName('bad');
  const url = `memory:///${vhost}`;
  const rpc = await getRpcTransport(url, logger ? { logger } : {});
  const notif = await getNotificationTransport(url, logger ? { logger } : {});
  closers.push(() => rpc.cleanup(), () => notif.cleanup());
  return { vhost, rpc, notif, broker: getMemoryBroker(vhost) };
}

async function start<S extends Startable>(s: S): Promise<S> {
  await s.start();
  closers.push(async () => {
    await s.stop();
    await s.wait();
  });
  return s;
}

function countingServer(rpc: Transport, topic: string, calls: Array<{ method: string; args: unknown }>) {
  return start(
    getRpcServer(rpc, new Target({ topic, server: 's1' }), [
      {
        echo(_ctx: Context, args: unknown) {
          calls.push({ method: 'echo', args });
          return args;
        },
        boom() {
          calls.push({ method: 'boom', args: undefined });
          throw new Error('boom');
        },
      },
    ]),
  );
}

describe('invalid transport URLs', () => {
  const SECRET = 's3cr3t-pw';
  for (const [what, url] of [
    ['no scheme', `guest:${SECRET}@localhost:5672`],
    ['a bad port', `rabbit://guest:${SECRET}@localhost:99999/`],
    ['a non-numeric port', `rabbit://guest:${SECRET}@localhost:abc/`],
    ['an unknown scheme', `bogus://guest:${SECRET}@localhost:5672/`],
  ] as const) {
    it(`${what} fails with InvalidTransportURL and never shows the password`, async () => {
      for (const get of [getRpcTransport, getNotificationTransport]) {
        const err = await expectFailure(() => get(url), InvalidTransportURL);
        expect(err.message).not.toContain(SECRET);
        expect(String(err.stack)).not.toContain(SECRET);
      }
    });
  }

  it('an unknown memory:// option fails with InvalidTransportURL', async () => {
    await expectFailure(() => getRpcTransport('memory:///x?no_such_option=1'), InvalidTransportURL);
  });
});

describe('invalid targets', () => {
  it('a client target without a topic fails with InvalidTarget', async () => {
    const { rpc } = await setup();
    await expectFailure(() => getRpcClient(rpc, {}).call({}, 'echo', {}), InvalidTarget);
    await expectFailure(() => getRpcClient(rpc, {}).cast({}, 'echo', {}), InvalidTarget);
  });

  it('a server target without a topic or without a server fails with InvalidTarget', async () => {
    const { rpc } = await setup();
    await expectFailure(() => getRpcServer(rpc, new Target({ server: 's1' }), [{}]).start(), InvalidTarget);
    await expectFailure(() => getRpcServer(rpc, new Target({ topic: uniqueName() }), [{}]).start(), InvalidTarget);
  });

  it('a listener target without a topic fails with InvalidTarget', async () => {
    const { notif } = await setup();
    await expectFailure(() => getNotificationListener(notif, [new Target({})], [{ info() {} }]).start(), InvalidTarget);
    await expectFailure(() => getBatchNotificationListener(notif, [new Target({})], [{ info() {} }], { batchSize: 10, batchTimeout: 100 }).start(), InvalidTarget);
  });

  it('call with fanout fails with InvalidTarget and sends nothing', async () => {
    const { rpc } = await setup();
    const topic = uniqueName();
    const calls: Array<{ method: string; args: unknown }> = [];
    await countingServer(rpc, topic, calls);
    const client = getRpcClient(rpc, { topic }, { timeout: 5000 });
    await expectFailure(() => client.prepare({ fanout: true }).call({}, 'echo', { n: 1 }), InvalidTarget);
    await expectFailure(() => getRpcClient(rpc, { topic, fanout: true }).call({}, 'echo', { n: 1 }), InvalidTarget);
    await expect(client.call({}, 'echo', { n: 2 })).resolves.toEqual({ n: 2 });
    expect(calls).toEqual([{ method: 'echo', args: { n: 2 } }]);
  });
});

describe('arguments that are not JSON', () => {
  it('BigInt and cyclic args fail with InvalidArgument and nothing is sent', async () => {
    const { rpc } = await setup();
    const topic = uniqueName();
    const calls: Array<{ method: string; args: unknown }> = [];
    await countingServer(rpc, topic, calls);
    const client = getRpcClient(rpc, { topic }, { timeout: 5000 });
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    for (const args of [{ big: 10n }, cyclic, { nested: { fn: () => 1 } }]) {
      await expectFailure(() => client.call({}, 'echo', args as never), InvalidArgument);
      await expectFailure(() => client.cast({}, 'echo', args as never), InvalidArgument);
    }
    await expectFailure(() => client.call({ big: 1n } as never, 'echo', {}), InvalidArgument);
    // A good call afterwards is the only thing the server ever saw.
    await expect(client.call({}, 'echo', { ok: true })).resolves.toEqual({ ok: true });
    expect(calls).toEqual([{ method: 'echo', args: { ok: true } }]);
  });

  it('a notification payload that is not JSON fails with InvalidArgument and nothing is sent', async () => {
    const { notif } = await setup();
    const topic = uniqueName();
    const got: unknown[] = [];
    await start(getNotificationListener(notif, [new Target({ topic })], [{ info: (_c: unknown, _p: unknown, _e: unknown, payload: unknown) => void got.push(payload) }]));
    const notifier = new Notifier(notif, { publisherId: 'p', driver: 'messagingv2', topics: [topic] } as never);
    await expectFailure(() => notifier.info({}, 'ev', { big: 1n } as never), InvalidArgument);
    await notifier.info({}, 'ev', { ok: 1 });
    await waitFor(() => got.length === 1);
    expect(got).toEqual([{ ok: 1 }]);
  });
});

describe('dispatch errors', () => {
  it('an unknown method fails with NoSuchMethod; a wrong version with UnsupportedVersion', async () => {
    const { rpc } = await setup();
    const topic = uniqueName();
    await countingServer(rpc, topic, []);
    const client = getRpcClient(rpc, { topic }, { timeout: 5000 });
    const nsm = await expectFailure(() => client.call({}, 'nope', {}), NoSuchMethod);
    expect(nsm.method).toBe('nope');
    const uv = await expectFailure(() => client.prepare({ version: '2.0' }).call({}, 'echo', {}), UnsupportedVersion);
    expect(uv.version).toBe('2.0');
  });

  it('a handler that throws never kills the server', async () => {
    const { rpc } = await setup();
    const topic = uniqueName();
    const calls: Array<{ method: string; args: unknown }> = [];
    await countingServer(rpc, topic, calls);
    const client = getRpcClient(rpc, { topic }, { timeout: 5000 });
    for (let i = 0; i < 3; i++) {
      await expectFailure(() => client.call({}, 'boom', {}), Error);
      await client.cast({}, 'boom', {});
      await expect(client.call({}, 'echo', { i })).resolves.toEqual({ i });
    }
    await waitFor(() => calls.filter((c) => c.method === 'boom').length === 6);
  });
});

describe('bad option values', () => {
  it('a negative or non-numeric timeout fails with InvalidArgument naming the field', async () => {
    const { rpc } = await setup();
    const topic = uniqueName();
    for (const timeout of [-1, Number.NaN, '100' as never]) {
      const err = await expectFailure(() => getRpcClient(rpc, { topic }, { timeout }).call({}, 'echo', {}), InvalidArgument);
      expect(err.field).toMatch(/timeout/);
      const perCall = await expectFailure(() => getRpcClient(rpc, { topic }).call({}, 'echo', {}, { timeout }), InvalidArgument);
      expect(perCall.field).toMatch(/timeout/);
    }
    const prep = await expectFailure(() => getRpcClient(rpc, { topic }).prepare({ timeout: -5 }).call({}, 'echo', {}), InvalidArgument);
    expect(prep.field).toMatch(/timeout/);
  });

  it('executorSize 0 fails with InvalidArgument naming the field', async () => {
    const { rpc, notif } = await setup();
    const err = await expectFailure(() => getRpcServer(rpc, new Target({ topic: uniqueName(), server: 's' }), [{}], { executorSize: 0 }).start(), InvalidArgument);
    expect(err.field).toMatch(/executorSize/);
    expect(err.received).toBe(0);
    const lerr = await expectFailure(() => getNotificationListener(notif, [new Target({ topic: uniqueName() })], [{ info() {} }], { executorSize: 0 }).start(), InvalidArgument);
    expect(lerr.field).toMatch(/executorSize/);
  });

  it('batchSize 0 and a negative batchTimeout fail with InvalidArgument naming the field', async () => {
    const { notif } = await setup();
    const target = [new Target({ topic: uniqueName() })];
    const size = await expectFailure(() => getBatchNotificationListener(notif, target, [{ info() {} }], { batchSize: 0, batchTimeout: 100 }).start(), InvalidArgument);
    expect(size.field).toMatch(/batchSize/);
    const time = await expectFailure(() => getBatchNotificationListener(notif, target, [{ info() {} }], { batchSize: 10, batchTimeout: -1 }).start(), InvalidArgument);
    expect(time.field).toMatch(/batchTimeout/);
  });

  it('a bad version string fails with InvalidArgument naming the field', async () => {
    const { rpc } = await setup();
    const err = await expectFailure(() => getRpcClient(rpc, { topic: uniqueName() }).prepare({ version: 'one' }).call({}, 'echo', {}), InvalidArgument);
    expect(err.field).toMatch(/version/);
  });
});

describe('malformed messages', () => {
  const MARKER = 'PAYLOAD-MARKER-must-not-be-logged';

  it('an RPC server rejects and logs a malformed message, then keeps serving', async () => {
    const logger = createMemoryLogger();
    const { rpc, broker } = await setup(logger);
    const topic = uniqueName();
    const calls: Array<{ method: string; args: unknown }> = [];
    await countingServer(rpc, topic, calls);
    const client = getRpcClient(rpc, { topic }, { timeout: 5000 });
    await expect(client.call({}, 'echo', { n: 0 })).resolves.toEqual({ n: 0 });
    const bodies = [
      `{not json ${MARKER}`,
      JSON.stringify({ 'oslo.version': '9.9', 'oslo.message': JSON.stringify({ method: 'echo', args: { m: MARKER } }) }),
      JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': `not json either ${MARKER}` }),
      JSON.stringify([MARKER]),
      JSON.stringify({ args: { m: MARKER } }),
    ];
    for (const body of bodies) expect(broker.publishRaw('openstack', topic, body)).toBeGreaterThan(0);
    await waitFor(() => logger.records.filter((r) => r.level === 'warn' || r.level === 'error').length >= bodies.length, {
      timeoutMs: 5000,
      message: 'each malformed message logged',
    });
    await expect(client.call({}, 'echo', { n: 1 })).resolves.toEqual({ n: 1 });
    expect(calls).toEqual([
      { method: 'echo', args: { n: 0 } },
      { method: 'echo', args: { n: 1 } },
    ]);
    expect(JSON.stringify(logger.records)).not.toContain(MARKER);
    // Rejected, not requeued: nothing is left in the queue.
    expect(broker.queueDepth(topic)).toBe(0);
  });

  it('a notification listener rejects and logs a malformed message, then keeps serving', async () => {
    const logger = createMemoryLogger();
    const { notif, broker } = await setup(logger);
    const topic = uniqueName();
    const got: unknown[] = [];
    await start(
      getNotificationListener(
        notif,
        [new Target({ topic })],
        [
          {
            info(_ctx: unknown, _pub: unknown, _ev: unknown, payload: unknown) {
              got.push(payload);
              return NotificationResult.HANDLED;
            },
          },
        ],
        { allowRequeue: true },
      ),
    );
    const bodies = [`{oops ${MARKER}`, JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': `{${MARKER}` }), JSON.stringify(MARKER)];
    for (const body of bodies) expect(broker.publishRaw('openstack', `${topic}.info`, body)).toBeGreaterThan(0);
    await waitFor(() => logger.records.filter((r) => r.level === 'warn' || r.level === 'error').length >= bodies.length, {
      timeoutMs: 5000,
      message: 'each malformed notification logged',
    });
    await new Notifier(notif, { publisherId: 'p', driver: 'messagingv2', topics: [topic] } as never).info({}, 'ev', { ok: 1 });
    await waitFor(() => got.length === 1, { timeoutMs: 5000 });
    expect(got).toEqual([{ ok: 1 }]);
    expect(JSON.stringify(logger.records)).not.toContain(MARKER);
    expect(broker.queueDepth(`${topic}.info`)).toBe(0);
  });
});
