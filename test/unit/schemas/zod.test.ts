// Schemas written with zod: the shared behaviour suite, and the types clients, servers and
// on() handlers infer from zod schemas.
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { getRpcClient, type RpcClient } from '../../../src/rpc/client.js';
import { defineRpcContract, implementContract, type RpcContractApi, type RpcContractEndpoint, type RpcContractHandlers } from '../../../src/rpc/contract.js';
import type { RpcArgs, RpcMeta, RpcMethodName, RpcResult } from '../../../src/rpc/endpoint.js';
import type { NotificationListener } from '../../../src/notify/listener.js';
import type { NotificationEventMetadata } from '../../../src/notify/event-routes.js';
import type { Transport } from '../../../src/transport.js';
import { schemaSuite } from './suite.js';

const addArgs = z.object({ a: z.number(), b: z.number() });
const greetArgs = z.object({ name: z.string().transform((n) => n.trim().toUpperCase()), times: z.number().default(1) });
const greetResult = z.string().transform((iso) => new Date(iso));
const instance = z.object({ id: z.string(), vcpus: z.number() });

schemaSuite('zod', { addArgs, addResult: z.number(), greetArgs, greetResult, instance });

describe('types inferred from zod schemas', () => {
  const Calc = defineRpcContract({ add: { args: addArgs, result: z.number() }, greet: { args: greetArgs, result: greetResult }, ping: {} });

  const _makeClient = (transport: Transport) => getRpcClient(transport, { topic: 't' }, { contract: Calc });

  it('the client takes the args input and resolves with the result output', () => {
    type Api = RpcContractApi<typeof Calc>;
    expectTypeOf<ReturnType<typeof _makeClient>>().toEqualTypeOf<RpcClient<Api>>();
    expectTypeOf<RpcArgs<Api, 'add'>>().toEqualTypeOf<{ a: number; b: number }>();
    expectTypeOf<RpcResult<Api, 'add'>>().toEqualTypeOf<number>();
    expectTypeOf<RpcArgs<Api, 'greet'>>().toEqualTypeOf<{ name: string; times?: number | undefined }>();
    expectTypeOf<RpcResult<Api, 'greet'>>().toEqualTypeOf<Date>();
    expectTypeOf<RpcResult<Api, 'ping'>>().toBeUnknown();
    const use = async (client: RpcClient<Api>) => {
      const at: Date = await client.call({}, 'greet', { name: 'x' });
      await client.cast({}, 'ping');
      // @ts-expect-error b is missing
      await client.call({}, 'add', { a: 1 });
      // @ts-expect-error no such method
      await client.call({}, 'sub', { a: 1 });
      return at;
    };
    expectTypeOf(use).returns.resolves.toEqualTypeOf<Date>();
    expectTypeOf<RpcMethodName<RpcContractApi<typeof Calc>>>().toEqualTypeOf<'add' | 'greet' | 'ping'>();
  });

  it('server handlers get the args output and return the result input', () => {
    expectTypeOf(implementContract<typeof Calc>).parameter(1).toEqualTypeOf<RpcContractHandlers<typeof Calc>>();
    const typed = () => implementContract(Calc, {
      add(ctx, args, meta) {
        expectTypeOf(args).toEqualTypeOf<{ a: number; b: number }>();
        expectTypeOf(meta).toEqualTypeOf<RpcMeta>();
        return args.a + args.b;
      },
      greet(_ctx, args) {
        expectTypeOf(args).toEqualTypeOf<{ name: string; times: number }>();
        return new Date().toISOString();
      },
      ping: () => 'pong',
    });
    expectTypeOf(typed).returns.toEqualTypeOf<RpcContractEndpoint<typeof Calc>>();
    // @ts-expect-error add must return a number
    const wrongResult = () => implementContract(Calc, { add: () => 'x', greet: () => '', ping: () => 1 });
    // @ts-expect-error greet is missing
    const missing = () => implementContract(Calc, { add: () => 1, ping: () => 1 });
    expectTypeOf(wrongResult).toBeFunction();
    expectTypeOf(missing).toBeFunction();
  });

  it('on() handlers get the payload schema output', () => {
    const listener = null as unknown as NotificationListener;
    const register = () =>
      listener.on('compute.instance.*', { payload: instance.transform((i) => ({ ...i, big: i.vcpus > 8 })) }, (_ctx, payload, metadata) => {
        expectTypeOf(payload).toEqualTypeOf<{ id: string; vcpus: number; big: boolean }>();
        expectTypeOf(metadata).toEqualTypeOf<NotificationEventMetadata>();
      });
    expectTypeOf(register).returns.toEqualTypeOf<NotificationListener>();
  });
});
