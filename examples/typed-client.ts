// A typed client: getRpcClient<Endpoint> checks method names, arguments and results at compile
// time, and an application error class comes back as itself. Run: npx tsx examples/typed-client.ts
import { randomUUID } from 'node:crypto';
import { Target, defaultRemoteErrorRegistry, getRpcClient, getRpcServer, getRpcTransport, type Context } from 'tidings';

/** An application error; `remoteModule` is the name callers allow to get the class back. */
class OutOfStock extends Error {
  static readonly remoteModule = 'shop.errors';
  override readonly name = 'OutOfStock';
}

class Inventory {
  // Endpoints may declare namespace and version; clients must ask for a compatible one.
  readonly target = new Target({ namespace: 'inventory', version: '1.1' });
  private readonly stock = new Map([['apple', 3]]);

  count(_ctx: Context, args: { item: string }): number {
    return this.stock.get(args.item) ?? 0;
  }

  take(_ctx: Context, args: { item: string; n: number }): { left: number } {
    const have = this.stock.get(args.item) ?? 0;
    if (args.n > have) throw new OutOfStock(`only ${have} ${args.item} left`);
    this.stock.set(args.item, have - args.n);
    return { left: have - args.n };
  }
}

const transport = await getRpcTransport(undefined, {
  allowedRemoteExmods: ['shop.errors'],
  remoteErrors: defaultRemoteErrorRegistry.clone().register('shop.errors', OutOfStock),
});
const topic = `shop-${randomUUID().slice(0, 8)}`;
const server = getRpcServer(transport, new Target({ topic, server: 'shop-1' }), [new Inventory()]);
await server.start();

const client = getRpcClient<Inventory>(transport, { topic, namespace: 'inventory', version: '1.0' }, { timeout: 5000 });
const apples: number = await client.call({}, 'count', { item: 'apple' });
console.log('apples in stock:', apples);
const { left } = await client.call({}, 'take', { item: 'apple', n: 2 });
console.log('took 2, left:', left);
// Compile-time only: a wrong method name or argument type does not type-check.
export function wontCompile() {
  // @ts-expect-error -- 'steal' is not a method of Inventory
  void client.call({}, 'steal', { item: 'apple' });
  // @ts-expect-error -- n must be a number
  void client.call({}, 'take', { item: 'apple', n: 'two' });
}

try {
  await client.call({}, 'take', { item: 'apple', n: 5 });
} catch (err) {
  if (!(err instanceof OutOfStock)) throw err;
  console.log(`take 5 -> OutOfStock: ${err.message}`);
}

await server.stop();
await server.wait();
await transport.cleanup();
console.log('typed-client done');
