// handlerTimeout in the one server lifecycle, over memory://: stuck handlers no longer use up the
// executor, the caller gets a HandlerTimeout at once, the signal aborts, a notification is
// requeued or acknowledged as when its handler throws, and a late outcome is dropped.
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { HandlerTimeout, InvalidArgument, MessagingTimeout, RemoteError } from '../../../src/core/errors.js';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { Target } from '../../../src/core/target.js';
import { getNotificationTransport, getRpcTransport, type Transport } from '../../../src/transport.js';
import { getRpcClient } from '../../../src/rpc/client.js';
import { getRpcServer, type RpcHandlerTimeoutInfo, type RpcServer, type RpcServerEvents } from '../../../src/rpc/server.js';
import type { RpcMeta } from '../../../src/rpc/endpoint.js';
import { Notifier } from '../../../src/notify/notifier.js';
import { getBatchNotificationListener, getNotificationListener, type NotificationListener } from '../../../src/notify/listener.js';
import type { NotificationBatchItem, NotificationMetadata } from '../../../src/notify/dispatcher.js';
import type { NotificationHandlerTimeoutEvent, NotificationListenerEvents } from '../../../src/notify/instrumentation.js';
import { deferred, uniqueName, waitFor } from '../../../src/testing/wait.js';
import { DISPATCHER_MODULE, deserializeRemoteError, serializeFailure, UntracedFailure } from '../../../src/contract/remote-error.js';

const transports: Transport[] = [];
const servers: Array<RpcServer | NotificationListener> = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close({ deadlineMs: 5000 }).catch(() => undefined);
  await Promise.all(transports.splice(0).map((t) => t.cleanup()));
});

async function rpcTransport(): Promise<Transport> {
  const t = await getRpcTransport('memory:///' + uniqueName('vh'));
  transports.push(t);
  return t;
}

async function notifyTransport(): Promise<Transport> {
  const t = await getNotificationTransport('memory:///' + uniqueName('vh'));
  transports.push(t);
  return t;
}

const never = (): Promise<never> => new Promise<never>(() => {});

describe('RpcServer handlerTimeout', () => {
  it('frees the slot of each stuck request: 12 stuck calls in a row on 2 slots, then a normal call is answered', async () => {
    const t = await rpcTransport();
    const topic = uniqueName('topic');
    const signals: AbortSignal[] = [];
    const endpoint = {
      hang(_ctx: unknown, _args: unknown, meta: RpcMeta) {
        signals.push(meta.signal);
        return never();
      },
      echo: (_ctx: unknown, args: { v: number }) => args.v,
    };
    const server = getRpcServer(t, { topic, server: 's' }, [endpoint], { executorSize: 2, handlerTimeout: 200 });
    servers.push(server);
    const timeouts: RpcHandlerTimeoutInfo[] = [];
    server.events.on('handlerTimeout', (info) => timeouts.push(info));
    await server.start();
    const client = getRpcClient(t, { topic }, { timeout: 30_000 });
    for (let i = 0; i < 12; i++) {
      const began = Date.now();
      const err = await client.call({}, 'hang', {}).then(
        () => undefined,
        (e: unknown) => e,
      );
      // The caller is answered at the deadline, not at its own 30 s call timeout.
      expect(err).toBeInstanceOf(HandlerTimeout);
      expect(err).toBeInstanceOf(MessagingTimeout);
      expect(Date.now() - began).toBeLessThan(15_000);
    }
    expect(await client.call({}, 'echo', { v: 7 })).toBe(7);
    expect(signals).toHaveLength(12);
    for (const s of signals) {
      expect(s.aborted).toBe(true);
      expect(s.reason).toBeInstanceOf(HandlerTimeout);
    }
    expect(timeouts).toHaveLength(12);
    expect(timeouts[0]).toMatchObject({ method: 'hang', expectsReply: true, timeoutMs: 200 });
    expect(timeouts[0].elapsedMs).toBeGreaterThanOrEqual(150);
    expect(server.inFlight).toBe(0);
  });

  it('drops a late result (no second reply, no dispatched event) and logs the timeout at warn once', async () => {
    const t = await rpcTransport();
    const topic = uniqueName('topic');
    const logger = createMemoryLogger();
    const late = deferred<string>();
    const server = getRpcServer(t, { topic, server: 's' }, [{ slow: () => late.promise, quick: () => 'ok' }], { handlerTimeout: 200, logger });
    servers.push(server);
    const dispatched: string[] = [];
    server.events.on('dispatched', (info) => dispatched.push(info.method));
    await server.start();
    const client = getRpcClient(t, { topic }, { timeout: 30_000 });
    await expect(client.call({}, 'slow', {})).rejects.toBeInstanceOf(HandlerTimeout);
    late.resolve('too late');
    await waitFor(() => logger.records.some((e) => e.msg.includes('finished after its handlerTimeout')), { timeoutMs: 10_000 });
    expect(await client.call({}, 'quick', {})).toBe('ok');
    expect(dispatched).toEqual(['quick']);
    const warnings = logger.records.filter((e) => e.level === 'warn' && e.msg.includes('handlerTimeout'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0].fields).toMatchObject({ method: 'slow', timeoutMs: 200 });
  });

  it('a cast past its deadline frees its slot too; a handler that finishes in time is untouched', async () => {
    const t = await rpcTransport();
    const topic = uniqueName('topic');
    let seen: AbortSignal | undefined;
    const server = getRpcServer(t, { topic, server: 's' }, [{ hang: never, fast: async (_c: unknown, _a: unknown, meta: RpcMeta) => ((seen = meta.signal), 'fast') }], {
      executorSize: 1,
      handlerTimeout: 200,
    });
    servers.push(server);
    const timeouts: RpcHandlerTimeoutInfo[] = [];
    server.events.on('handlerTimeout', (info) => timeouts.push(info));
    await server.start();
    const client = getRpcClient(t, { topic }, { timeout: 30_000 });
    await client.cast({}, 'hang', {});
    await waitFor(() => timeouts.length === 1, { timeoutMs: 10_000 });
    expect(timeouts[0].expectsReply).toBe(false);
    expect(await client.call({}, 'fast', {})).toBe('fast');
    expect(seen?.aborted).toBe(false);
  });

  it('without handlerTimeout meta.signal is a signal that never aborts', async () => {
    const t = await rpcTransport();
    const topic = uniqueName('topic');
    let seen: AbortSignal | undefined;
    const server = getRpcServer(t, { topic, server: 's' }, [{ get: (_c: unknown, _a: unknown, meta: RpcMeta) => ((seen = meta.signal), 1) }]);
    servers.push(server);
    expect(server.handlerTimeout).toBeUndefined();
    await server.start();
    expect(await getRpcClient(t, { topic }).call({}, 'get', {})).toBe(1);
    expect(seen).toBeInstanceOf(AbortSignal);
    expect(seen?.aborted).toBe(false);
  });

  it('types the signal and the events', () => {
    expectTypeOf<RpcMeta['signal']>().toEqualTypeOf<AbortSignal>();
    expectTypeOf<NotificationMetadata['signal']>().toEqualTypeOf<AbortSignal>();
    expectTypeOf<RpcServerEvents['handlerTimeout']>().toEqualTypeOf<[info: RpcHandlerTimeoutInfo]>();
    expectTypeOf<NotificationListenerEvents['handlerTimeout']>().toEqualTypeOf<[NotificationHandlerTimeoutEvent]>();
    expectTypeOf<RpcHandlerTimeoutInfo['elapsedMs']>().toEqualTypeOf<number>();
    expectTypeOf<NotificationHandlerTimeoutEvent['requeued']>().toEqualTypeOf<boolean>();
  });

  it('refuses a bad handlerTimeout or sendTraceback', async () => {
    const t = await rpcTransport();
    for (const bad of [0, -1, Number.NaN, Infinity, '100', 2 ** 31]) {
      expect(() => getRpcServer(t, { topic: 'x', server: 's' }, [{}], { handlerTimeout: bad as number })).toThrow(InvalidArgument);
    }
    expect(() => getRpcServer(t, { topic: 'x', server: 's' }, [{}], { sendTraceback: 'no' as unknown as boolean })).toThrow(InvalidArgument);
    expect(() => getNotificationListener(t, [{ topic: 'x' }], [{ info() {} }], { handlerTimeout: 0 })).toThrow(InvalidArgument);
  });
});

describe('RpcServer sendTraceback', () => {
  class ShopFailure extends Error {}
  const endpoint = {
    explodeDeepInServer(): never {
      throw new ShopFailure('out of stock');
    },
  };

  async function failureOf(options: { sendTraceback?: boolean }): Promise<RemoteError> {
    const t = await rpcTransport();
    const topic = uniqueName('topic');
    const server = getRpcServer(t, { topic, server: 's' }, [endpoint], options);
    servers.push(server);
    await server.start();
    const err = await getRpcClient(t, { topic }, { timeout: 10_000 }).call({}, 'explodeDeepInServer', {}).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RemoteError);
    return err as RemoteError;
  }

  it('sends the traceback by default', async () => {
    const err = await failureOf({});
    expect(err.excType).toBe('ShopFailure');
    expect(err.traceback.length).toBeGreaterThan(0);
    expect(err.traceback.join('')).toContain('explodeDeepInServer');
  });

  it('with false, the caller gets the class and message but no traceback and none of the server frames', async () => {
    const err = await failureOf({ sendTraceback: false });
    expect(err.excType).toBe('ShopFailure');
    expect(err.value).toBe('out of stock');
    expect(err.traceback).toEqual([]);
    for (const text of [err.message, err.stack ?? '', err.traceback.join('')]) {
      expect(text).not.toContain('explodeDeepInServer');
      expect(text).not.toContain('handler-timeout.test');
      expect(text).not.toMatch(/rpc[/\\](dispatcher|server)\./);
    }
  });

  it('on the wire: oslo\'s six keys with tb: [], and a HandlerTimeout maps back to its class on any tidings caller', () => {
    const wire = JSON.parse(serializeFailure(new UntracedFailure(new TypeError('bad'))));
    expect(wire).toEqual({ class: 'TypeError', module: 'builtins', message: 'bad', tb: [], args: ['bad'], kwargs: {} });
    const timeout = JSON.parse(serializeFailure(new HandlerTimeout('request did not finish')));
    expect(timeout).toMatchObject({ class: 'HandlerTimeout', module: DISPATCHER_MODULE });
    // No allowedRemoteExmods needed: the dispatcher's module is always allowed.
    const rebuilt = deserializeRemoteError(JSON.stringify(timeout));
    expect(rebuilt).toBeInstanceOf(HandlerTimeout);
    expect(rebuilt.message).toBe('request did not finish');
    expect((rebuilt as HandlerTimeout).retriable).toBe(false);
  });

  it('with false, a HandlerTimeout is sent without traceback too', async () => {
    const t = await rpcTransport();
    const topic = uniqueName('topic');
    const server = getRpcServer(t, { topic, server: 's' }, [{ hang: never }], { handlerTimeout: 200, sendTraceback: false });
    servers.push(server);
    await server.start();
    const err = await getRpcClient(t, { topic }, { timeout: 30_000 }).call({}, 'hang', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HandlerTimeout);
    expect((err as Error).stack ?? '').not.toContain('message-handling-server');
  });
});

describe('NotificationListener handlerTimeout', () => {
  it('requeues a stuck notification (allowRequeue), aborts its signal, and the next delivery succeeds', async () => {
    const t = await notifyTransport();
    const topic = uniqueName('topic');
    const deliveries: NotificationMetadata[] = [];
    const handled: number[] = [];
    const listener = getNotificationListener(
      t,
      [new Target({ topic })],
      [
        {
          info(_ctx: unknown, _p: string | null, _e: string, payload: { id: number }, metadata: NotificationMetadata) {
            deliveries.push(metadata);
            if (metadata.deliveryCount === 1) return never();
            handled.push(payload.id);
            return undefined;
          },
        },
      ],
      { allowRequeue: true, executorSize: 1, handlerTimeout: 200 },
    );
    servers.push(listener);
    const timeouts: NotificationHandlerTimeoutEvent[] = [];
    listener.events.on('handlerTimeout', (e) => timeouts.push(e));
    await listener.start();
    await new Notifier(t, { topics: [topic], publisherId: 'p' }).info({}, 'compute.stuck', { id: 1 });
    await waitFor(() => handled.length === 1, { timeoutMs: 15_000, message: 'the redelivered notification handled' });
    expect(handled).toEqual([1]);
    expect(deliveries[0].signal.aborted).toBe(true);
    expect(deliveries[0].signal.reason).toBeInstanceOf(HandlerTimeout);
    expect(deliveries[1].redelivered).toBe(true);
    expect(deliveries[1].signal.aborted).toBe(false);
    // oslo's two keys stay the only enumerable ones, signal or not.
    expect(Object.keys(deliveries[0])).toEqual(['message_id', 'timestamp']);
    expect(timeouts).toHaveLength(1);
    expect(timeouts[0]).toMatchObject({ eventTypes: ['compute.stuck'], messages: 1, requeued: true, timeoutMs: 200 });
  });

  it('acknowledges a stuck notification without allowRequeue and goes on with the next; a late settle is ignored', async () => {
    const t = await notifyTransport();
    const topic = uniqueName('topic');
    const late = deferred();
    const seen: number[] = [];
    const listener = getNotificationListener(
      t,
      [new Target({ topic })],
      [
        {
          info(_ctx: unknown, _p: string | null, _e: string, payload: { id: number }) {
            seen.push(payload.id);
            return payload.id === 1 ? late.promise : undefined;
          },
        },
      ],
      { executorSize: 1, handlerTimeout: 200 },
    );
    servers.push(listener);
    const acknowledged: number[] = [];
    listener.events.on('dispatched', (e) => acknowledged.push(e.acknowledged));
    const timeouts: NotificationHandlerTimeoutEvent[] = [];
    listener.events.on('handlerTimeout', (e) => timeouts.push(e));
    await listener.start();
    const n = new Notifier(t, { topics: [topic], publisherId: 'p' });
    await n.info({}, 'ev', { id: 1 });
    await n.info({}, 'ev', { id: 2 });
    await waitFor(() => seen.includes(2), { timeoutMs: 15_000 });
    expect(timeouts).toMatchObject([{ requeued: false }]);
    late.resolve();
    await waitFor(() => listener.inFlight === 0, { timeoutMs: 10_000 });
    await n.info({}, 'ev', { id: 3 });
    await waitFor(() => seen.includes(3), { timeoutMs: 10_000 });
    // Never redelivered (it was acknowledged), and the late outcome did not settle or report it again.
    expect(seen).toEqual([1, 2, 3]);
    await waitFor(() => acknowledged.length === 2, { timeoutMs: 10_000 });
    expect(acknowledged).toEqual([1, 1]);
  });

  it('a batch listener requeues a stuck batch; every item carries the batch one signal', async () => {
    const t = await notifyTransport();
    const topic = uniqueName('topic');
    const batches: NotificationBatchItem[][] = [];
    const listener = getBatchNotificationListener(
      t,
      [new Target({ topic })],
      [
        {
          info(items: NotificationBatchItem[]) {
            batches.push(items);
            return batches.length === 1 ? never() : undefined;
          },
        },
      ],
      { allowRequeue: true, batchSize: 3, batchTimeout: 100, handlerTimeout: 300 },
    );
    servers.push(listener);
    const timeouts: NotificationHandlerTimeoutEvent[] = [];
    listener.events.on('handlerTimeout', (e) => timeouts.push(e));
    await listener.start();
    const n = new Notifier(t, { topics: [topic], publisherId: 'p' });
    await Promise.all([1, 2, 3].map((id) => n.info({}, 'ev', { id })));
    await waitFor(() => batches.flat().length >= 6, { timeoutMs: 15_000, message: 'the requeued batch delivered again' });
    const first = batches[0];
    expect(first).toHaveLength(3);
    expect(new Set(first.map((i) => i.metadata.signal)).size).toBe(1);
    expect(first[0].metadata.signal.aborted).toBe(true);
    expect(batches.slice(1).flat().map((i) => i.payload.id).sort()).toEqual([1, 2, 3]);
    expect(timeouts[0]).toMatchObject({ messages: 3, requeued: true });
  });
});
