// tidings/nestjs against Python oslo.messaging 14 on RabbitMQ: a NestJS application calls a Python
// RPC server through ClientTidings, and a Python client and notifier reach a NestJS microservice
// served by ServerTidings. Fails, never skips, without Python oslo or RabbitMQ.
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Controller, Inject, Module, type INestApplicationContext, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload, type ClientProxy } from '@nestjs/microservices';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { MessagingTimeout, RemoteError, UnsupportedVersion, type NotificationEventMetadata } from '../../src/index.js';
import { ServerTidings, TidingsContext, TidingsRecord } from '../../src/nestjs/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteQueues, notificationQueues, rpcQueues } from '../interop/support/amqp-admin.js';
import { PyClient, PyProcess, requireOsloMessaging, startPy } from '../interop/support/python.js';
import { CALC, CALC_CAST, ShopRpc, startCaller } from './app.js';

// Pool queues are named after the pool (oslo): unique per run, so no other run shares them.
const run = randomUUID().slice(0, 8);
const BILLING = `nest-billing-${run}`;
const AUDIT = `nest-audit-${run}`;
const RECEIVED = 'RECEIVED';

interface Received {
  pool: string;
  payload: unknown;
  ctx: Record<string, unknown>;
  publisherId: string | null | undefined;
  priority: string | undefined;
}

@Controller()
class InventoryController extends ShopRpc {
  constructor(@Inject(RECEIVED) private readonly received: Received[]) {
    super();
  }

  @EventPattern('compute.instance.create.end', { pool: BILLING })
  billing(@Payload() payload: unknown, @Ctx() ctx: TidingsContext<NotificationEventMetadata>) {
    this.received.push({ pool: 'billing', payload, ctx: ctx.getContext(), publisherId: ctx.getPublisherId(), priority: ctx.getPriority() });
  }

  @EventPattern('compute.instance.*', { pool: AUDIT, priorities: ['info'] })
  audit(@Payload() payload: unknown, @Ctx() ctx: TidingsContext<NotificationEventMetadata>) {
    this.received.push({ pool: 'audit', payload, ctx: ctx.getContext(), publisherId: ctx.getPublisherId(), priority: ctx.getPriority() });
  }
}

@Module({})
class InventoryModule {
  static with(received: Received[]) {
    return { module: InventoryModule, controllers: [InventoryController], providers: [{ provide: RECEIVED, useValue: received }] };
  }
}

describe('tidings/nestjs <-> Python oslo.messaging on RabbitMQ', () => {
  const pyTopic = uniqueName('t-nest-py');
  const nestTopic = uniqueName('t-nest-svc');
  const events = uniqueName('t-nest-events');
  const received: Received[] = [];
  let pyServer: PyProcess;
  let pyClient: PyClient;
  let caller: INestApplicationContext;
  let client: ClientProxy;
  let service: INestMicroservice;

  beforeAll(async () => {
    await requireRabbitMQ();
    requireOsloMessaging();
    pyServer = await startPy(new PyProcess('rpc_server.py', { url: RABBIT_URL, topic: pyTopic, server: 'py-1' }));
    pyClient = await startPy(new PyClient(RABBIT_URL));
    caller = await startCaller({ url: RABBIT_URL, topic: pyTopic, timeout: 15_000 });
    client = caller.get<ClientProxy>(CALC);
    service = await NestFactory.createMicroservice(InventoryModule.with(received), {
      strategy: new ServerTidings({ url: RABBIT_URL, rpc: { topic: nestTopic, server: 'nest-1' }, notifications: { topics: [events] } }),
      logger: false,
    });
    await service.listen();
  }, 120_000);

  afterAll(async () => {
    await caller?.close();
    await service?.close();
    await Promise.all([pyServer?.stop(), pyClient?.stop()]);
    await deleteQueues([...rpcQueues(pyTopic, ['py-1']), ...rpcQueues(nestTopic, ['nest-1']), ...notificationQueues([events], [BILLING, AUDIT])]);
  }, 60_000);

  const pyRequests = (method: string, marker: string) => pyServer.events.filter((e) => e.event === 'request' && e.method === method && e.args?.marker === marker);

  describe('a NestJS application calls the Python service through ClientTidings', () => {
    it('send(): args, result and the context reach Python and come back', async () => {
      const marker = uniqueName('m');
      const reply = (await firstValueFrom(client.send('echo', new TidingsRecord({ marker, list: [1, 'a', null] }, { ctx: { user_id: 'alice', request_id: 'req-1' } })))) as {
        args: unknown;
        ctx: Record<string, unknown>;
        server: string;
      };
      expect(reply.args).toEqual({ marker, list: [1, 'a', null] });
      expect(reply.ctx).toEqual({ user_id: 'alice', request_id: 'req-1', client_timeout: null });
      expect(reply.server).toBe('py-1');
    });

    it('namespace and version through TidingsRecord: compatible ones are served, a newer one is UnsupportedVersion', async () => {
      expect(await firstValueFrom(client.send('add', new TidingsRecord({ a: 2, b: 40 }, { namespace: 'calc', version: '1.2' })))).toBe(42);
      const error = await firstValueFrom(client.send('add', new TidingsRecord({ a: 1, b: 1 }, { namespace: 'calc', version: '1.3' }))).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnsupportedVersion);
    });

    it("a Python exception errors the Observable with a RemoteError naming Python's class", async () => {
      const error = await firstValueFrom(client.send('fail', { message: 'bad input 42' })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RemoteError);
      expect(error).toMatchObject({ excType: 'ValueError', value: 'bad input 42', module: 'builtins' });
    });

    it('a slow Python method past the deadline errors with MessagingTimeout', async () => {
      const error = await firstValueFrom(client.send('sleep', new TidingsRecord({ ms: 3000 }, { timeout: 500 }))).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MessagingTimeout);
    });

    it("emit() as a cast reaches the Python method, with the context", async () => {
      const marker = uniqueName('cast');
      await lastValueFrom(caller.get<ClientProxy>(CALC_CAST).emit('record', new TidingsRecord({ marker }, { ctx: { user_id: 'caster' } })), { defaultValue: undefined });
      await waitFor(() => pyRequests('record', marker).length > 0, { timeoutMs: 15_000, message: 'the cast reached the Python server' });
      expect(pyRequests('record', marker)[0].ctx).toEqual({ user_id: 'caster', client_timeout: null });
    });
  });

  describe('Python reaches the NestJS microservice served by ServerTidings', () => {
    it('a Python call of a @MessagePattern handler gets its result; an RpcException is a RemoteError naming it', async () => {
      const ok = await pyClient.call({ topic: nestTopic }, { user_id: 'py-user' }, 'add', { a: 20, b: 22 });
      expect(ok).toMatchObject({ ok: true, result: { sum: 42, user: 'py-user' } });
      const refused = await pyClient.call({ topic: nestTopic, server: 'nest-1' }, {}, 'take', { qty: 9 });
      expect(refused.ok).toBe(false);
      expect(refused.ok ? undefined : refused.error).toMatchObject({ is_remote_error: true, exc_type: 'RpcException', value: 'only 3 left, 9 asked' });
    });

    it("a Python notification reaches the @EventPattern handlers of both pools, with its context and publisher", async () => {
      const id = uniqueName('vm');
      const sent = await pyClient.notify({ driver: 'messagingv2', topics: [events], publisherId: 'compute.py-host', priority: 'info', eventType: 'compute.instance.create.end', payload: { id }, ctx: { request_id: 'req-py' } });
      expect(sent.ok).toBe(true);
      await waitFor(() => received.filter((r) => (r.payload as { id: string }).id === id).length >= 2, { timeoutMs: 15_000, message: 'both pools got the Python notification' });
      const got = received.filter((r) => (r.payload as { id: string }).id === id);
      expect(got.map((r) => r.pool).sort()).toEqual(['audit', 'billing']);
      for (const r of got) expect(r).toMatchObject({ ctx: { request_id: 'req-py' }, publisherId: 'compute.py-host', priority: 'info' });
    });
  });
});
