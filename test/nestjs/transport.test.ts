// tidings/nestjs on memory://: a real NestJS microservice served by ServerTidings and called
// through ClientTidings (registered with ClientsModule), and by plain tidings clients.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Controller, Module, type INestApplicationContext, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, RpcException, type ClientProxy } from '@nestjs/microservices';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import {
  createMemoryLogger,
  InvalidArgument,
  MessagingTimeout,
  NoSuchMethod,
  Notifier,
  RemoteError,
  UnsupportedVersion,
  getNotificationTransport,
  getRpcClient,
  getRpcTransport,
  type Transport,
} from '../../src/index.js';
import { ClientTidings, NESTJS_REMOTE_MODULE, ServerTidings, TidingsRecord } from '../../src/nestjs/index.js';
import { waitFor } from '../../src/testing/wait.js';
import { AppModule, CALC, CALC_CAST, startCaller, startMicroservice, type Seen } from './app.js';

const url = `memory:///nest-${randomUUID().slice(0, 8)}`;

describe('tidings/nestjs on memory://', () => {
  const topic = `calc-${randomUUID().slice(0, 8)}`;
  const events = `events-${randomUUID().slice(0, 8)}`;
  const seen: Seen[] = [];
  const services: INestMicroservice[] = [];
  let caller: INestApplicationContext;
  let client: ClientProxy;
  let rpc: Transport;

  beforeAll(async () => {
    for (const app of ['app-1', 'app-2']) {
      services.push(await startMicroservice(app, seen, { url, rpc: { topic, server: app, version: '1.1' }, notifications: { topics: [events] } }));
    }
    caller = await startCaller({ url, topic, timeout: 10_000, notifier: { topics: [events], publisherId: 'compute.host-1' } });
    client = caller.get<ClientProxy>(CALC);
    rpc = await getRpcTransport(url);
  });

  afterAll(async () => {
    await caller?.close();
    await Promise.all(services.map((s) => s.close()));
    await rpc?.cleanup();
  });

  const seenBy = (handler: string) => seen.filter((s) => s.handler === handler);

  describe('@MessagePattern handlers are RPC methods', () => {
    it('send() calls one: @Payload() is the args, @Ctx() the tidings context and metadata', async () => {
      const reply = await firstValueFrom(client.send('add', new TidingsRecord({ a: 2, b: 3 }, { ctx: { user_id: 'alice' } })));
      expect(reply).toMatchObject({ sum: 5, method: 'add', version: '1.0', user: 'alice' });
      expect(['app-1', 'app-2']).toContain((reply as { app: string }).app);
      expect(seenBy('add').at(-1)?.ctx).toMatchObject({ user_id: 'alice' });
    });

    it('plain data is the args; the reply arrives once and completes', async () => {
      const values: unknown[] = [];
      await new Promise<void>((resolve, reject) => client.send('add', { a: 1, b: 1 }).subscribe({ next: (v) => values.push(v), error: reject, complete: resolve }));
      expect(values).toHaveLength(1);
      expect(values[0]).toMatchObject({ sum: 2, user: null });
    });

    it('is an oslo RPC method: a plain tidings client calls it on the topic, on one server, with version and namespace', async () => {
      const plain = getRpcClient(rpc, { topic }, { timeout: 10_000 });
      expect(await plain.call({}, 'add', { a: 40, b: 2 })).toMatchObject({ sum: 42 });
      expect(await plain.prepare({ server: 'app-2' }).call({}, 'add', { a: 1, b: 2 })).toMatchObject({ sum: 3, app: 'app-2' });
      // The server's version (1.1) is compatible with 1.0 and 1.1 requests, not with 1.2 or 2.0.
      expect(await plain.prepare({ version: '1.1' }).call({}, 'add', { a: 1, b: 2 })).toMatchObject({ sum: 3 });
      await expect(plain.prepare({ version: '2.0' }).call({}, 'add', { a: 1, b: 2 })).rejects.toBeInstanceOf(UnsupportedVersion);
      // multiply has its own endpoint: namespace calc, version 1.2.
      expect(await plain.prepare({ namespace: 'calc', version: '1.2' }).call({}, 'multiply', { a: 6, b: 7 })).toBe(42);
      await expect(plain.call({}, 'multiply', { a: 6, b: 7 })).rejects.toBeInstanceOf(NoSuchMethod);
    });

    it('an object pattern is the method named by its JSON text (keys sorted, as NestJS routes it)', async () => {
      expect(await firstValueFrom(client.send({ v: 2, cmd: 'sum' }, { values: [1, 2, 3] }))).toBe(6);
      const plain = getRpcClient(rpc, { topic }, { timeout: 10_000 });
      expect(await plain.call({}, '{"cmd":"sum","v":2}', { values: [4, 5] })).toBe(9);
    });

    it('per-message version and namespace through TidingsRecord', async () => {
      expect(await firstValueFrom(client.send('multiply', new TidingsRecord({ a: 3, b: 5 }, { namespace: 'calc', version: '1.2' })))).toBe(15);
    });

    it('an unknown pattern errors with NoSuchMethod; a deadline with MessagingTimeout', async () => {
      await expect(firstValueFrom(client.send('nope', {}))).rejects.toBeInstanceOf(NoSuchMethod);
      await expect(firstValueFrom(client.send('slow', new TidingsRecord({ ms: 3000 }, { timeout: 200 })))).rejects.toBeInstanceOf(MessagingTimeout);
    });

    it('data that is not keyword arguments is refused with InvalidArgument, nothing sent', async () => {
      const error = await firstValueFrom(client.send('add', [1, 2])).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidArgument);
      expect((error as InvalidArgument).field).toBe('data');
    });
  });

  describe("NestJS' filters, guards, pipes and interceptors", () => {
    it('an exception filter mapping a domain error to RpcException: the caller gets an RpcException with its payload', async () => {
      const error = await firstValueFrom(client.send('stock.take', { qty: 5 })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RpcException);
      expect((error as RpcException).getError()).toEqual({ code: 'OUT_OF_STOCK', message: 'only 3 left, 5 asked' });
    });

    it('a plain tidings (or Python) caller sees it as a RemoteError naming RpcException, the payload in kwargs', async () => {
      const plain = getRpcClient(rpc, { topic }, { timeout: 10_000 });
      const error = await plain.call({}, 'stock.take', { qty: 9 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RemoteError);
      expect(error).toMatchObject({ excType: 'RpcException', module: NESTJS_REMOTE_MODULE, value: 'only 3 left, 9 asked', kwargs: { error: { code: 'OUT_OF_STOCK', message: 'only 3 left, 9 asked' } } });
    });

    it("NestJS' default filter hides an unexpected error: the caller gets { status: 'error', message: 'Internal server error' }", async () => {
      const error = await firstValueFrom(client.send('explode', {})).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RpcException);
      expect((error as RpcException).getError()).toEqual({ status: 'error', message: 'Internal server error' });
      expect(JSON.stringify((error as RpcException & { cause: RemoteError }).cause.traceback)).not.toContain('secret internal detail');
    });

    it('a filter that lets the error through gives the caller a typed remote error (its class rebuilt)', async () => {
      const error = await firstValueFrom(client.send('range', { n: -1 })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RangeError);
      expect((error as Error).message).toBe('n must be >= 0, got -1');
      expect(await firstValueFrom(client.send('range', { n: 4 }))).toBe(4);
    });

    it('a pipe transforms the payload, and its refusal reaches the caller', async () => {
      expect(await firstValueFrom(client.send('stock.take', { qty: '2' }))).toEqual({ taken: 2, type: 'number' });
      const error = await firstValueFrom(client.send('stock.take', { qty: 'many' })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RpcException);
      expect((error as RpcException).getError()).toMatchObject({ code: 'BAD_QTY' });
    });

    it('a guard reads the tidings context: refused without the token (Forbidden resource), admitted with it', async () => {
      const refused = await firstValueFrom(client.send('whoami', new TidingsRecord({}, { ctx: { user_id: 'mallory' } }))).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RpcException);
      expect((refused as RpcException).getError()).toEqual({ status: 'error', message: 'Forbidden resource' });
      expect(await firstValueFrom(client.send('whoami', new TidingsRecord({}, { ctx: { user_id: 'alice', auth_token: 'let-me-in' } })))).toBe('alice');
    });

    it('an interceptor maps the result', async () => {
      expect(await firstValueFrom(client.send('wrapped', { value: [1, 'x'] }))).toEqual({ wrapped: [1, 'x'] });
    });
  });

  describe('@EventPattern handlers are notification handlers', () => {
    it('emit() sends a notification: every pool gets it once, shared by the applications in the pool (two handlers of one pattern in two pools included)', async () => {
      const before = seen.length;
      for (let id = 1; id <= 6; id++) await lastValueFrom(client.emit('compute.instance.create.end', new TidingsRecord({ id }, { ctx: { request_id: `req-${id}` } })), { defaultValue: undefined });
      const fresh = () => seen.slice(before);
      const all = () => ['billing', 'quota', 'audit'].every((pool) => fresh().filter((s) => s.handler === pool).length >= 6);
      await waitFor(all, { timeoutMs: 10_000 });
      // A later notification that every pool has seen proves none got a copy more.
      await lastValueFrom(client.emit('compute.instance.create.end', { id: 'end' }), { defaultValue: undefined });
      await waitFor(() => fresh().filter((s) => (s.payload as { id: unknown }).id === 'end').length === 3, { timeoutMs: 10_000 });
      for (const pool of ['billing', 'quota', 'audit']) {
        const got = fresh().filter((s) => s.handler === pool && (s.payload as { id: unknown }).id !== 'end');
        expect(got.map((s) => (s.payload as { id: number }).id).sort()).toEqual([1, 2, 3, 4, 5, 6]);
        expect(got.every((s) => s.eventType === 'compute.instance.create.end' && s.publisherId === 'compute.host-1' && s.priority === 'info')).toBe(true);
        expect(got.map((s) => s.ctx?.request_id).sort()).toEqual(['req-1', 'req-2', 'req-3', 'req-4', 'req-5', 'req-6']);
      }
      // Two applications in each pool share its notifications (memory:// hands them out round robin).
      expect(new Set(fresh().filter((s) => s.handler === 'billing').map((s) => s.app))).toEqual(new Set(['app-1', 'app-2']));
    });

    it('the pattern is an event-type glob, and priorities limit a handler', async () => {
      const before = seen.length;
      const notifier = new Notifier(await notificationTransport(), { topics: [events], publisherId: 'compute.host-2' });
      await notifier.warn({}, 'compute.instance.delete.start', { id: 'w' });
      await notifier.error({}, 'compute.instance.delete.end', { id: 'e' });
      await notifier.info({}, 'network.port.create.end', { id: 'n' });
      await waitFor(() => seen.slice(before).some((s) => s.handler === 'audit'), { timeoutMs: 10_000 });
      // The error notification and the network one are for nobody; the warn one for audit only.
      await lastValueFrom(client.emit('compute.instance.create.end', { id: 'marker' }), { defaultValue: undefined });
      await waitFor(() => seen.slice(before).filter((s) => (s.payload as { id?: string }).id === 'marker').length === 3, { timeoutMs: 10_000 });
      const audit = seen.slice(before).filter((s) => s.handler === 'audit').map((s) => `${s.priority}:${(s.payload as { id: string }).id}`);
      expect(audit.sort()).toEqual(['info:marker', 'warn:w']);
      expect(seen.slice(before).filter((s) => s.handler === 'billing').map((s) => (s.payload as { id: string }).id)).toEqual(['marker']);
    });

    it('a handler that throws, with allowRequeue, gets the notification again (redelivered)', async () => {
      await lastValueFrom(client.emit('order.placed', { id: 7 }), { defaultValue: undefined });
      await waitFor(() => seenBy('order').filter((s) => (s.payload as { id: number }).id === 7).length >= 2, { timeoutMs: 10_000 });
      expect(seenBy('order').filter((s) => (s.payload as { id: number }).id === 7).map((s) => s.redelivered)).toEqual([false, true]);
    });

    it('a handler returning NotificationResult.REQUEUE gets the notification again', async () => {
      await lastValueFrom(client.emit('payment.captured', { id: 8 }), { defaultValue: undefined });
      await waitFor(() => seenBy('payment').length >= 2, { timeoutMs: 10_000 });
      expect(seenBy('payment').map((s) => s.redelivered)).toEqual([false, true]);
    });

    it('a batch handler gets arrays of payloads and ctx.getBatch()', async () => {
      for (let i = 0; i < 8; i++) await lastValueFrom(client.emit('meter.cpu', new TidingsRecord({ i }, { priority: 'sample' })), { defaultValue: undefined });
      await waitFor(() => seenBy('meter').flatMap((s) => s.payload as unknown[]).length >= 8, { timeoutMs: 10_000 });
      const batches = seenBy('meter');
      expect(batches.flatMap((s) => (s.payload as { i: number }[]).map((p) => p.i)).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      for (const b of batches) {
        expect((b.payload as unknown[]).length).toBe(b.batch);
        expect(b.batch).toBeLessThanOrEqual(4);
      }
      expect(batches.length).toBeLessThan(8);
    });

    it("emitAs: 'cast' casts instead: the @MessagePattern of that name runs, no reply", async () => {
      const castClient = caller.get<ClientProxy>(CALC_CAST);
      await lastValueFrom(castClient.emit('record', new TidingsRecord({ note: 'cast-1' }, { ctx: { user_id: 'bob' } })), { defaultValue: undefined });
      await waitFor(() => seenBy('record').some((s) => (s.payload as { note: string }).note === 'cast-1'), { timeoutMs: 10_000 });
      expect(seenBy('record').find((s) => (s.payload as { note: string }).note === 'cast-1')?.ctx).toMatchObject({ user_id: 'bob' });
    });
  });

  let notifications: Transport | undefined;
  async function notificationTransport(): Promise<Transport> {
    notifications ??= await getNotificationTransport(url);
    return notifications;
  }
  afterAll(async () => notifications?.cleanup());
});

describe('tidings/nestjs: what the RpcServer logs', () => {
  it('an exception filter\'s RpcException is the method\'s contract (debug); an Error let through is unexpected (error); neither logs the payload', async () => {
    const topic = `calc-${randomUUID().slice(0, 8)}`;
    const logger = createMemoryLogger();
    const service = await startMicroservice('logged', [], { url, transportOptions: { logger }, rpc: { topic, server: 'logged' } });
    const caller = await startCaller({ url, topic, timeout: 10_000, emitAs: 'cast' });
    try {
      const logged = caller.get<ClientProxy>(CALC);
      await expect(firstValueFrom(logged.send('stock.take', { qty: 9 }))).rejects.toBeInstanceOf(RpcException);
      await expect(firstValueFrom(logged.send('range', { n: -5 }))).rejects.toBeInstanceOf(RangeError);
      const about = (method: string) => logger.records.filter((r) => r.fields.method === method).map((r) => `${r.level}: ${r.msg}`);
      expect(about('stock.take')).toEqual(['debug: expected exception during message handling']);
      expect(about('range')).toEqual(['error: exception during message handling']);
      // The name and message only: never the RpcException's payload (kwargs.error).
      expect(JSON.stringify(logger.records)).not.toContain('OUT_OF_STOCK');
    } finally {
      await caller.close();
      await service.close();
    }
  });
});

describe('tidings/nestjs: a ServerTidings listens again after close()', () => {
  it('serves the same handlers, the chained event handlers of one pattern included', async () => {
    const topic = `calc-${randomUUID().slice(0, 8)}`;
    const events = `events-${randomUUID().slice(0, 8)}`;
    const seen: Seen[] = [];
    const strategy = new ServerTidings({ url, rpc: { topic, server: 'again' }, notifications: { topics: [events] } });
    const service = await NestFactory.createMicroservice(AppModule.with('again', seen), { strategy, logger: false });
    await service.listen();
    await strategy.close();
    await new Promise<void>((resolve, reject) => strategy.listen((error) => (error ? reject(error) : resolve())));
    const caller = await startCaller({ url, topic, timeout: 10_000, notifier: { topics: [events] } });
    try {
      const again = caller.get<ClientProxy>(CALC);
      expect(await firstValueFrom(again.send('add', { a: 1, b: 2 }))).toMatchObject({ sum: 3, app: 'again' });
      await lastValueFrom(again.emit('compute.instance.create.end', { id: 1 }), { defaultValue: undefined });
      await waitFor(() => ['billing', 'quota', 'audit'].every((h) => seen.some((s) => s.handler === h)), { timeoutMs: 10_000 });
    } finally {
      await caller.close();
      await service.close();
    }
  });
});

@Controller()
class TypoController {
  @EventPattern('x.y', { pools: 'billing' })
  handle() {}
}

@Module({ controllers: [TypoController] })
class TypoModule {}

describe('tidings/nestjs: bad configuration fails clearly', () => {
  it('@MessagePattern handlers without an rpc topic: listen() rejects with InvalidArgument naming rpc', async () => {
    const service = await NestFactory.createMicroservice(AppModule.with('x', []), { strategy: new ServerTidings({ url }), logger: false });
    const error = await service.listen().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgument);
    expect((error as InvalidArgument).field).toBe('rpc');
    await service.close();
  });

  it('an unknown key in a handler\'s extras: listen() rejects naming it', async () => {
    const service = await NestFactory.createMicroservice(TypoModule, { strategy: new ServerTidings({ url }), logger: false });
    const error = await service.listen().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgument);
    expect((error as InvalidArgument).field).toBe('@EventPattern("x.y") extras.pools');
    await service.close();
  });

  it('ClientTidings refuses bad options at construction; send() without a topic errors naming it', async () => {
    expect(() => new ClientTidings({ emitAs: 'broadcast' as never })).toThrow(InvalidArgument);
    const noTopic = new ClientTidings({ url, emitAs: 'notify' });
    const error = await firstValueFrom(noTopic.send('add', {})).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgument);
    expect((error as InvalidArgument).field).toBe('topic');
    await noTopic.close();
  });
});
