// One handler run under a `handlerTimeout`: the AbortSignal its handler gets, and the one claim
// that decides who answers the caller or settles the message, the handler or the deadline.
import { performance } from 'node:perf_hooks';
import { InvalidArgument } from '../core/errors.js';
import { MAX_TIMER_MS } from '../core/checks.js';

/**
 * Made by the lifecycle for each message (or batch) only when a `handlerTimeout` is set. The
 * façade calls `claim()` before it replies or settles; the deadline claims too before it answers
 * with a HandlerTimeout. Whoever claims first acts; the other does nothing, so a caller never
 * gets two replies and a message is never settled twice.
 */
export class HandlerRun {
  /** performance.now() when the handler was called. */
  readonly startedAt = performance.now();
  /** True once the deadline claimed the outcome and freed the executor slot. */
  expired = false;
  private readonly controller = new AbortController();
  private claimed = false;

  /** Aborts at the deadline (reason: the HandlerTimeout); never otherwise. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** True for the first caller only: it answers or settles; any later one must drop its outcome. */
  claim(): boolean {
    if (this.claimed) return false;
    this.claimed = true;
    return true;
  }

  /** Aborts the signal. A throwing abort listener is the handler's bug, not the server's. */
  abort(reason: Error): void {
    try {
      this.controller.abort(reason);
    } catch {
      // EventTarget reports listener errors itself; nothing to undo here
    }
  }

  /** Milliseconds since the handler was called, rounded. */
  elapsedMs(): number {
    return Math.round(performance.now() - this.startedAt);
  }
}

/** What a timed-out run's façade learns at the deadline, and what its `handlerTimeout` event carries. */
export interface Expiry {
  /** The configured `handlerTimeout`, ms. */
  timeoutMs: number;
  /** Milliseconds the handler had run when it was given up on. */
  elapsedMs: number;
}

/** `handlerTimeout`: absent, or a positive number of milliseconds a timer can hold. */
export function checkHandlerTimeout(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_TIMER_MS) throw new InvalidArgument('handlerTimeout', `a positive number of milliseconds up to ${MAX_TIMER_MS}`, value);
  return value;
}
