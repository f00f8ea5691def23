// The RPC client's options: their types and defaults, and their check (resolveOptions), apart
// from the client's sending logic in client.ts.
import { InvalidArgument } from '../core/errors.js';
import { checkPositiveMs, checkRetry } from '../core/checks.js';
import { isPlainObject } from '../core/json-check.js';
import type { RpcRetryPolicy } from '../core/retry.js';
import { NoOpSerializer, type Serializer } from '../core/serializer.js';
import { checkVersion } from '../core/target.js';
import { checkMiddleware, type RpcClientMiddleware } from '../middleware/middleware.js';
import type { RpcBulkheadOptions } from './bulkhead.js';
import type { RpcCircuitBreakerOptions } from './circuit-breaker.js';
import { isRpcContract, type RpcContract } from './contract.js';

/** Options of `getRpcClient()`. */
export interface RpcClientOptions {
  /** Reply deadline of `call`, ms (oslo `rpc_response_timeout`). @default 60000 */
  timeout?: number;
  /** Connection retries per send: undefined or -1 = forever, 0 = none, N = N retries. @default undefined */
  retry?: number;
  /** Highest version this client may send (`major.minor`); needs a target version. @default undefined */
  versionCap?: string;
  /** Call-monitor window, ms: servers heartbeat long calls; a call fails when a window passes silently. @default undefined */
  callMonitorTimeout?: number;
  /** Context/entity hooks. @default new NoOpSerializer() */
  serializer?: Serializer<any>;
  /** Interceptors around each `call`/`cast`, inside the transport's `middleware.rpcClient`; kept by `prepare()`. @default [] */
  middleware?: readonly RpcClientMiddleware<any>[];
  /**
   * Schemas from `defineRpcContract()`: types the client, checks args before sending (a bad
   * one rejects with InvalidArgument, nothing sent) and checks results (the call resolves with
   * the result schema's output, or rejects with InvalidArgument naming `result`). @default undefined
   */
  contract?: RpcContract<any>;
  /**
   * Retries of calls the caller declares idempotent (`idempotentMethods`, or a call's
   * `idempotent: true`) after a timeout or delivery failure, never after an error the server
   * replied with. Each attempt is a new request (a new `_unique_id` and `_msg_id`): see
   * README "Client resilience". Kept by `prepare()`. @default undefined (no retries)
   */
  retryPolicy?: RpcRetryPolicy;
  /**
   * A circuit breaker per target: calls to a target that stopped answering are refused at once
   * with CircuitOpenError until a probe gets through. `true` = the defaults. Shared with the
   * clients `prepare()`d from this one. @default undefined (none)
   */
  circuitBreaker?: boolean | RpcCircuitBreakerOptions;
  /**
   * At most `maxConcurrent` calls in flight, `maxQueue` more waiting, BulkheadFullError past that.
   * `true` = the defaults. Shared with the clients `prepare()`d from this one. @default undefined (none)
   */
  bulkhead?: boolean | RpcBulkheadOptions;
}

/** Defaults of RpcClientOptions. */
export const RPC_CLIENT_DEFAULTS = Object.freeze({
  /** Reply deadline of `call`, ms (oslo `rpc_response_timeout`, 60 s). */
  timeout: 60_000,
});

/** `prepare()` overrides: target fields and client options. Undefined = inherited; `null` clears. */
export interface RpcPrepareOptions {
  /** Target exchange; `null` = the transport's control exchange. */
  exchange?: string | null;
  /** Target topic. */
  topic?: string;
  /** Target server; `null` = any server of the topic. */
  server?: string | null;
  /** Cast to every server of the topic (`call` refuses it). */
  fanout?: boolean;
  /** Target namespace; `null` = the default namespace. */
  namespace?: string | null;
  /** Target version; `null` = none (the server assumes 1.0). */
  version?: string | null;
  /** Reply deadline of `call`, ms. */
  timeout?: number;
  /** Connection retries per send; `null` = forever. */
  retry?: number | null;
  /** Highest version this client may send; `null` = no cap. */
  versionCap?: string | null;
  /** Call-monitor window, ms; `null` = none. */
  callMonitorTimeout?: number | null;
  /** Retry policy of calls; `null` = none. */
  retryPolicy?: RpcRetryPolicy | null;
  /** A circuit breaker of the new client's own (not shared with this one); `null` = none. */
  circuitBreaker?: boolean | RpcCircuitBreakerOptions | null;
  /** A bulkhead of the new client's own (not shared with this one); `null` = none. */
  bulkhead?: boolean | RpcBulkheadOptions | null;
}

/** Per-call options: the last argument of `RpcClient.call()`. */
export interface RpcCallOptions {
  /** Aborts the wait for the reply (rejects with AbortError). */
  signal?: AbortSignal;
  /** This call's reply deadline, ms; overrides the client's `timeout` (each attempt gets it whole). */
  timeout?: number;
  /** Declares this call idempotent (it may run twice): retried per the retry policy; false = never retried. @default whether `idempotentMethods` lists the method */
  idempotent?: boolean;
  /** This call's retry policy instead of the client's; false = no retries. */
  retryPolicy?: RpcRetryPolicy | false;
}

/** Per-cast options: the last argument of `RpcClient.cast()`. */
export interface RpcCastOptions {
  /** Aborts a send still waiting for a connection. */
  signal?: AbortSignal;
}

/** A checked request, ready for the driver. */
/** The client's options, checked, with their defaults applied. */
export interface ResolvedOptions {
  timeout: number;
  retry?: number;
  versionCap?: string;
  callMonitorTimeout?: number;
  serializer: Serializer<any>;
  middleware: readonly RpcClientMiddleware<any>[];
  contract?: RpcContract;
  retryPolicy?: RpcRetryPolicy;
  circuitBreaker?: boolean | RpcCircuitBreakerOptions;
  bulkhead?: boolean | RpcBulkheadOptions;
}

/** Every option `prepare()` may override besides the target's keys. */
export const EMPTY_OPTIONS: Record<keyof RpcClientOptions, true> = { timeout: true, retry: true, versionCap: true, callMonitorTimeout: true, serializer: true, middleware: true, contract: true, retryPolicy: true, circuitBreaker: true, bulkhead: true };

/** Checks `getRpcClient()`'s options and applies their defaults; throws InvalidArgument naming the field. */
export function resolveOptions(options: RpcClientOptions): ResolvedOptions {
  if (!isPlainObject(options as unknown)) throw new InvalidArgument('options', 'an object', options);
  const resolved: ResolvedOptions = {
    timeout: checkPositiveMs('timeout', options.timeout ?? RPC_CLIENT_DEFAULTS.timeout),
    serializer: options.serializer ?? new NoOpSerializer(),
    middleware: checkMiddleware('middleware', options.middleware),
  };
  if (options.retry !== undefined) resolved.retry = checkRetry(options.retry);
  if (options.versionCap !== undefined) {
    checkVersion('versionCap', options.versionCap);
    resolved.versionCap = options.versionCap;
  }
  if (options.callMonitorTimeout !== undefined) resolved.callMonitorTimeout = checkPositiveMs('callMonitorTimeout', options.callMonitorTimeout);
  if (options.retryPolicy !== undefined) resolved.retryPolicy = options.retryPolicy;
  if (options.circuitBreaker !== undefined) resolved.circuitBreaker = options.circuitBreaker;
  if (options.bulkhead !== undefined) resolved.bulkhead = options.bulkhead;
  if (options.contract !== undefined) {
    if (!isRpcContract(options.contract)) throw new InvalidArgument('contract', 'a contract from defineRpcContract()', options.contract);
    resolved.contract = options.contract;
  }
  const s = resolved.serializer as Partial<Serializer>;
  if (['serializeEntity', 'deserializeEntity', 'serializeContext', 'deserializeContext'].some((m) => typeof s[m as keyof Serializer] !== 'function')) {
    throw new InvalidArgument('serializer', 'a Serializer (serializeEntity, deserializeEntity, serializeContext, deserializeContext)', options.serializer);
  }
  return resolved;
}
