// What JSON carries of a TypeScript type: the types a typed RPC client gives arguments and results,
// so a `Date` is typed as the string that arrives and a `Map` as the refusal it meets (assertJsonSafe).

/**
 * Stands for a value tidings refuses to send (a Map or Set, a BigInt, a function, a symbol): it
 * is assignable to nothing else, so using it as what it replaces fails to compile, naming why.
 */
export interface NotJsonSerialisable<Why extends string> {
  /** Why the value cannot be sent. */
  readonly 'not JSON-serialisable': Why;
}

type JsonPrimitive = string | number | boolean | null;
type AnyFunction = (...args: any[]) => unknown;
type Simplify<T> = { [K in keyof T]: T[K] } & {};
/** A value with a `toJSON()`, which JSON.stringify calls. */
type ToJSON<J> = { toJSON(...args: never[]): J };

/** An array element: JSON writes `undefined` there as `null`. */
type JsonElement<T> = T extends undefined | void ? null : Jsonify<T>;

/**
 * An object: string keys only, a member that may be `undefined` optional (JSON drops it), and
 * function-valued ones dropped: a class's methods live on its prototype, which JSON skips (an own
 * function member is refused at run time, which the type cannot tell apart).
 */
type JsonObject<T> = Simplify<
  {
    [K in keyof T as K extends string ? (T[K] extends AnyFunction ? never : undefined extends T[K] ? never : K) : never]: Jsonify<T[K]>;
  } & {
    [K in keyof T as K extends string ? (T[K] extends AnyFunction ? never : undefined extends T[K] ? K : never) : never]?: Jsonify<Exclude<T[K], undefined>>;
  }
>;

/**
 * What a value of type `T` is once it has crossed the wire as JSON, as tidings sends it: `toJSON()`
 * applied (a `Date` becomes a `string`), object members that are `undefined` dropped, `undefined`
 * array elements `null`; what tidings refuses to send (Map, Set, BigInt, functions, symbols)
 * becomes {@link NotJsonSerialisable}. `unknown` and `any` stay as they are.
 */
export type Jsonify<T> = unknown extends T
  ? T
  : T extends JsonPrimitive | undefined
    ? T
    : T extends ReadonlyMap<unknown, unknown> | ReadonlySet<unknown>
      ? NotJsonSerialisable<'Map and Set are refused (JSON would encode them as {}): convert them, or use JsonPayloadSerializer'>
      : T extends bigint
        ? NotJsonSerialisable<'BigInt is refused: convert it to a string or a number'>
        : T extends AnyFunction | symbol
          ? NotJsonSerialisable<'functions and symbols are refused'>
          : T extends ToJSON<infer J>
            ? Jsonify<J>
            : T extends readonly unknown[]
              ? { [I in keyof T]: JsonElement<T[I]> }
              : T extends object
                ? JsonObject<T>
                : never;

/** A call's result as it arrives: {@link Jsonify}, and a handler's `undefined` (or `void`) as the `null` it is sent as. */
export type JsonifyResult<T> = T extends undefined | void ? null : Jsonify<T>;
