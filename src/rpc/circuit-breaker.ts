// A client's circuit breaker for one target (Moleculer's `circuitBreaker`): opens after too many
// failures in a window, refuses calls at once while open, lets probes through once half-open.
import { CircuitOpenError, InvalidArgument } from '../core/errors.js';
import { isPlainObject } from '../core/json-check.js';
import type { CircuitState, CircuitView } from '../contract/resilience-stats.js';

/** Options of `RpcClientOptions.circuitBreaker`. */
export interface RpcCircuitBreakerOptions {
  /** Failure rate (above 0, at most 1) over the window that opens the circuit, once `minRequests` calls were counted. @default 0.5 */
  threshold?: number;
  /** Calls counted in the window before the rate is judged. @default 20 */
  minRequests?: number;
  /** Failures in the window that open the circuit whatever the rate; undefined = the rate alone decides. @default undefined */
  maxFailures?: number;
  /** The counting window, ms: counts start again from zero every window (as Moleculer's `windowTime`). @default 60000 */
  windowMs?: number;
  /** How long the circuit stays open before probes may pass, ms. @default 10000 */
  halfOpenAfterMs?: number;
  /** Calls let through at once while half-open; the others are refused as while open. @default 1 */
  halfOpenProbes?: number;
  /**
   * Which failures count against the target. @default a timeout or delivery failure of this
   * client (the server did not answer); an error a server replied with counts as an answer.
   */
  isFailure?: (error: unknown) => boolean;
}

/** Defaults of RpcCircuitBreakerOptions (Moleculer's, with durations in ms). */
export const RPC_CIRCUIT_BREAKER_DEFAULTS = Object.freeze({
  /** Failure rate that opens the circuit. */
  threshold: 0.5,
  /** Calls counted before the rate is judged. */
  minRequests: 20,
  /** Counting window, ms. */
  windowMs: 60_000,
  /** Open time before probes, ms. */
  halfOpenAfterMs: 10_000,
  /** Probes at once while half-open. */
  halfOpenProbes: 1,
});

/** Checked RpcCircuitBreakerOptions with the defaults filled in. */
export interface ResolvedCircuitBreakerOptions {
  readonly threshold: number;
  readonly minRequests: number;
  readonly maxFailures: number | undefined;
  readonly windowMs: number;
  readonly halfOpenAfterMs: number;
  readonly halfOpenProbes: number;
  readonly isFailure: (error: unknown) => boolean;
}

const KEYS = ['threshold', 'minRequests', 'maxFailures', 'windowMs', 'halfOpenAfterMs', 'halfOpenProbes', 'isFailure'];

/** Checks `circuitBreaker` (true = the defaults) and fills in the defaults; `isFailure` defaults to `defaultFailure`. */
export function resolveCircuitBreaker(value: unknown, defaultFailure: (error: unknown) => boolean): ResolvedCircuitBreakerOptions {
  const o = value === true ? {} : value;
  if (!isPlainObject(o)) throw new InvalidArgument('circuitBreaker', `true or an object {${KEYS.join(', ')}}`, value);
  for (const key of Object.keys(o)) if (!KEYS.includes(key)) throw new InvalidArgument(`circuitBreaker.${key}`, `one of ${KEYS.join(', ')}`, key);
  const D = RPC_CIRCUIT_BREAKER_DEFAULTS;
  const threshold = o.threshold ?? D.threshold;
  if (typeof threshold !== 'number' || !(threshold > 0 && threshold <= 1)) throw new InvalidArgument('circuitBreaker.threshold', 'a failure rate above 0 and at most 1', threshold);
  const count = (key: string, fallback: number | undefined): number | undefined => {
    const v = o[key] ?? fallback;
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 1)) throw new InvalidArgument(`circuitBreaker.${key}`, 'an integer >= 1', v);
    return v as number | undefined;
  };
  const ms = (key: string, fallback: number): number => {
    const v = o[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new InvalidArgument(`circuitBreaker.${key}`, 'a positive finite number of milliseconds', v);
    return v;
  };
  if (o.isFailure !== undefined && typeof o.isFailure !== 'function') throw new InvalidArgument('circuitBreaker.isFailure', 'a function (error) => boolean', o.isFailure);
  return Object.freeze({
    threshold,
    minRequests: count('minRequests', D.minRequests)!,
    maxFailures: count('maxFailures', undefined),
    windowMs: ms('windowMs', D.windowMs),
    halfOpenAfterMs: ms('halfOpenAfterMs', D.halfOpenAfterMs),
    halfOpenProbes: count('halfOpenProbes', D.halfOpenProbes)!,
    isFailure: (o.isFailure as ResolvedCircuitBreakerOptions['isFailure'] | undefined) ?? defaultFailure,
  });
}

/** What a breaker tells its owner when its state changes. */
export interface CircuitTransition {
  /** The breaker's target. */
  readonly destination: string;
  /** The state it moved to. */
  readonly state: CircuitState;
  /** Failures counted in the window when it opened (0 otherwise). */
  readonly failures: number;
  /** Calls counted in the window when it opened (0 otherwise). */
  readonly requests: number;
}

/**
 * The breaker of one target. No timer: an open circuit turns half-open at the first call (or
 * `state` read) after `halfOpenAfterMs`, so an idle breaker costs nothing.
 */
export class CircuitBreaker implements CircuitView {
  private current: CircuitState = 'closed';
  private windowStart = performance.now();
  private requests = 0;
  private failures = 0;
  private openedAt = 0;
  private probes = 0;

  constructor(
    /** The target, for errors, events and metrics. */
    readonly destination: string,
    private readonly options: ResolvedCircuitBreakerOptions,
    private readonly onTransition: (t: CircuitTransition) => void,
  ) {}

  /** The state now (an open circuit past `halfOpenAfterMs` reads as half-open). */
  get state(): CircuitState {
    if (this.current === 'open' && performance.now() - this.openedAt >= this.options.halfOpenAfterMs) this.moveTo('half-open');
    return this.current;
  }

  /**
   * Admits one call or throws CircuitOpenError. An admitted call MUST be reported with
   * `succeeded()` or `failed()` exactly once; the returned flag says whether it is a probe.
   */
  admit(): boolean {
    const state = this.state;
    if (state === 'closed') return false;
    if (state === 'half-open' && this.probes < this.options.halfOpenProbes) {
      this.probes++;
      return true;
    }
    const retryAfterMs = state === 'open' ? Math.max(0, Math.ceil(this.options.halfOpenAfterMs - (performance.now() - this.openedAt))) : 0;
    throw new CircuitOpenError(`The circuit of ${this.destination} is ${state}: call refused without sending (${state === 'open' ? `probes in ${retryAfterMs} ms` : 'a probe is under way'})`, this.destination, retryAfterMs);
  }

  /** The call got an answer (a result, or an error that does not count as a failure). */
  succeeded(probe: boolean): void {
    if (probe) {
      this.probes--;
      if (this.current === 'half-open') this.close();
      return;
    }
    if (this.current === 'closed') {
      this.roll();
      this.requests++;
    }
  }

  /** The call ended without an answer either way (aborted by its caller): only a probe's place is given back. */
  cancel(probe: boolean): void {
    if (probe) this.probes--;
  }

  /** The call failed with `error`; counts it when `isFailure` says so, else as an answer. */
  failed(probe: boolean, error: unknown): void {
    if (!this.options.isFailure(error)) return this.succeeded(probe);
    if (probe) {
      this.probes--;
      if (this.current === 'half-open') this.open(0, 0);
      return;
    }
    if (this.current !== 'closed') return;
    this.roll();
    this.requests++;
    this.failures++;
    const { maxFailures, minRequests, threshold } = this.options;
    if ((maxFailures !== undefined && this.failures >= maxFailures) || (this.requests >= minRequests && this.failures / this.requests >= threshold)) this.open(this.failures, this.requests);
  }

  /** Starts a new window once the current one is over. */
  private roll(): void {
    const now = performance.now();
    if (now - this.windowStart < this.options.windowMs) return;
    this.windowStart = now;
    this.requests = 0;
    this.failures = 0;
  }

  private open(failures: number, requests: number): void {
    this.openedAt = performance.now();
    this.current = 'open';
    this.onTransition({ destination: this.destination, state: 'open', failures, requests });
  }

  private close(): void {
    this.windowStart = performance.now();
    this.requests = 0;
    this.failures = 0;
    this.moveTo('closed');
  }

  private moveTo(state: CircuitState): void {
    this.current = state;
    this.onTransition({ destination: this.destination, state, failures: 0, requests: 0 });
  }
}
