// Client resilience (issue 31, as Moleculer's callers expect): retries of calls declared
// idempotent, a circuit breaker per target and a bulkhead, shared by a client and the clients
// `prepare()`d from it. A client without them never builds any of this.
import type { EventEmitter } from 'eventemitter3';
import { AbortError, BulkheadFullError, CircuitOpenError, ConnectionError, HandlerTimeout, InvalidArgument, MessageDeliveryFailure, MessageUndeliverable, MessagingTimeout } from '../core/errors.js';
import { GuardedEventEmitter } from '../core/events.js';
import type { Logger } from '../core/logger.js';
import { abortableSleep, resolveRpcRetryPolicy, rpcRetryDelay, type ResolvedRpcRetryPolicy, type RpcRetryPolicy } from '../core/retry.js';
import type { Target } from '../core/target.js';
import { remoteOrigin } from '../contract/remote-error.js';
import type { ResilienceStats } from '../contract/resilience-stats.js';
import { Bulkhead, type RpcBulkheadOptions } from './bulkhead.js';
import { CircuitBreaker, resolveCircuitBreaker, type CircuitTransition, type ResolvedCircuitBreakerOptions, type RpcCircuitBreakerOptions } from './circuit-breaker.js';

/** A retry about to be made (`RpcClient.events` `retry`). Never carries arguments or results. */
export interface RpcRetryInfo {
  /** The call's target, as `topic`, `topic.server` or `exchange/topic[.server]`. */
  readonly destination: string;
  /** The method called. */
  readonly method: string;
  /** The attempt about to be made (2 for the first retry). */
  readonly attempt: number;
  /** The wait before it, ms. */
  readonly delayMs: number;
  /** What the previous attempt failed with. */
  readonly error: unknown;
}

/** A call refused by a full bulkhead (`RpcClient.events` `bulkheadFull`). */
export interface RpcBulkheadFullInfo {
  /** The call's target. */
  readonly destination: string;
  /** The method called. */
  readonly method: string;
  /** Calls in flight. */
  readonly inFlight: number;
  /** Calls waiting. */
  readonly queued: number;
}

/** Typed events of `RpcClient.events`. A listener that throws is logged, never breaks a call. */
export interface RpcClientEvents {
  /** A call is retried after a timeout or delivery failure. */
  retry: [info: RpcRetryInfo];
  /** A target's circuit opened: calls to it are refused until `halfOpenAfterMs` passed. */
  circuitOpened: [info: CircuitTransition];
  /** A target's circuit is half-open: the next call(s) are probes. */
  circuitHalfOpened: [info: CircuitTransition];
  /** A probe got an answer: the target's circuit is closed again. */
  circuitClosed: [info: CircuitTransition];
  /** A call was refused because the bulkhead was full. */
  bulkheadFull: [info: RpcBulkheadFullInfo];
}

const TRANSITION_EVENT = { open: 'circuitOpened', 'half-open': 'circuitHalfOpened', closed: 'circuitClosed' } as const;

/**
 * True when `error` says the call got no answer: a MessagingTimeout of this client (not a
 * HandlerTimeout a server replied with), a MessageDeliveryFailure, MessageUndeliverable or
 * ConnectionError. An error a server replied with (see `remoteOrigin()`) is never one. What
 * retry policies retry and circuit breakers count, unless told otherwise.
 */
export function isUnansweredCall(error: unknown): boolean {
  if (remoteOrigin(error) !== undefined) return false;
  if (error instanceof MessagingTimeout) return !(error instanceof HandlerTimeout);
  return error instanceof MessageDeliveryFailure || error instanceof MessageUndeliverable || error instanceof ConnectionError;
}

/** The target as metrics, events and errors name it. */
export function destinationOf(target: Target): string {
  const address = target.server === undefined ? (target.topic ?? '') : `${target.topic ?? ''}.${target.server}`;
  return target.exchange === undefined ? address : `${target.exchange}/${address}`;
}

/**
 * The retry policy of one call: the call's `retryPolicy` (false = none) or the client's, when
 * the call is idempotent (`idempotent`, else the policy's `idempotentMethods`); undefined = no retries.
 * @throws InvalidArgument for a bad `idempotent` or call policy.
 */
export function retryPolicyOfCall(client: ResolvedRpcRetryPolicy | undefined, method: string, idempotent: unknown, given: RpcRetryPolicy | false | undefined): ResolvedRpcRetryPolicy | undefined {
  if (idempotent !== undefined && typeof idempotent !== 'boolean') throw new InvalidArgument('idempotent', 'a boolean', idempotent);
  if (given === false || idempotent === false) return undefined;
  const policy = given === undefined ? client : resolveRpcRetryPolicy('retryPolicy', given);
  if (policy === undefined) return undefined;
  return idempotent === true || policy.idempotentMethods.has(method) ? policy : undefined;
}

/** The resilience state a client shares with the clients `prepare()`d from it. */
export class ClientResilience {
  /**
   * The state for a client with `options`; undefined when it has neither a breaker nor a bulkhead
   * (unless `always`: a client whose events are asked for, or a call with a retry policy).
   * @throws InvalidArgument for bad `circuitBreaker` / `bulkhead` options.
   */
  static create(
    transport: { readonly resilienceStats: ResilienceStats; readonly logger: Logger },
    options: { readonly circuitBreaker?: boolean | RpcCircuitBreakerOptions; readonly bulkhead?: boolean | RpcBulkheadOptions },
    always: boolean,
  ): ClientResilience | undefined {
    const { circuitBreaker, bulkhead } = options;
    const breaker = circuitBreaker === undefined || circuitBreaker === false ? undefined : resolveCircuitBreaker(circuitBreaker, isUnansweredCall);
    const slots = bulkhead === undefined || bulkhead === false ? undefined : new Bulkhead(bulkhead);
    if (!always && breaker === undefined && slots === undefined) return undefined;
    return new ClientResilience(transport.resilienceStats, transport.logger, breaker, slots);
  }

  private emitter?: GuardedEventEmitter<RpcClientEvents>;
  private readonly breakers = new Map<string, CircuitBreaker>();

  constructor(
    private readonly stats: ResilienceStats,
    private readonly logger: Logger,
    /** undefined = no circuit breaker. */
    readonly breakerOptions: ResolvedCircuitBreakerOptions | undefined,
    /** undefined = no bulkhead. */
    readonly bulkhead: Bulkhead | undefined,
  ) {}

  /** Built on first use: a client nobody listens to emits into nothing. */
  get events(): EventEmitter<RpcClientEvents> {
    return (this.emitter ??= new GuardedEventEmitter<RpcClientEvents>(this.logger));
  }

  /** The breaker of `destination`, made on first use; undefined without a breaker. */
  breaker(destination: string): CircuitBreaker | undefined {
    if (this.breakerOptions === undefined) return undefined;
    let b = this.breakers.get(destination);
    if (b === undefined) {
      b = new CircuitBreaker(destination, this.breakerOptions, (t) => this.emitter?.emit(TRANSITION_EVENT[t.state], t));
      this.breakers.set(destination, b);
      this.stats.track(b);
    }
    return b;
  }

  /**
   * Runs `send` (one request per attempt) through the bulkhead and the target's breaker, again
   * after an unanswered attempt while `policy` allows. Rejects with the last attempt's error
   * as it is (a MessagingTimeout stays one), or CircuitOpenError / BulkheadFullError.
   */
  async run(target: Target, method: string, policy: ResolvedRpcRetryPolicy | undefined, signal: AbortSignal | undefined, send: () => Promise<unknown>): Promise<unknown> {
    const destination = destinationOf(target);
    const breaker = this.breaker(destination);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt(destination, method, breaker, signal, send);
      } catch (error) {
        if (policy === undefined || attempt >= policy.attempts || !isUnansweredCall(error) || (policy.retryOn !== undefined && !policy.retryOn(error))) throw error;
        const delayMs = rpcRetryDelay(attempt, policy);
        this.stats.retried(destination);
        this.emitter?.emit('retry', { destination, method, attempt: attempt + 1, delayMs, error });
        await abortableSleep(delayMs, signal);
      }
    }
  }

  private async attempt(destination: string, method: string, breaker: CircuitBreaker | undefined, signal: AbortSignal | undefined, send: () => Promise<unknown>): Promise<unknown> {
    const bulkhead = this.bulkhead;
    if (bulkhead !== undefined) {
      let wait: Promise<void> | undefined;
      try {
        wait = bulkhead.acquire(signal);
      } catch (err) {
        if (err instanceof BulkheadFullError) {
          this.stats.rejected(destination, 'bulkhead');
          this.emitter?.emit('bulkheadFull', { destination, method, inFlight: bulkhead.inFlight, queued: bulkhead.queued });
        }
        throw err;
      }
      if (wait !== undefined) await wait;
    }
    try {
      let probe = false;
      if (breaker !== undefined) {
        try {
          probe = breaker.admit();
        } catch (err) {
          if (err instanceof CircuitOpenError) this.stats.rejected(destination, 'circuit');
          throw err;
        }
      }
      try {
        const result = await send();
        breaker?.succeeded(probe);
        return result;
      } catch (err) {
        if (err instanceof AbortError) breaker?.cancel(probe);
        else breaker?.failed(probe, err);
        throw err;
      }
    } finally {
      bulkhead?.release();
    }
  }
}
