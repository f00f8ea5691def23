// Conformance: RPC delivery: call/cast, targeted and round-robin routing, fanout, exchanges,
// concurrency and timeouts. rpc-dispatch.ts covers what comes back from the server side.
import { describe, expect, it } from 'vitest';
import {
  getRpcClient,
  getRpcServer,
  MessagingTimeout,
  Target,
  type Context,
  type Transport,
} from '../index.js';
import { waitFor } from './wait.js';
import { expectFailure, expectNotSupported, sendInRounds, since, started, type ConformanceEnv } from './harness.js';

/** Starts an RPC server on `topic`/`server` and registers its teardown. */
export function startServer(env: ConformanceEnv, transport: Transport, topic: string, server: string, endpoints: object[], options?: Record<string, unknown>) {
  return started(env, getRpcServer(transport, new Target({ topic, server }), endpoints, options as never));
}

/** Servers s1 and s2 of one new topic, recording which of them handled which id. */
async function twoRecordingServers(env: ConformanceEnv): Promise<{ t: Transport; topic: string; log: Array<{ server: string; id: unknown }> }> {
  const t = await env.rpcTransport();
  const topic = env.name('topic');
  const log: Array<{ server: string; id: unknown }> = [];
  await startServer(env, t, topic, 's1', [recorder('s1', log)]);
  await startServer(env, t, topic, 's2', [recorder('s2', log)]);
  return { t, topic, log };
}

/** Endpoint that records which server handled which call. */
function recorder(server: string, log: Array<{ server: string; id: unknown }>) {
  return {
    who(_ctx: Context, args: { id?: unknown }) {
      log.push({ server, id: args.id });
      return server;
    },
  };
}

export function rpcTests(env: ConformanceEnv): void {
  describe('call and cast', () => {
    it('call returns the result and the context reaches the endpoint', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      const seen: Array<{ ctx: Context; meta: unknown }> = [];
      await startServer(env, t, topic, 's1', [
        {
          echo(ctx: Context, args: Record<string, unknown>, meta: unknown) {
            seen.push({ ctx, meta });
            return { got: args };
          },
          add(_ctx: Context, args: { a: number; b: number }) {
            return args.a + args.b;
          },
          nothing() {
            return undefined;
          },
          async later(_ctx: Context, args: { v: string }) {
            await new Promise((r) => setTimeout(r, 5));
            return args.v;
          },
        },
      ]);
      const client = getRpcClient(t, { topic }, { timeout: env.ms(10_000) });
      const args = { s: 'héllo ✓', n: 1.5, b: true, nil: null, arr: [1, 'two', { three: 3 }], nested: { deep: { x: [] } } };
      const ctx = { user_id: 'u1', project_id: 'p1', request_id: 'req-1', roles: ['admin'] };
      await expect(client.call(ctx, 'echo', args)).resolves.toEqual({ got: args });
      expect(seen).toHaveLength(1);
      expect(seen[0].ctx).toMatchObject(ctx);
      expect(seen[0].meta).toMatchObject({ method: 'echo', version: '1.0', messageId: expect.any(String) });
      expect(seen[0].meta).not.toHaveProperty('namespace', expect.anything());
      await expect(client.call({}, 'add', { a: 2, b: 40 })).resolves.toBe(42);
      await expect(client.call({}, 'nothing', {})).resolves.toBeNull();
      await expect(client.call({}, 'later', { v: 'async' })).resolves.toBe('async');
    });

    it('cast runs the handler and resolves without a result', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      const hits: number[] = [];
      await startServer(env, t, topic, 's1', [
        {
          hit(_ctx: Context, args: { n: number }) {
            hits.push(args.n);
          },
        },
      ]);
      const client = getRpcClient(t, { topic });
      for (let n = 0; n < 5; n++) await expect(client.cast({}, 'hit', { n })).resolves.toBeUndefined();
      await waitFor(() => hits.length === 5, { timeoutMs: env.ms(10_000), message: '5 casts handled' });
      expect([...hits].sort()).toEqual([0, 1, 2, 3, 4]);
    });

    it('a cast to one named server reaches only that server', async () => {
      const { t, topic, log } = await twoRecordingServers(env);
      const client = getRpcClient(t, { topic }).prepare({ server: 's2' });
      for (let id = 0; id < 6; id++) await client.cast({}, 'who', { id });
      await waitFor(() => log.length === 6, { timeoutMs: env.ms(10_000), message: '6 casts handled' });
      expect(log.every((e) => e.server === 's2')).toBe(true);
    });

    it('a call to one named server is handled only by it', async () => {
      const { t, topic, log } = await twoRecordingServers(env);
      const client = getRpcClient(t, { topic }, { timeout: env.ms(10_000) });
      for (let id = 0; id < 10; id++) await expect(client.prepare({ server: 's2' }).call({}, 'who', { id })).resolves.toBe('s2');
      for (let id = 10; id < 14; id++) await expect(client.prepare({ server: 's1' }).call({}, 'who', { id })).resolves.toBe('s1');
      expect(log.filter((e) => e.server === 's2').map((e) => e.id)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(log.filter((e) => e.server === 's1').map((e) => e.id)).toEqual([10, 11, 12, 13]);
    });

    it('calls to a topic are shared round-robin between its servers, each handled exactly once', async () => {
      const { t, topic, log } = await twoRecordingServers(env);
      const client = getRpcClient(t, { topic }, { timeout: env.ms(10_000) });
      const N = 20;
      const replies: string[] = [];
      for (let id = 0; id < N; id++) replies.push((await client.call({}, 'who', { id })) as string);
      const s1 = log.filter((e) => e.server === 's1').length;
      const s2 = log.filter((e) => e.server === 's2').length;
      expect(s1, `s1 handled ${s1}, s2 handled ${s2}`).toBeGreaterThan(0);
      expect(s2, `s1 handled ${s1}, s2 handled ${s2}`).toBeGreaterThan(0);
      expect(s1 + s2).toBe(N);
      expect(log.map((e) => e.id).sort((a, b) => (a as number) - (b as number))).toEqual([...Array(N).keys()]);
      // Each reply names the server that logged that id.
      expect(replies).toEqual(log.sort((a, b) => (a.id as number) - (b.id as number)).map((e) => e.server));
    });

    it('casts to a topic are shared between its servers (sum exact, each > 0)', async () => {
      const { t, topic, log } = await twoRecordingServers(env);
      const client = getRpcClient(t, { topic });
      const N = await sendInRounds({
        send: (id) => client.cast({}, 'who', { id }),
        delivered: () => log.length,
        shared: () => new Set(log.map((e) => e.server)).size === 2,
        timeoutMs: env.ms(10_000),
        what: 'casts handled',
      });
      expect(log.filter((e) => e.server === 's1').length).toBeGreaterThan(0);
      expect(log.filter((e) => e.server === 's2').length).toBeGreaterThan(0);
      expect(new Set(log.map((e) => e.id)).size).toBe(N);
      expect(log).toHaveLength(N);
    });

    it('concurrent calls from two transports each get their own reply', async () => {
      const serverT = await env.rpcTransport();
      const clientA = await env.rpcTransport();
      const clientB = await env.rpcTransport();
      const topic = env.name('topic');
      await startServer(env, serverT, topic, 's1', [
        {
          async double(_ctx: Context, args: { n: number; delay: number }) {
            await new Promise((r) => setTimeout(r, args.delay));
            return args.n * 2;
          },
        },
      ], { executorSize: 64 });
      const a = getRpcClient(clientA, { topic }, { timeout: env.ms(20_000) });
      const b = getRpcClient(clientB, { topic }, { timeout: env.ms(20_000) });
      const N = 40;
      // Later calls finish first, so replies come back out of order.
      const results = await Promise.all(Array.from({ length: N }, (_, n) => (n % 2 ? a : b).call({}, 'double', { n, delay: (N - n) * 2 })));
      expect(results).toEqual(Array.from({ length: N }, (_, n) => n * 2));
    });

    it('a long call times out while short calls on the same client succeed', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      const release = env.gate();
      await startServer(env, t, topic, 's1', [
        {
          async long() {
            await release.promise;
            return 'long';
          },
          short(_ctx: Context, args: { n: number }) {
            return args.n;
          },
        },
      ]);
      const client = getRpcClient(t, { topic }, { timeout: env.ms(10_000) });
      const long = client.call({}, 'long', {}, { timeout: env.ms(1500) });
      long.catch(() => {});
      for (let n = 0; n < 5; n++) await expect(client.call({}, 'short', { n })).resolves.toBe(n);
      await expectFailure(() => long, MessagingTimeout);
      release.resolve();
      await expect(client.call({}, 'short', { n: 99 })).resolves.toBe(99);
    });

    it('a server on an exchange is reached through that exchange only', async () => {
      // Queues are named by topic alone (as in oslo), so exchanges separate routes, not queues:
      // a second server of the same topic on another exchange would share the queue.
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      const exchange = env.name('ex');
      const log: Array<{ server: string; id: unknown }> = [];
      await started(env, getRpcServer(t, new Target({ topic, server: 'a', exchange }), [recorder('a', log)]));
      await expect(getRpcClient(t, { topic, exchange }, { timeout: env.ms(10_000) }).call({}, 'who', { id: 1 })).resolves.toBe('a');
      await expect(getRpcClient(t, { topic, exchange, server: 'a' }, { timeout: env.ms(10_000) }).call({}, 'who', { id: 2 })).resolves.toBe('a');
      await expectFailure(() => getRpcClient(t, { topic }, { timeout: 500 }).call({}, 'who', { id: 3 }), MessagingTimeout);
      await expectFailure(() => getRpcClient(t, { topic, exchange: env.name('other') }, { timeout: 500 }).call({}, 'who', { id: 4 }), MessagingTimeout);
      expect(log.map((e) => e.id)).toEqual([1, 2]);
    });
  });

  describe('fanout', () => {
    if (env.caps.fanout) {
      it('a fanout cast reaches every server of the topic once', async () => {
        const t = await env.rpcTransport();
        const topic = env.name('topic');
        const other = env.name('other');
        const got: Record<string, number[]> = { s1: [], s2: [], s3: [], x: [] };
        const ep = (s: string) => ({
          fan(_ctx: Context, args: { n: number }) {
            got[s].push(args.n);
          },
        });
        for (const s of ['s1', 's2', 's3']) await startServer(env, t, topic, s, [ep(s)]);
        await startServer(env, t, other, 'x', [ep('x')]);
        const client = getRpcClient(t, { topic }).prepare({ fanout: true });
        await expect(client.cast({}, 'fan', { n: 1 })).resolves.toBeUndefined();
        await waitFor(() => ['s1', 's2', 's3'].every((s) => got[s].length >= 1), { timeoutMs: env.ms(10_000), message: 'fanout 1 reached all' });
        await client.cast({}, 'fan', { n: 2 });
        await waitFor(() => ['s1', 's2', 's3'].every((s) => got[s].length >= 2), { timeoutMs: env.ms(10_000), message: 'fanout 2 reached all' });
        // A duplicate of either cast would show up as a third entry; a server of another topic gets nothing.
        for (const s of ['s1', 's2', 's3']) expect(got[s]).toEqual([1, 2]);
        expect(got.x).toEqual([]);
      });
    } else {
      it('a fanout cast fails at once with NotSupportedError (no fanout capability)', async () => {
        const t = await env.rpcTransport();
        const topic = env.name('topic');
        await expectNotSupported(() => getRpcClient(t, { topic }).prepare({ fanout: true }).cast({}, 'fan', {}));
        await expectNotSupported(() => getRpcClient(t, { topic, fanout: true }).cast({}, 'fan', {}));
      });
    }
  });

  describe('timeouts', () => {
    it('a call to a topic with no server fails with MessagingTimeout near its timeout', async () => {
      const t = await env.rpcTransport();
      const client = getRpcClient(t, { topic: env.name('nobody') }, { timeout: 500 });
      const t0 = Date.now();
      const err = await expectFailure(() => client.call({}, 'anything', {}), MessagingTimeout);
      expect(err.retriable).toBe(true);
      const elapsed = since(t0);
      expect(elapsed).toBeGreaterThanOrEqual(400);
      expect(elapsed).toBeLessThan(env.ms(5000));
    });

    it('a per-call timeout overrides the client timeout', async () => {
      const t = await env.rpcTransport();
      const client = getRpcClient(t, { topic: env.name('nobody') }, { timeout: 60_000 });
      const t0 = Date.now();
      await expectFailure(() => client.call({}, 'anything', {}, { timeout: 300 }), MessagingTimeout);
      expect(since(t0)).toBeGreaterThanOrEqual(250);
      expect(since(t0)).toBeLessThan(env.ms(5000));
      const t1 = Date.now();
      await expectFailure(() => client.prepare({ timeout: 300 }).call({}, 'anything', {}), MessagingTimeout);
      expect(since(t1)).toBeLessThan(env.ms(5000));
    });

    it('a late reply after a timeout is dropped, never given to another call', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      const release = env.gate();
      let slowStarted = false;
      await startServer(env, t, topic, 's1', [
        {
          async slow() {
            slowStarted = true;
            await release.promise;
            return 'late';
          },
          fast(_ctx: Context, args: { v: number }) {
            return args.v;
          },
        },
      ]);
      const client = getRpcClient(t, { topic }, { timeout: env.ms(10_000) });
      await expectFailure(() => client.call({}, 'slow', {}, { timeout: 400 }), MessagingTimeout);
      expect(slowStarted).toBe(true);
      release.resolve();
      for (let v = 0; v < 5; v++) await expect(client.call({}, 'fast', { v })).resolves.toBe(v);
    });
  });

}

/** For a driver without the `rpc` capability: every RPC entry point fails at once. */
export function rpcNotSupportedTests(env: ConformanceEnv): void {
  describe('rpc (not supported)', () => {
    it('server start, call and cast fail at once with NotSupportedError (no rpc capability)', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      await expectNotSupported(async () => {
        const server = getRpcServer(t, new Target({ topic, server: 's1' }), [{ ping: () => 'pong' }]);
        await server.start();
        env.defer(async () => {
          await server.stop();
          await server.wait();
        });
      });
      const client = getRpcClient(t, { topic }, { timeout: env.ms(30_000) });
      await expectNotSupported(() => client.call({}, 'ping', {}));
      await expectNotSupported(() => client.cast({}, 'ping', {}));
    });
  });
}
