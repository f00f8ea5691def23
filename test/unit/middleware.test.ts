// Middleware on all four façades over memory://: order, changing inputs and results, refusing,
// mapping and recovering errors, wrap, transport-level middleware, and option validation.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvalidArgument, MessagingTimeout, RemoteError } from '../../src/core/errors.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { Notifier } from '../../src/notify/notifier.js';
import { getBatchNotificationListener, getNotificationListener } from '../../src/notify/listener.js';
import { NotificationResult } from '../../src/notify/dispatcher.js';
import { getNotificationTransport, type Transport } from '../../src/transport.js';
import { composeMiddleware, type ListenerMiddleware, type Middleware, type NotifierMiddleware, type RpcClientMiddleware, type RpcServerMiddleware } from '../../src/middleware/middleware.js';
import { createMemoryLogger } from '../../src/core/logger.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { createHarness, type Harness } from './rpc/harness.js';

let h: Harness | undefined;
const transports: Transport[] = [];
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
  await Promise.all(transports.splice(0).map((t) => t.cleanup()));
});

class Echo {
  echo(ctx: Record<string, unknown>, args: Record<string, unknown>) {
    return { ctx, args };
  }
  boom() {
    throw new Error('endpoint failed');
  }
  slow() {
    return new Promise((resolve) => setTimeout(() => resolve('late'), 2000));
  }
}

class Forbidden extends Error {
  override name = 'Forbidden';
}

describe('composeMiddleware', () => {
  it('returns undefined for no middleware, so façades keep their direct path', () => {
    expect(composeMiddleware([], async () => 1)).toBeUndefined();
  });

  it('runs as an onion: befores in order, afters and onErrors in reverse, wrap around its own hooks', async () => {
    const seen: string[] = [];
    const mk = (name: string): Middleware<{ n: number }, number> => ({
      before: () => void seen.push(`${name}.before`),
      after: (_inv, r) => void seen.push(`${name}.after(${r})`),
      wrap: async (_inv, next) => {
        seen.push(`${name}.wrap>`);
        const r = await next();
        seen.push(`${name}.wrap<`);
        return r;
      },
    });
    const chain = composeMiddleware([mk('a'), mk('b')], async (inv) => {
      seen.push('op');
      return inv.n;
    })!;
    expect(await chain({ n: 7 })).toBe(7);
    expect(seen).toEqual(['a.wrap>', 'a.before', 'b.wrap>', 'b.before', 'op', 'b.after(7)', 'b.wrap<', 'a.after(7)', 'a.wrap<']);
  });

  it('onError sees failures from inside only, may map, recover or let through', async () => {
    const op = async () => {
      throw new Error('inner');
    };
    const letThrough = composeMiddleware<object, string>([{ onError: () => undefined }], op)!;
    await expect(letThrough({})).rejects.toThrow('inner');
    const mapped = composeMiddleware<object, string>([{ onError: (_i, e) => { throw new Forbidden(`mapped: ${(e as Error).message}`); } }], op)!;
    await expect(mapped({})).rejects.toBeInstanceOf(Forbidden);
    const recovered = composeMiddleware<object, string>([{ onError: () => 'fallback', after: (_i, r) => `${r}!` }], op)!;
    expect(await recovered({})).toBe('fallback!');
    const ownBefore = composeMiddleware<object, string>([{ before: () => { throw new Forbidden('no'); }, onError: () => 'not for my own before' }], async () => 'x')!;
    await expect(ownBefore({})).rejects.toBeInstanceOf(Forbidden);
  });
});

describe('RPC client and server middleware', () => {
  it('client before changes context, args and timeout; after changes the result; nothing runs when refused', async () => {
    h = createHarness();
    const server = await h.server([new Echo()]);
    const dispatched = vi.fn();
    server.events.on('dispatched', dispatched);
    const transport = await h.transport();
    const send = vi.spyOn(transport.driver, 'send');
    const stamp: RpcClientMiddleware = {
      before(inv) {
        inv.ctx = { ...(inv.ctx as object), token: 't-1' };
        inv.args = { ...inv.args, added: true };
        if (inv.method === 'slow') inv.timeout = 50;
        if (inv.method === 'refused') throw new Forbidden('refused by the client middleware');
      },
      after: (inv, result) => (inv.kind === 'call' ? { wrapped: result } : undefined),
    };
    const client = getRpcClient(transport, { topic: h.topic }, { timeout: 5000, middleware: [stamp] });
    expect(await client.call({ user: 'u' }, 'echo', { a: 1 })).toEqual({ wrapped: { ctx: expect.objectContaining({ user: 'u', token: 't-1' }), args: { a: 1, added: true } } });
    await expect(client.call({}, 'slow')).rejects.toBeInstanceOf(MessagingTimeout);
    const sentBefore = send.mock.calls.length;
    await expect(client.call({}, 'refused')).rejects.toBeInstanceOf(Forbidden);
    await expect(client.cast({}, 'refused')).rejects.toBeInstanceOf(Forbidden);
    expect(send.mock.calls.length).toBe(sentBefore);
    // prepare() keeps the middleware
    expect(await client.prepare({ timeout: 1000 }).call({}, 'echo', {})).toHaveProperty('wrapped');
    await waitFor(() => dispatched.mock.calls.length >= 3);
  });

  it('a server middleware refuses with a typed error the caller receives, logged as expected (debug), the endpoint never runs', async () => {
    h = createHarness();
    const logger = createMemoryLogger();
    const ran = vi.fn();
    const auth: RpcServerMiddleware = {
      before(inv) {
        if ((inv.ctx as Record<string, unknown>).token !== 'secret') throw new InvalidArgument('context.token', 'a valid token', '(redacted)');
        expect(inv.wireContext).toHaveProperty('token');
        expect(inv.meta.method).toBe(inv.method);
        expect(inv.target.topic).toBe(h!.topic);
      },
    };
    await h.server([{ echo: (_c: unknown, args: unknown) => (ran(), args) }], { middleware: [auth], logger });
    const client = getRpcClient(await h.transport(), { topic: h.topic }, { timeout: 5000 });
    const refused = await client.call({ token: 'wrong' }, 'echo', { a: 1 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidArgument);
    expect(refused).toMatchObject({ field: 'context.token' });
    expect(ran).not.toHaveBeenCalled();
    expect(await client.call({ token: 'secret' }, 'echo', { a: 1 })).toEqual({ a: 1 });
    expect(logger.records.filter((r) => r.level === 'error')).toEqual([]);
    expect(logger.records.some((r) => r.level === 'debug' && r.msg === 'expected exception during message handling')).toBe(true);
  });

  it('server middleware maps endpoint errors, changes args and results; transport middleware runs outside', async () => {
    h = createHarness();
    const order: string[] = [];
    const serverTransport = await h.transport({
      middleware: { rpcServer: [{ before: () => void order.push('transport'), after: (_i, r) => ({ outer: r }) }] },
    });
    const mapper: RpcServerMiddleware = {
      before(inv) {
        order.push('own');
        inv.args = { ...inv.args, seen: true };
      },
      onError(_inv, err) {
        throw new Forbidden(`mapped ${(err as Error).message}`);
      },
    };
    await h.server([new Echo()], { middleware: [mapper], transport: serverTransport });
    const client = getRpcClient(await h.transport(), { topic: h.topic }, { timeout: 5000 });
    expect(await client.call({}, 'echo', { a: 1 })).toEqual({ outer: { ctx: expect.any(Object), args: { a: 1, seen: true } } });
    expect(order).toEqual(['transport', 'own']);
    const err = await client.call({}, 'boom').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteError);
    expect((err as RemoteError).excType).toBe('Forbidden');
    expect((err as RemoteError).message).toContain('mapped endpoint failed');
  });

  it('rejects bad middleware at construction', async () => {
    h = createHarness();
    const transport = await h.transport();
    expect(() => getRpcClient(transport, { topic: 't' }, { middleware: {} as never })).toThrow(InvalidArgument);
    expect(() => getRpcClient(transport, { topic: 't' }, { middleware: [{}] as never })).toThrow(/middleware\[0\]/);
    expect(() => getRpcClient(transport, { topic: 't' }, { middleware: [{ before: 1 }] as never })).toThrow(/middleware\[0\]\.before/);
    await expect(h.transport({ middleware: { rpcClinet: [] } as never })).rejects.toThrow(/middleware\.rpcClinet/);
  });
});

describe('Notifier and listener middleware', () => {
  it('a notifier middleware changes context and payload; a listener middleware sees and changes items, and its refusal requeues', async () => {
    const url = 'memory:///' + uniqueName();
    const transport = await getNotificationTransport(url);
    transports.push(transport);
    const got: Array<{ ctx: unknown; payload: unknown }> = [];
    const stampCtx: NotifierMiddleware = {
      before(inv) {
        inv.ctx = { ...(inv.ctx as object), traced: inv.eventType };
        inv.payload = { original: inv.payload };
      },
    };
    let refuseOnce = true;
    const gate: ListenerMiddleware = {
      before(inv) {
        expect(inv.batch).toBe(false);
        expect(inv.endpoint).toBe('endpoints[0]');
        if (refuseOnce) {
          refuseOnce = false;
          throw new Forbidden('not yet');
        }
        inv.items[0].payload = { ...(inv.items[0].payload as object), checked: true };
      },
      after: (_inv, result) => result ?? NotificationResult.HANDLED,
    };
    const listener = getNotificationListener(transport, [{ topic: 'mw' }], [{ info: (ctx: unknown, _p: unknown, _e: string, payload: unknown) => void got.push({ ctx, payload }) }], {
      middleware: [gate],
      allowRequeue: true,
    });
    await listener.start();
    const errors = vi.fn();
    listener.events.on('handlerError', errors);
    await new Notifier(transport, { topics: ['mw'], middleware: [stampCtx] }).prepare({ publisherId: 'p' }).info({ user: 'u' }, 'thing.happened', 1);
    await waitFor(() => got.length === 1, { message: 'the requeued notification handled' });
    expect(got[0]).toEqual({ ctx: { user: 'u', traced: 'thing.happened' }, payload: { original: 1, checked: true } });
    expect(errors).toHaveBeenCalledTimes(1);
    expect(errors.mock.calls[0][0].error).toBeInstanceOf(Forbidden);
    await listener.stop();
    await listener.wait();
  });

  it('batch listeners run middleware once per priority group with the whole batch', async () => {
    const transport = await getNotificationTransport('memory:///' + uniqueName());
    transports.push(transport);
    const sizes: number[] = [];
    const handled: number[] = [];
    const listener = getBatchNotificationListener(transport, [{ topic: 'b' }], [{ info: (items: Array<{ payload: number }>) => void handled.push(...items.map((i) => i.payload)) }], {
      batchSize: 3,
      batchTimeout: 200,
      middleware: [{ before: (inv) => void (expect(inv.batch).toBe(true), sizes.push(inv.items.length)) }],
    });
    await listener.start();
    const notifier = new Notifier(transport, { topics: ['b'] });
    for (let i = 0; i < 3; i++) await notifier.info({}, 'e', i);
    await waitFor(() => handled.length === 3);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(3);
    await listener.stop();
    await listener.wait();
  });

  it('a notifier middleware refusal sends nothing', async () => {
    const transport = await getNotificationTransport('memory:///' + uniqueName());
    transports.push(transport);
    const send = vi.spyOn(transport.driver, 'sendNotification');
    const notifier = new Notifier(transport, { middleware: [{ before: () => { throw new Forbidden('quiet'); } }] });
    await expect(notifier.info({}, 'e', 1)).rejects.toBeInstanceOf(Forbidden);
    await expect(notifier.info({}, '', 1)).rejects.toBeInstanceOf(InvalidArgument);
    expect(send).not.toHaveBeenCalled();
  });
});
