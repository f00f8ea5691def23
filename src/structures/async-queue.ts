// The buffer between a broker's push-style delivery and a PollStyleListener's poll().
// Waiters are served directly on push, so a waiting poll costs no timer round trip; a waiting
// batch (`take`) costs one promise and at most one timer however many items fill it.
import { Fifo } from './fifo.js';

/** A `take()` (or `shift()`, a take of one) waiting for its items. */
interface Waiter<T> {
  readonly resolve: (items: T[]) => void;
  /** Most items it takes. */
  readonly max: number;
  /** True when it has a deadline: it waits for `max` items (or the deadline) rather than for the first. */
  readonly deadline: boolean;
  timer?: ReturnType<typeof setTimeout>;
  /** Without a deadline: its first item arrived and it takes what is buffered once the pushing code is done. */
  scheduled?: boolean;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/** An unbounded FIFO whose `shift()` and `take()` wait for items, a timeout, or `close()`. */
export class AsyncQueue<T> {
  private readonly items = new Fifo<T>();
  private readonly waiters: Waiter<T>[] = [];
  private closedFlag = false;

  /** Items waiting to be taken. */
  get size(): number {
    return this.items.size;
  }

  /** True after `close()`: waiters are woken and `shift()` no longer waits. */
  get closed(): boolean {
    return this.closedFlag;
  }

  /** Adds an item, serving the oldest waiter with it (at once, or towards its batch). */
  push(item: T): void {
    this.items.push(item);
    if (this.waiters.length > 0) this.serve();
  }

  /** Puts an item back at the front (e.g. a message that could not be handed out). */
  unshift(item: T): void {
    this.items.unshift(item);
    this.serve();
  }

  /**
   * Resolves with the next item; with `undefined` after `timeoutMs` (undefined = no limit) or
   * once the queue is closed and empty. A closed queue still hands out what it holds.
   */
  shift(timeoutMs?: number): Promise<T | undefined> {
    return this.take(1, timeoutMs).then((items) => items[0]);
  }

  /**
   * Resolves with 1..`max` items under ONE stopwatch, as `batchPoll` over `shift()` would, without a
   * promise per item: with a `timeoutMs`, once `max` items are buffered or when it passes (with what
   * is buffered, possibly none); without one, once an item arrives, taking what is buffered by then.
   * At once when the queue is closed (with what it holds) or `timeoutMs` <= 0. A `timeoutMs` too
   * large for a timer means no deadline for the batch to fill. `max` below 1 counts as 1.
   */
  take(max: number, timeoutMs?: number): Promise<T[]> {
    const want = Math.max(1, max);
    const size = this.size;
    if (this.waiters.length === 0 && (size >= want || (size > 0 && timeoutMs === undefined))) return Promise.resolve(this.takeUpTo(want));
    if (this.closedFlag || (timeoutMs !== undefined && timeoutMs <= 0)) return Promise.resolve(this.waiters.length === 0 ? this.takeUpTo(want) : []);
    return new Promise<T[]>((resolve) => {
      const waiter: Waiter<T> = { resolve, max: want, deadline: timeoutMs !== undefined };
      // setTimeout fires after 1 ms for delays it cannot hold (> 2^31-1 ms, Infinity): treat those as no limit.
      if (timeoutMs !== undefined && timeoutMs <= MAX_TIMER_MS) waiter.timer = setTimeout(() => this.expire(waiter), timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Takes the next buffered item without waiting; undefined when none is buffered. */
  tryShift(): T | undefined {
    return this.items.shift();
  }

  /** Takes every buffered item at once. */
  drain(): T[] {
    return this.items.drain();
  }

  /** Wakes every waiter with what is buffered, oldest first (`shift()` with `undefined` when nothing is); later pushes are still buffered for draining. */
  close(): void {
    this.closedFlag = true;
    for (const waiter of this.waiters.splice(0)) this.settle(waiter);
  }

  /** Hands buffered items to the waiters in order, while the oldest one can be served. */
  private serve(): void {
    while (this.waiters.length > 0 && this.items.size > 0) {
      const waiter = this.waiters[0];
      if (waiter.deadline && this.items.size < waiter.max) return;
      if (!waiter.deadline) {
        // The first item arrived: take what is buffered once the code pushing it is done.
        if (!waiter.scheduled) {
          waiter.scheduled = true;
          queueMicrotask(() => this.expire(waiter));
        }
        return;
      }
      this.waiters.shift();
      this.settle(waiter);
    }
  }

  /**
   * A waiter's time is up: it leaves the queue, the oldest with what it can take (the buffer is the
   * older waiters' first, so a later one takes nothing), and the next one is served. A waiter
   * without a deadline whose items were taken meanwhile (drain()) waits on for the next.
   */
  private expire(waiter: Waiter<T>): void {
    const i = this.waiters.indexOf(waiter);
    if (i < 0) return;
    if (!waiter.deadline && this.items.size === 0 && !this.closedFlag) {
      waiter.scheduled = false;
      return;
    }
    this.waiters.splice(i, 1);
    this.settle(waiter, i === 0);
    if (i === 0) this.serve();
  }

  /** Resolves a waiter that has left the queue: with what it takes of the buffer when it was the oldest, else with nothing. */
  private settle(waiter: Waiter<T>, oldest = true): void {
    if (waiter.timer) clearTimeout(waiter.timer);
    waiter.resolve(oldest ? this.takeUpTo(waiter.max) : []);
  }

  private takeUpTo(max: number): T[] {
    const n = Math.min(max, this.items.size);
    const out: T[] = new Array<T>(n);
    for (let i = 0; i < n; i++) out[i] = this.items.shift() as T;
    return out;
  }
}
