// Conformance for the issue 10 features that touch the wire: trace-context keys, schema refusals,
// server middleware refusals and listener middleware behave the same on every driver.
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import {
  defaultRemoteErrorRegistry,
  defineRpcContract,
  getRpcClient,
  implementContract,
  InvalidArgument,
  NotificationResult,
  RemoteError,
  type Context,
  type ListenerMiddleware,
  type Priority,
  type RpcServerMiddleware,
  type StandardSchemaV1,
} from '../index.js';
import { waitFor } from './wait.js';
import { expectFailure, type ConformanceEnv } from './harness.js';
import { startServer } from './rpc.js';
import { notifier, recordingEndpoint, startListener, type Seen } from './notify.js';

/** A context as an OpenTelemetry propagator leaves it: W3C keys next to the caller's own. */
function traceContext(): Context {
  return {
    traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`,
    tracestate: 'k=v',
    request_id: `req-${randomBytes(4).toString('hex')}`,
  };
}

/** A server's ctx without the `client_timeout` key oslo-compatible drivers add on receipt. */
function callerKeys(ctx: Context): Context {
  const copy = { ...ctx };
  delete copy.client_timeout;
  return copy;
}

/** `{n: number}` as a hand-written Standard Schema, so the suite depends on no schema library. */
const numberArgs: StandardSchemaV1<{ n: number }> = {
  '~standard': {
    version: 1,
    vendor: 'tidings-conformance',
    validate(value) {
      const n = (value as { n?: unknown } | null)?.n;
      return typeof n === 'number' ? { value: value as { n: number } } : { issues: [{ message: 'Expected number', path: ['n'] }] };
    },
  },
};

/** A refusal class an application would throw from a server middleware. */
class Refused extends Error {
  static readonly remoteModule = 'conformance.errors';
  override readonly name = 'Refused';
}

export function wireFeatureTests(env: ConformanceEnv): void {
  describe('wire features', () => {
    if (env.caps.rpc) rpcWireTests(env);
    notifyWireTests(env);
  });
}

function rpcWireTests(env: ConformanceEnv): void {
  it(`trace context keys reach the endpoint unchanged through a call, a cast${env.caps.fanout ? ' and a fanout cast' : ''}`, async () => {
    const serverT = await env.rpcTransport();
    const clientT = await env.rpcTransport();
    const topic = env.name('topic');
    const seen: Array<{ at: string; how: string; ctx: Context }> = [];
    const endpoint = (at: string) => ({
      see(ctx: Context, args: { how: string }) {
        seen.push({ at, how: args.how, ctx });
        return args.how;
      },
    });
    const servers = env.caps.fanout ? ['s1', 's2'] : ['s1'];
    for (const s of servers) await startServer(env, serverT, topic, s, [endpoint(s)]);
    const ctx = traceContext();
    const sent = structuredClone(ctx);
    const client = getRpcClient(clientT, { topic }, { timeout: env.ms(10_000) }).prepare({ server: 's1' });
    await expect(client.call(ctx, 'see', { how: 'call' })).resolves.toBe('call');
    await client.cast(ctx, 'see', { how: 'cast' });
    await waitFor(() => seen.some((s) => s.how === 'cast'), { timeoutMs: env.ms(10_000), message: 'the cast handled' });
    if (env.caps.fanout) {
      await getRpcClient(clientT, { topic }).prepare({ fanout: true }).cast(ctx, 'see', { how: 'fanout' });
      await waitFor(() => servers.every((s) => seen.some((e) => e.how === 'fanout' && e.at === s)), { timeoutMs: env.ms(10_000), message: 'the fanout cast reached every server' });
    }
    expect(seen.map((s) => `${s.how}@${s.at}`).sort()).toEqual(env.caps.fanout ? ['call@s1', 'cast@s1', 'fanout@s1', 'fanout@s2'] : ['call@s1', 'cast@s1']);
    for (const s of seen) expect(callerKeys(s.ctx), `${s.how} at ${s.at}`).toEqual(sent);
    expect(ctx, 'the caller keeps its context as it was').toEqual(sent);
  });

  it('a schema refusal comes back typed: the server refuses with InvalidArgument naming the field; a client contract refuses before sending', async () => {
    const serverT = await env.rpcTransport();
    const clientT = await env.rpcTransport();
    const topic = env.name('topic');
    const arrived: Array<{ method: string; args: unknown }> = [];
    const handled: Array<{ method: string; args: unknown }> = [];
    const record: RpcServerMiddleware = {
      before(inv) {
        arrived.push({ method: inv.method, args: inv.args });
      },
    };
    const checked = implementContract(defineRpcContract({ checked: { args: numberArgs } }), {
      checked(_ctx, args) {
        handled.push({ method: 'checked', args });
        return args.n * 2;
      },
    });
    // No schema on the server side: only the client's contract can keep a bad argument back.
    const unchecked = {
      unchecked(_ctx: Context, args: { n: unknown }) {
        handled.push({ method: 'unchecked', args });
        return args.n;
      },
    };
    await startServer(env, serverT, topic, 's1', [checked, unchecked], { middleware: [record] });

    const plain = getRpcClient(clientT, { topic }, { timeout: env.ms(10_000) });
    const remote = await expectFailure(() => plain.call({}, 'checked', { n: 'two' }), InvalidArgument);
    expect(remote.field).toBe('args.n');
    expect(remote.message).toMatch(/args\.n/);
    await expect(plain.call({}, 'checked', { n: 2 })).resolves.toBe(4);
    expect(handled).toEqual([{ method: 'checked', args: { n: 2 } }]);

    const contracted = getRpcClient(clientT, { topic }, { timeout: env.ms(10_000), contract: defineRpcContract({ unchecked: { args: numberArgs } }) });
    arrived.length = 0;
    handled.length = 0;
    for (const attempt of [() => contracted.call({}, 'unchecked', { n: 'x' } as never), () => contracted.cast({}, 'unchecked', { n: 'y' } as never)]) {
      const local = await expectFailure(attempt, InvalidArgument);
      expect(local.field).toBe('args.n');
      expect(local.message).toMatch(/args\.n/);
    }
    // A good call afterwards as a barrier: nothing of the refused ones reached the server.
    await expect(contracted.call({}, 'unchecked', { n: 7 })).resolves.toBe(7);
    expect(arrived).toEqual([{ method: 'unchecked', args: { n: 7 } }]);
    expect(handled).toEqual([{ method: 'unchecked', args: { n: 7 } }]);
  });

  it('a server middleware refusal reaches the caller typed, the endpoint never runs, and the server keeps answering', async () => {
    const serverT = await env.rpcTransport();
    const plainT = await env.rpcTransport();
    const rebuildingT = await env.rpcTransport({
      allowedRemoteExmods: [Refused.remoteModule],
      remoteErrors: defaultRemoteErrorRegistry.clone().register(Refused.remoteModule, Refused),
    });
    const topic = env.name('topic');
    const ran: string[] = [];
    const gatekeeper: RpcServerMiddleware = {
      before(inv) {
        if (inv.method === 'guarded') throw new Refused(`${inv.method}: refused by middleware`);
        if (inv.method === 'strict') throw new InvalidArgument('ctx.token', 'a token', undefined);
      },
    };
    await startServer(
      env,
      serverT,
      topic,
      's1',
      [
        {
          guarded: () => void ran.push('guarded'),
          strict: () => void ran.push('strict'),
          open: (_ctx: Context, args: { n: number }) => (ran.push('open'), args.n),
        },
      ],
      { middleware: [gatekeeper] },
    );
    const plain = getRpcClient(plainT, { topic }, { timeout: env.ms(10_000) });
    const remote = await expectFailure(() => plain.call({}, 'guarded', {}), RemoteError);
    expect(remote).toMatchObject({ excType: 'Refused', value: 'guarded: refused by middleware', module: Refused.remoteModule });
    await expect(plain.call({}, 'open', { n: 1 })).resolves.toBe(1);

    const rebuilding = getRpcClient(rebuildingT, { topic }, { timeout: env.ms(10_000) });
    const rebuilt = await expectFailure(() => rebuilding.call({}, 'guarded', {}), Refused);
    expect(rebuilt.message).toBe('guarded: refused by middleware');
    const invalid = await expectFailure(() => rebuilding.call({}, 'strict', {}), InvalidArgument);
    expect(invalid.field).toBe('ctx.token');
    await expect(rebuilding.call({}, 'open', { n: 2 })).resolves.toBe(2);
    expect(ran).toEqual(['open', 'open']);
  });
}

function notifyWireTests(env: ConformanceEnv): void {
  it(`trace context keys reach a notification listener unchanged (messagingv2 and messaging formats${env.caps.pools ? ', plain and pooled' : ''})`, async () => {
    const nt = await env.notificationTransport();
    const senderT = await env.notificationTransport();
    const topic = env.name('topic');
    const plain: Seen[] = [];
    const pooled: Seen[] = [];
    await startListener(env, nt, [topic], [recordingEndpoint('plain', plain, ['info', 'error'])]);
    if (env.caps.pools) await startListener(env, nt, [topic], [recordingEndpoint('pooled', pooled, ['info', 'error'])], { pool: env.name('pool') });
    const ctx = traceContext();
    const sent = structuredClone(ctx);
    await notifier(senderT, topic).info(ctx, 'trace.v2', { id: 1 });
    await notifier(senderT, topic, 'messaging').error(ctx, 'trace.v1', { id: 2 });
    const logs = env.caps.pools ? [plain, pooled] : [plain];
    await waitFor(() => logs.every((log) => log.length >= 2), { timeoutMs: env.ms(10_000), message: 'both notifications at every listener' });
    for (const log of logs) {
      expect(log.map((s) => s.eventType).sort()).toEqual(['trace.v1', 'trace.v2']);
      for (const s of log) expect(s.ctx, `${s.eventType} at ${s.who}`).toEqual(sent);
    }
    expect(ctx, 'the sender keeps its context as it was').toEqual(sent);
  });

  it('a listener middleware sees every notification with its context, trace keys included', async () => {
    const nt = await env.notificationTransport();
    const topic = env.name('topic');
    const seenByMiddleware: Array<{ priority: Priority; id: number; ctx: Context }> = [];
    const watch: ListenerMiddleware = {
      before(inv) {
        expect(inv.batch).toBe(false);
        for (const item of inv.items) seenByMiddleware.push({ priority: inv.priority, id: item.payload.id, ctx: item.ctx });
      },
    };
    const handled: Seen[] = [];
    await startListener(env, nt, [topic], [recordingEndpoint('l', handled, ['info', 'error'])], { middleware: [watch] });
    const n = notifier(nt, topic);
    const contexts = new Map<number, Context>();
    const N = 6;
    for (let id = 0; id < N; id++) {
      const ctx = traceContext();
      contexts.set(id, structuredClone(ctx));
      await (id % 2 ? n.error(ctx, 'ev', { id }) : n.info(ctx, 'ev', { id }));
    }
    await waitFor(() => handled.length >= N, { timeoutMs: env.ms(10_000), message: `${N} notifications handled` });
    expect(seenByMiddleware.map((s) => s.id).sort((a, b) => a - b)).toEqual([...Array(N).keys()]);
    for (const s of seenByMiddleware) {
      expect(s.priority).toBe(s.id % 2 ? 'error' : 'info');
      expect(s.ctx, `notification ${s.id}`).toEqual(contexts.get(s.id));
    }
    for (const s of handled) expect(s.ctx, `handler, notification ${s.payload.id}`).toEqual(contexts.get(s.payload.id));
  });

  if (env.caps.requeue) {
    it('a listener middleware that returns REQUEUE, or throws, has the notification delivered again (allowRequeue)', async () => {
      const nt = await env.notificationTransport();
      const topic = env.name('topic');
      const arrivals = new Map<number, number>();
      const handled = new Map<number, number>();
      const count = (m: Map<number, number>, id: number) => m.set(id, (m.get(id) ?? 0) + 1).get(id)!;
      const requeueOnce: ListenerMiddleware = {
        before(inv) {
          const id = inv.items[0].payload.id as number;
          if (count(arrivals, id) === 1 && id === 2) throw new Refused('not yet');
        },
        after(inv) {
          const id = inv.items[0].payload.id as number;
          return id === 1 && arrivals.get(id) === 1 ? NotificationResult.REQUEUE : undefined;
        },
      };
      await startListener(
        env,
        nt,
        [topic],
        [
          {
            info(_ctx: Context, _pub: unknown, _ev: string, payload: { id: number }) {
              count(handled, payload.id);
            },
          },
        ],
        { middleware: [requeueOnce], allowRequeue: true },
      );
      const n = notifier(nt, topic);
      await n.info({}, 'ev', { id: 1 });
      await n.info({}, 'ev', { id: 2 });
      await waitFor(() => arrivals.get(1) === 2 && arrivals.get(2) === 2, { timeoutMs: env.ms(15_000), message: 'both notifications delivered again' });
      // A later notification as a barrier: neither comes a third time.
      await n.info({}, 'ev', { id: 3 });
      await waitFor(() => handled.get(3) === 1 && handled.get(2) === 1, { timeoutMs: env.ms(10_000), message: 'the barrier handled' });
      expect(Object.fromEntries(arrivals)).toEqual({ 1: 2, 2: 2, 3: 1 });
      expect(Object.fromEntries(handled)).toEqual({ 1: 2, 2: 1, 3: 1 });
    });
  }
}
