// Schemas written with arktype: the shared behaviour suite, and the types clients, servers and
// on() handlers infer from arktype types.
import { describe, expectTypeOf, it } from 'vitest';
import { type } from 'arktype';
import type { RpcClient } from '../../../src/rpc/client.js';
import { defineRpcContract, implementContract, type RpcContractApi } from '../../../src/rpc/contract.js';
import type { RpcArgs, RpcResult } from '../../../src/rpc/endpoint.js';
import type { NotificationListener } from '../../../src/notify/listener.js';
import { schemaSuite } from './suite.js';

const addArgs = type({ a: 'number', b: 'number' });
const greetArgs = type({ name: type('string').pipe((n) => n.trim().toUpperCase()), times: 'number = 1' });
const greetResult = type('string').pipe((iso) => new Date(iso));
const instance = type({ id: 'string', vcpus: 'number' });

schemaSuite('arktype', { addArgs, addResult: type('number'), greetArgs, greetResult, instance });

describe('types inferred from arktype types', () => {
  const Calc = defineRpcContract({ add: { args: addArgs, result: type('number') }, greet: { args: greetArgs, result: greetResult } });
  type Api = RpcContractApi<typeof Calc>;

  it('the client takes the args input and resolves with the result output', () => {
    expectTypeOf<RpcArgs<Api, 'add'>>().toEqualTypeOf<{ a: number; b: number }>();
    expectTypeOf<RpcResult<Api, 'add'>>().toEqualTypeOf<number>();
    expectTypeOf<RpcArgs<Api, 'greet'>>().toEqualTypeOf<{ name: string; times?: number }>();
    expectTypeOf<RpcResult<Api, 'greet'>>().toEqualTypeOf<Date>();
    const use = async (client: RpcClient<Api>) => {
      // @ts-expect-error b must be a number
      await client.call({}, 'add', { a: 1, b: '2' });
      return client.call({}, 'greet', { name: 'x' });
    };
    expectTypeOf(use).returns.resolves.toEqualTypeOf<Date>();
  });

  it('server handlers get the args output; on() handlers the payload output', () => {
    const serve = () =>
      implementContract(Calc, {
        add: (_ctx, args) => args.a + args.b,
        greet(_ctx, args) {
          expectTypeOf(args).toEqualTypeOf<{ name: string; times: number }>();
          return '';
        },
      });
    expectTypeOf(serve).toBeFunction();
    const register = (listener: NotificationListener) =>
      listener.on('compute.*', { payload: instance }, (_ctx, payload) => {
        expectTypeOf(payload).toEqualTypeOf<{ id: string; vcpus: number }>();
      });
    expectTypeOf(register).returns.toEqualTypeOf<NotificationListener>();
  });
});
