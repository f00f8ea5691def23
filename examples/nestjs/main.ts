// A NestJS microservice on tidings: @MessagePattern handlers are RPC methods of a "shop" topic,
// @EventPattern handlers are notification handlers in two pools, and a second NestJS application
// calls it through ClientsModule. NestJS uses legacy decorators, so run it with this folder's
// tsconfig: npx tsx --tsconfig examples/nestjs/tsconfig.json examples/nestjs/main.ts
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { Catch, Controller, Module, type RpcExceptionFilter } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientsModule, Ctx, EventPattern, MessagePattern, Payload, RpcException, type ClientProxy } from '@nestjs/microservices';
import { firstValueFrom, lastValueFrom, throwError } from 'rxjs';
import { ClientTidings, ServerTidings, TidingsContext, TidingsRecord } from 'tidings/nestjs';

const url = process.env.TIDINGS_TRANSPORT_URL ?? 'memory://';
const topic = `shop-${randomUUID().slice(0, 8)}`;
const orders = `orders-${randomUUID().slice(0, 8)}`;
const received = { billing: 0, audit: 0 };

class OutOfStock extends Error {}

/** The domain error as the caller should see it: an RpcException with a code. */
@Catch(OutOfStock)
class OutOfStockFilter implements RpcExceptionFilter<OutOfStock> {
  catch(e: OutOfStock) {
    return throwError(() => new RpcException({ code: 'OUT_OF_STOCK', message: e.message }));
  }
}

@Controller()
class ShopController {
  @MessagePattern('add')
  add(@Payload() { a, b }: { a: number; b: number }, @Ctx() ctx: TidingsContext) {
    console.log(`add called by ${ctx.getContext().user_id}`);
    return a + b;
  }

  @MessagePattern('take')
  take(@Payload('qty') qty: number) {
    if (qty > 3) throw new OutOfStock(`only 3 apples left`);
    return qty;
  }

  @EventPattern('order.*', { pool: 'shop-billing' })
  bill(@Payload() _order: { id: number }) {
    received.billing++;
  }

  @EventPattern('order.placed', { pool: 'shop-audit' })
  audit(@Payload() _order: { id: number }, @Ctx() ctx: TidingsContext) {
    if (ctx.getPublisherId() === 'shop.web') received.audit++;
  }
}

@Module({ controllers: [ShopController] })
class ShopModule {}

@Module({
  imports: [ClientsModule.register([{ name: 'SHOP', customClass: ClientTidings, options: { url, topic, timeout: 10_000, notifier: { publisherId: 'shop.web', topics: [orders] } } }])],
})
class WebModule {}

const shop = await NestFactory.createMicroservice(ShopModule, {
  strategy: new ServerTidings({ url, rpc: { topic, server: 'shop-1' }, notifications: { topics: [orders] } }),
  logger: false,
});
shop.useGlobalFilters(new OutOfStockFilter());
await shop.listen();

const web = await NestFactory.createApplicationContext(WebModule, { logger: false });
const client = web.get<ClientProxy>('SHOP');

const sum = await firstValueFrom(client.send('add', new TidingsRecord({ a: 2, b: 3 }, { ctx: { user_id: 'alice' } })));
console.log(`add(2, 3) = ${sum}`);
try {
  await firstValueFrom(client.send('take', { qty: 5 }));
} catch (e) {
  console.log(`take 5 -> ${(e as Error).constructor.name} ${JSON.stringify((e as RpcException).getError())}`);
}

for (let id = 1; id <= 3; id++) await lastValueFrom(client.emit('order.placed', { id }), { defaultValue: undefined });
const deadline = Date.now() + 10_000;
while (received.billing < 3 || received.audit < 3) {
  if (Date.now() > deadline) throw new Error('notifications did not arrive');
  await new Promise((r) => setTimeout(r, 10));
}
console.log(`pool billing got ${received.billing}, pool audit got ${received.audit}`);

await web.close();
await shop.close();
console.log('nestjs done');
