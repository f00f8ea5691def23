// tidings/nestjs on every broker: the same NestJS microservice and caller on rabbit://, redis://
// and kafka:// (the librdkafka mock cluster): a call, an RpcException, and a notification to two pools.
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Controller, Inject, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload, RpcException, type ClientProxy } from '@nestjs/microservices';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import type { NotificationEventMetadata } from '../../src/index.js';
import { TidingsContext, ServerTidings, TidingsRecord } from '../../src/nestjs/index.js';
import { waitFor } from '../../src/testing/wait.js';
import { RABBIT_URL, REDIS_URL, requireRabbitMQ, requireRedis } from '../support/brokers.js';
import { SHORT_GROUP_QUERY, startKafkaMock, type KafkaTestBroker } from '../support/kafka-broker.js';
import { deleteQueues, notificationQueues, rpcQueues } from '../interop/support/amqp-admin.js';
import { deleteRedisKeys } from '../support/redis-keys.js';
import { CALC, ShopRpc, startCaller } from './app.js';

// Pools are named queues (RabbitMQ) and consumer groups (Redis, Kafka): unique per run.
const run = randomUUID().slice(0, 8);
const BILLING = `nest-billing-${run}`;
const AUDIT = `nest-audit-${run}`;
const GOT = 'GOT';

@Controller()
class ShopController extends ShopRpc {
  constructor(@Inject(GOT) private readonly got: Array<{ pool: string; id: unknown; eventType?: string }>) {
    super();
  }

  @EventPattern('order.placed', { pool: BILLING })
  billing(@Payload() order: { id: unknown }, @Ctx() ctx: TidingsContext<NotificationEventMetadata>) {
    this.got.push({ pool: 'billing', id: order.id, eventType: ctx.getEventType() });
  }

  @EventPattern('order.*', { pool: AUDIT })
  audit(@Payload() order: { id: unknown }) {
    this.got.push({ pool: 'audit', id: order.id });
  }
}

@Module({})
class ShopModule {}

let kafka: KafkaTestBroker | undefined;
afterAll(async () => kafka?.stop());

const BROKERS: Array<[name: string, url: () => Promise<string>, cleanup?: (topic: string, events: string) => Promise<void>]> = [
  [
    'rabbit://',
    async () => (await requireRabbitMQ(), RABBIT_URL),
    (topic, events) => deleteQueues([...rpcQueues(topic, ['shop-1']), ...notificationQueues([events], [BILLING, AUDIT])]),
  ],
  ['redis://', async () => (await requireRedis(), `${REDIS_URL}?key_prefix=nest-${run}`), async () => void (await deleteRedisKeys(`nest-${run}`))],
  [
    'kafka://',
    async () => {
      kafka ??= await startKafkaMock({ brokers: 1 });
      return `${kafka.url}?${SHORT_GROUP_QUERY}`;
    },
  ],
];

describe.each(BROKERS)('tidings/nestjs on %s', (_name, urlOf, cleanup) => {
  const topic = `t-nest-${randomUUID().slice(0, 8)}`;
  const events = `t-nest-events-${randomUUID().slice(0, 8)}`;
  const got: Array<{ pool: string; id: unknown; eventType?: string }> = [];
  let close: () => Promise<void> = async () => {};
  let client: ClientProxy;

  beforeAll(async () => {
    const url = await urlOf();
    const service = await NestFactory.createMicroservice(
      { module: ShopModule, controllers: [ShopController], providers: [{ provide: GOT, useValue: got }] },
      { strategy: new ServerTidings({ url, rpc: { topic, server: 'shop-1' }, notifications: { topics: [events] } }), logger: false },
    );
    await service.listen();
    const caller = await startCaller({ url, topic, timeout: 20_000, notifier: { topics: [events], publisherId: 'web-1' } });
    client = caller.get<ClientProxy>(CALC);
    close = async () => {
      await caller.close();
      await service.close();
      await cleanup?.(topic, events);
    };
  }, 120_000);

  afterAll(() => close(), 60_000);

  it('send(): a call with a context, and an RpcException from a filter', async () => {
    expect(await firstValueFrom(client.send('add', new TidingsRecord({ a: 20, b: 22 }, { ctx: { user_id: 'alice' } })))).toEqual({ sum: 42, user: 'alice' });
    const error = await firstValueFrom(client.send('take', { qty: 9 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcException);
    expect((error as RpcException).getError()).toEqual({ code: 'OUT_OF_STOCK', message: 'only 3 left, 9 asked' });
  }, 60_000);

  it('emit(): each of two pools gets every notification once', async () => {
    for (let id = 1; id <= 3; id++) await lastValueFrom(client.emit('order.placed', { id }), { defaultValue: undefined });
    await waitFor(() => got.filter((g) => g.pool === 'billing').length >= 3 && got.filter((g) => g.pool === 'audit').length >= 3, { timeoutMs: 30_000, message: 'both pools got the 3 notifications' });
    for (const pool of ['billing', 'audit']) expect(got.filter((g) => g.pool === pool).map((g) => g.id).sort()).toEqual([1, 2, 3]);
    expect(got.find((g) => g.pool === 'billing')?.eventType).toBe('order.placed');
  }, 60_000);
});
