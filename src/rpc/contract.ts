// RPC contracts: per-method argument and result schemas (any Standard Schema library) shared by
// client and server, the Api type both sides infer from them, and the server's endpoint builder.
import { InvalidArgument } from '../core/errors.js';
import { isPlainObject } from '../core/json-check.js';
import { isStandardSchema, validateWith, type InferInput, type InferOutput, type StandardSchemaV1 } from '../core/schema.js';
import type { Target, TargetInit } from '../core/target.js';
import type { Context } from '../contract/types.js';
import { expose } from './access-policy.js';
import { expectedExceptions, type RpcMeta, type SchemaTypedApi } from './endpoint.js';

/** The schemas of one method; either may be left out (anything goes, typed loosely). */
export interface RpcMethodSchemas {
  /** The keyword arguments (one object); the server hands the handler its output. */
  readonly args?: StandardSchemaV1;
  /** The result; the client resolves with its output. */
  readonly result?: StandardSchemaV1;
}

/** Method name to its schemas. */
export type RpcContractMethods = Readonly<Record<string, RpcMethodSchemas>>;

/** A contract made by `defineRpcContract()`: the methods and their schemas, frozen. */
export interface RpcContract<M extends RpcContractMethods = RpcContractMethods> {
  /** Method name to schemas. */
  readonly methods: M;
}

type SchemaInputOr<S, Missing> = S extends StandardSchemaV1 ? InferInput<S> : Missing;
type SchemaOutputOr<S, Missing> = S extends StandardSchemaV1 ? InferOutput<S> : Missing;
type ContractMethodsOf<C> = C extends RpcContract<infer M> ? M : never;

/**
 * The Api type a contract stands for, as a client sees it: each method takes the args schema's
 * input and resolves with the result schema's output. `getRpcClient(..., {contract})` uses it.
 */
export type RpcContractApi<C extends RpcContract<any>> = {
  [K in keyof ContractMethodsOf<C> & string]: (ctx: any, args: SchemaInputOr<ContractMethodsOf<C>[K]['args'], Record<string, unknown> | undefined>) => SchemaOutputOr<ContractMethodsOf<C>[K]['result'], unknown>;
} & SchemaTypedApi;

/**
 * The handlers `implementContract()` needs: one per method, given the args schema's output and
 * returning (or resolving with) the result schema's input.
 */
export type RpcContractHandlers<C extends RpcContract<any>, Ctx = Context> = {
  [K in keyof ContractMethodsOf<C> & string]: (
    ctx: Ctx,
    args: SchemaOutputOr<ContractMethodsOf<C>[K]['args'], Record<string, unknown>>,
    meta: RpcMeta,
  ) => SchemaInputOr<ContractMethodsOf<C>[K]['result'], unknown> | Promise<SchemaInputOr<ContractMethodsOf<C>[K]['result'], unknown>>;
};

/** The endpoint `implementContract()` returns: for `getRpcServer()`, and usable as a client's Api type too. */
export type RpcContractEndpoint<C extends RpcContract<any>, Ctx = Context> = {
  readonly [K in keyof ContractMethodsOf<C> & string]: (
    ctx: Ctx,
    args: SchemaInputOr<ContractMethodsOf<C>[K]['args'], Record<string, unknown> | undefined>,
    meta: RpcMeta,
  ) => Promise<SchemaInputOr<ContractMethodsOf<C>[K]['result'], unknown>>;
} & {
  /** Namespace and version the endpoint answers, when given. */
  readonly target?: Target | TargetInit;
};

/** Options of `implementContract()`. */
export interface ImplementContractOptions {
  /** Namespace and version of the endpoint (the dispatcher's `endpoint.target`). @default undefined (default namespace, 1.0) */
  target?: Target | TargetInit;
}

/**
 * Declares the methods of an RPC API with their argument and result schemas, in any Standard
 * Schema library: `defineRpcContract({ add: { args: z.object({a: z.number(), b: z.number()}), result: z.number() } })`.
 * Throws InvalidArgument for a name no access policy lets through (`_x`, `constructor`,
 * `target`) or a schema that is not a Standard Schema.
 */
export function defineRpcContract<const M extends RpcContractMethods>(methods: M): RpcContract<M> {
  if (!isPlainObject(methods)) throw new InvalidArgument('contract', 'an object of method name to {args?, result?} schemas', methods);
  const copy: Record<string, RpcMethodSchemas> = Object.create(null);
  for (const [name, schemas] of Object.entries(methods)) {
    if (name.startsWith('_') || name === 'constructor' || name === 'target') throw new InvalidArgument(`contract.${name}`, 'a method name not starting with _ and not constructor or target', name);
    if (!isPlainObject(schemas)) throw new InvalidArgument(`contract.${name}`, 'an object {args?, result?} of Standard Schemas', schemas);
    for (const key of Object.keys(schemas)) {
      if (key !== 'args' && key !== 'result') throw new InvalidArgument(`contract.${name}.${key}`, 'args or result', key);
      if (schemas[key] !== undefined && !isStandardSchema(schemas[key])) throw new InvalidArgument(`contract.${name}.${key}`, 'a Standard Schema (zod, valibot, arktype...)', schemas[key]);
    }
    copy[name] = Object.freeze({ ...schemas });
  }
  return Object.freeze({ methods: Object.freeze(copy) as M });
}

/** True for a contract made by `defineRpcContract()`. */
export function isRpcContract(value: unknown): value is RpcContract {
  return value !== null && typeof value === 'object' && typeof (value as { methods?: unknown }).methods === 'object' && (value as { methods?: unknown }).methods !== null;
}

/** The schemas of `method` in `contract`, when it declares the method. */
export function contractMethod(contract: RpcContract, method: string): RpcMethodSchemas | undefined {
  return Object.hasOwn(contract.methods, method) ? contract.methods[method] : undefined;
}

/**
 * Builds the server endpoint of a contract: each method checks its args against the args
 * schema and calls the handler with the schema's output (transforms and defaults applied).
 * Bad args reject with InvalidArgument naming the field (`args.b`), which the caller gets back
 * as InvalidArgument; it is an expected error (logged at debug level). The methods are
 * `expose`d, so `ExplicitRpcAccessPolicy` lets them through. Throws InvalidArgument for a
 * missing handler.
 */
export function implementContract<C extends RpcContract<any>, Ctx = Context>(
  contract: C,
  handlers: RpcContractHandlers<C, Ctx>,
  options: ImplementContractOptions = {},
): RpcContractEndpoint<C, Ctx> {
  if (!isRpcContract(contract)) throw new InvalidArgument('contract', 'a contract from defineRpcContract()', contract);
  if (handlers === null || typeof handlers !== 'object') throw new InvalidArgument('handlers', 'an object with one function per contract method', handlers);
  if (!isPlainObject(options)) throw new InvalidArgument('options', 'an object', options);
  const endpoint: Record<string, unknown> = {};
  for (const [name, schemas] of Object.entries(contract.methods as RpcContractMethods)) {
    const handler = (handlers as Record<string, unknown>)[name];
    if (typeof handler !== 'function') throw new InvalidArgument(`handlers.${name}`, 'a function', handler);
    const argsSchema = schemas.args;
    const method = argsSchema
      ? async (ctx: Ctx, args: unknown, meta: RpcMeta) => handler.call(handlers, ctx, await validateWith(argsSchema, args, 'args'), meta)
      : async (ctx: Ctx, args: unknown, meta: RpcMeta) => handler.call(handlers, ctx, args, meta);
    endpoint[name] = expose(expectedExceptions(InvalidArgument)(method));
  }
  if (options.target !== undefined) endpoint.target = options.target;
  return Object.freeze(endpoint) as RpcContractEndpoint<C, Ctx>;
}
