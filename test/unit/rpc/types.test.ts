// Type tests for the public generics of the RPC client; the runtime part builds clients and, for
// the wire types, makes calls on memory:// to show the values have the types the client claims.
import { afterEach, describe, expect, it, expectTypeOf } from 'vitest';
import { InvalidArgument } from '../../../src/core/errors.js';
import type { Jsonify, NotJsonSerialisable } from '../../../src/core/jsonify.js';
import { Target } from '../../../src/core/target.js';
import { getRpcClient, type RpcClient } from '../../../src/rpc/client.js';
import type { RpcArgs, RpcMeta, RpcMethodName, RpcResult, UntypedApi } from '../../../src/rpc/endpoint.js';
import { createHarness, type Harness } from './harness.js';

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
    // A handler's undefined is sent as null.
    expectTypeOf<RpcResult<Inventory, 'release'>>().toEqualTypeOf<null>();
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

class Calendar {
  date(_ctx: unknown): Date {
    return new Date(0);
  }
  event(_ctx: unknown, args: { at: Date; tags?: string[] }): { at: Date; note: string | undefined; seen: Array<Date | undefined> } {
    return { at: args.at, note: undefined, seen: [args.at, undefined] };
  }
  index(_ctx: unknown): Map<string, number> {
    return new Map([['a', 1]]);
  }
  big(_ctx: unknown): bigint {
    return 1n;
  }
  nothing(_ctx: unknown): void {}
}

declare const cal: RpcClient<Calendar>;

let h: Harness | undefined;
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

describe('typed clients give what the wire carries (JSON)', () => {
  it('Jsonify: toJSON applied, undefined members optional, undefined elements null, refusals named', () => {
    expectTypeOf<Jsonify<Date>>().toEqualTypeOf<string>();
    expectTypeOf<Jsonify<{ a: number; b: string | undefined; c?: Date }>>().toEqualTypeOf<{ a: number; b?: string; c?: string }>();
    expectTypeOf<Jsonify<Array<Date | undefined>>>().toEqualTypeOf<Array<string | null>>();
    expectTypeOf<Jsonify<readonly [Date, number]>>().toEqualTypeOf<readonly [string, number]>();
    expectTypeOf<Jsonify<{ n: number; f(): void }>>().toEqualTypeOf<{ n: number }>();
    expectTypeOf<Jsonify<Map<string, number>>>().toEqualTypeOf<NotJsonSerialisable<'Map and Set are refused (JSON would encode them as {}): convert them, or use JsonPayloadSerializer'>>();
    expectTypeOf<Jsonify<Set<string>>>().toMatchTypeOf<NotJsonSerialisable<string>>();
    expectTypeOf<Jsonify<bigint>>().toMatchTypeOf<NotJsonSerialisable<string>>();
    expectTypeOf<Jsonify<unknown>>().toEqualTypeOf<unknown>();
    expectTypeOf<Jsonify<Record<string, unknown>>>().toEqualTypeOf<{ [x: string]: unknown }>();
    expectTypeOf<Jsonify<'a' | 1 | null>>().toEqualTypeOf<'a' | 1 | null>();
  });

  it('results: a Date is a string, members and elements as JSON leaves them, a Map or BigInt is no Map or BigInt', () => typeOnly(() => {
    expectTypeOf(cal.call({}, 'date')).resolves.toEqualTypeOf<string>();
    expectTypeOf(cal.call({}, 'event', { at: '1970-01-01T00:00:00.000Z' })).resolves.toEqualTypeOf<{ at: string; seen: Array<string | null>; note?: string }>();
    expectTypeOf(cal.call({}, 'nothing')).resolves.toEqualTypeOf<null>();
    expectTypeOf<RpcResult<Calendar, 'index'>>().not.toMatchTypeOf<Map<string, number>>();
    expectTypeOf<RpcResult<Calendar, 'big'>>().not.toMatchTypeOf<bigint>();
    void (async () => {
      // These lines must NOT type-check.
      // @ts-expect-error a Date result arrives as a string
      const d: Date = await cal.call({}, 'date');
      // @ts-expect-error a Map result is refused at run time, so it is never a Map
      const m: Map<string, number> = await cal.call({}, 'index');
      void d;
      void m;
    });
  }));

  it('arguments: typed as the handler receives them (a Date member is a string)', () => typeOnly(() => {
    expectTypeOf<RpcArgs<Calendar, 'event'>>().toEqualTypeOf<{ at: string; tags?: string[] }>();
    // @ts-expect-error the handler would receive a string, not the Date its type claims
    void cal.call({}, 'event', { at: new Date() });
  }));

  it('at run time the values are what the types say: a string for a Date, null for undefined, a refusal for a Map', async () => {
    h = createHarness();
    await h.server([new Calendar()], { server: 'c' });
    const client = getRpcClient<Calendar>(await h.transport(), { topic: h.topic }, { timeout: 5000 });
    const date = await client.call({}, 'date');
    expect(date).toBe('1970-01-01T00:00:00.000Z');
    expect(await client.call({}, 'event', { at: date })).toEqual({ at: date, seen: [date, null] });
    expect(await client.call({}, 'nothing')).toBeNull();
    const refused = await client.call({}, 'index').catch((e: unknown) => e);
    expect((refused as Error).name).toBe(InvalidArgument.name);
    expect((refused as Error).message).toMatch(/Map and Set encode as \{\}/);
  });
});
