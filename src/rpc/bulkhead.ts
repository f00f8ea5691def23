// A client's bulkhead (Moleculer's `bulkhead`): at most `maxConcurrent` calls in flight, up to
// `maxQueue` more waiting in order, and BulkheadFullError at once past that.
import { AbortError, BulkheadFullError, InvalidArgument } from '../core/errors.js';
import { isPlainObject } from '../core/json-check.js';
import { Fifo } from '../structures/fifo.js';

/** Options of `RpcClientOptions.bulkhead`. */
export interface RpcBulkheadOptions {
  /** Calls in flight at once (sent and waiting for their reply). @default 10 */
  maxConcurrent?: number;
  /** Calls waiting for a slot, in order; one more is refused with BulkheadFullError. 0 = no queue. @default 100 */
  maxQueue?: number;
}

/** Defaults of RpcBulkheadOptions. */
export const RPC_BULKHEAD_DEFAULTS = Object.freeze({
  /** Calls in flight at once. */
  maxConcurrent: 10,
  /** Calls waiting for a slot. */
  maxQueue: 100,
});

/** What `RpcClient.bulkhead` shows. */
export interface RpcBulkheadState {
  /** Calls holding a slot (sent and waiting for their reply). */
  readonly inFlight: number;
  /** Calls waiting for a slot. */
  readonly queued: number;
  /** The bulkhead's `maxConcurrent`. */
  readonly maxConcurrent: number;
  /** The bulkhead's `maxQueue`. */
  readonly maxQueue: number;
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
  settled: boolean;
}

/** Slots for the calls of one client (and of the clients `prepare()`d from it). */
export class Bulkhead implements RpcBulkheadState {
  /** Calls in flight at once. */
  readonly maxConcurrent: number;
  /** Calls waiting at most. */
  readonly maxQueue: number;
  private running = 0;
  private readonly waiting = new Fifo<Waiter>();
  private waitingCount = 0;

  /** Checks `options` (true = the defaults). @throws InvalidArgument naming the field. */
  constructor(options: unknown) {
    const o = options === true ? {} : options;
    if (!isPlainObject(o)) throw new InvalidArgument('bulkhead', 'true or an object {maxConcurrent?, maxQueue?}', options);
    for (const key of Object.keys(o)) if (key !== 'maxConcurrent' && key !== 'maxQueue') throw new InvalidArgument(`bulkhead.${key}`, 'one of maxConcurrent, maxQueue', key);
    const maxConcurrent = o.maxConcurrent ?? RPC_BULKHEAD_DEFAULTS.maxConcurrent;
    if (typeof maxConcurrent !== 'number' || !Number.isInteger(maxConcurrent) || maxConcurrent < 1) throw new InvalidArgument('bulkhead.maxConcurrent', 'an integer >= 1', maxConcurrent);
    const maxQueue = o.maxQueue ?? RPC_BULKHEAD_DEFAULTS.maxQueue;
    if (typeof maxQueue !== 'number' || !Number.isInteger(maxQueue) || maxQueue < 0) throw new InvalidArgument('bulkhead.maxQueue', 'an integer >= 0', maxQueue);
    this.maxConcurrent = maxConcurrent;
    this.maxQueue = maxQueue;
  }

  /** Calls holding a slot. */
  get inFlight(): number {
    return this.running;
  }

  /** Calls waiting for a slot. */
  get queued(): number {
    return this.waitingCount;
  }

  /**
   * Takes a slot: synchronously (undefined) when one is free, else a promise resolved when one
   * is; throws BulkheadFullError when the queue is full. The promise rejects with AbortError
   * when `signal` aborts first. Every slot taken MUST be given back with `release()`.
   */
  acquire(signal?: AbortSignal): Promise<void> | undefined {
    if (this.running < this.maxConcurrent) {
      this.running++;
      return undefined;
    }
    if (this.waitingCount >= this.maxQueue) {
      throw new BulkheadFullError(`The client's bulkhead is full: ${this.running} call(s) in flight (maxConcurrent ${this.maxConcurrent}) and ${this.waitingCount} waiting (maxQueue ${this.maxQueue}); call refused without sending`, this.maxConcurrent, this.maxQueue);
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, signal, settled: false };
      if (signal !== undefined) {
        waiter.onAbort = () => {
          if (waiter.settled) return;
          waiter.settled = true;
          this.waitingCount--;
          reject(new AbortError('The operation was aborted while waiting for a bulkhead slot', { cause: signal.reason }));
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.waiting.push(waiter);
      this.waitingCount++;
    });
  }

  /** Gives a slot back: to the first waiter still waiting, else to the pool. */
  release(): void {
    for (let w = this.waiting.shift(); w !== undefined; w = this.waiting.shift()) {
      if (w.settled) continue;
      w.settled = true;
      this.waitingCount--;
      if (w.onAbort) w.signal!.removeEventListener('abort', w.onAbort);
      w.resolve();
      return;
    }
    this.running--;
  }
}
