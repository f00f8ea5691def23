// Type tests for the public generics of the RPC client; the runtime part only builds clients.
import { describe, it, expectTypeOf } from 'vitest';
import { Target } from '../../../src/core/target.js';
import type { RpcClient } from '../../../src/rpc/client.js';
import type { RpcArgs, RpcMeta, RpcMethodName, RpcResult, UntypedApi } from '../../../src/rpc/endpoint.js';

class Calculator {
  target = new Target({ namespace: 'calc', version: '1.2' });
  static expectedErrors = [RangeError];
  add(_ctx: unknown, args: { a: number; b: number }) {
    return args.a + args.b;
  }
  async mul(_ctx: unknown, args: { a: number; b: number }, _meta: RpcMeta): Promise<number> {
    return args.a * args.b;
  }
  ping(_ctx: unknown) {
    return 'pong' as const;
  }
  maybe(_ctx: unknown, _args?: { verbose?: boolean }) {
    return { ok: true };
  }
  _internal() {
    return 1;
  }
  counter = 0;
}

interface Inventory {
  reserve(ctx: unknown, args: { sku: string; qty: number }): Promise<{ reservationId: string }>;
  release: (ctx: unknown, args: { reservationId: string }) => void;
}

declare const calc: RpcClient<Calculator>;
declare const inv: RpcClient<Inventory>;
declare const untyped: RpcClient;

/** The clients above exist only for the type checker: bodies using them are never run. */
function typeOnly(_body: () => void): void {}

describe('RPC client types', () => {
  it('method names are the function-valued string keys, minus _private and target', () => {
    expectTypeOf<RpcMethodName<Calculator>>().toEqualTypeOf<'add' | 'mul' | 'ping' | 'maybe'>();
    expectTypeOf<RpcMethodName<Inventory>>().toEqualTypeOf<'reserve' | 'release'>();
    expectTypeOf<RpcMethodName<UntypedApi>>().toEqualTypeOf<string>();
  });

  it('args are the second parameter, results are awaited return types', () => {
    expectTypeOf<RpcArgs<Calculator, 'add'>>().toEqualTypeOf<{ a: number; b: number }>();
    expectTypeOf<RpcArgs<Calculator, 'ping'>>().toEqualTypeOf<undefined>();
    expectTypeOf<RpcArgs<Calculator, 'maybe'>>().toEqualTypeOf<{ verbose?: boolean } | undefined>();
    expectTypeOf<RpcResult<Calculator, 'add'>>().toEqualTypeOf<number>();
    expectTypeOf<RpcResult<Calculator, 'mul'>>().toEqualTypeOf<number>();
    expectTypeOf<RpcResult<Inventory, 'reserve'>>().toEqualTypeOf<{ reservationId: string }>();
    expectTypeOf<RpcResult<Inventory, 'release'>>().toEqualTypeOf<void>();
  });

  it('call and cast check method names and args and infer results', () => typeOnly(() => {
    expectTypeOf(calc.call({}, 'add', { a: 1, b: 2 })).toEqualTypeOf<Promise<number>>();
    expectTypeOf(calc.call({}, 'mul', { a: 1, b: 2 }, { timeout: 1000 })).resolves.toEqualTypeOf<number>();
    expectTypeOf(calc.call({}, 'ping')).resolves.toEqualTypeOf<'pong'>();
    expectTypeOf(calc.call({}, 'maybe')).resolves.toEqualTypeOf<{ ok: boolean }>();
    expectTypeOf(inv.call({}, 'reserve', { sku: 'x', qty: 1 })).resolves.toEqualTypeOf<{ reservationId: string }>();
    expectTypeOf(calc.cast({}, 'add', { a: 1, b: 2 })).toEqualTypeOf<Promise<void>>();
    expectTypeOf(calc.prepare({ server: 'h1', timeout: 10 })).toEqualTypeOf<RpcClient<Calculator>>();

    {
      // These lines must NOT type-check.
      // @ts-expect-error unknown method
      void calc.call({}, 'sub', { a: 1, b: 2 });
      // @ts-expect-error private method
      void calc.call({}, '_internal');
      // @ts-expect-error not a method
      void calc.call({}, 'counter');
      // @ts-expect-error reserved target
      void calc.call({}, 'target');
      // @ts-expect-error wrong args
      void calc.call({}, 'add', { a: 1, b: '2' });
      // @ts-expect-error missing args
      void calc.call({}, 'add');
      // @ts-expect-error cast has no timeout option
      void calc.cast({}, 'add', { a: 1, b: 2 }, { timeout: 5 });
      // @ts-expect-error prepare refuses unknown keys
      void calc.prepare({ tiemout: 5 });
    }
  }));

  it('the untyped default takes any method, a record of args, and resolves unknown', () => typeOnly(() => {
    expectTypeOf(untyped.call({}, 'anything', { x: 1 })).resolves.toEqualTypeOf<unknown>();
    expectTypeOf(untyped.call({}, 'noArgs')).resolves.toEqualTypeOf<unknown>();
    expectTypeOf(untyped.cast({}, 'anything', { x: 1 })).toEqualTypeOf<Promise<void>>();
  }));
});
