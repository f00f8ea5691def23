// The buffer between a broker's push-style delivery and a PollStyleListener's poll().
// Waiters are resolved directly on push, so a waiting poll costs no timer round trip; a waiting
// batch (`take`) costs one promise and at most one timer however many items fill it.
import { Fifo } from './fifo.js';

/** A `shift()` waiting for one item. */
interface ItemWaiter<T> {
  readonly batch: false;
  readonly resolve: (item: T | undefined) => void;
  timer?: ReturnType<typeof setTimeout>;
}

/** A `take()` waiting for its batch. */
interface BatchWaiter<T> {
  readonly batch: true;
  readonly resolve: (items: T[]) => void;
  /** Most items it takes. */
  readonly max: number;
  /** True when it has a deadline: it waits for `max` items (or the deadline) rather than for the first. */
  readonly deadline: boolean;
  timer?: ReturnType<typeof setTimeout>;
  /** Without a deadline: its first item arrived and it takes what is buffered once the pushing code is done. */
  scheduled?: boolean;
}

type Waiter<T> = ItemWaiter<T> | BatchWaiter<T>;

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

  /** Adds an item: straight to the oldest waiter of `shift()`, or towards the batch of the oldest `take()`. */
  push(item: T): void {
    const waiter = this.waiters[0];
    if (waiter !== undefined && !waiter.batch) {
      this.waiters.shift();
      if (waiter.timer) clearTimeout(waiter.timer);
      waiter.resolve(item);
      return;
    }
    this.items.push(item);
    if (waiter !== undefined) this.serve();
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
    if (this.size > 0 && this.waiters.length === 0) return Promise.resolve(this.items.shift());
    if (this.closedFlag || (timeoutMs !== undefined && timeoutMs <= 0)) return Promise.resolve(undefined);
    return new Promise<T | undefined>((resolve) => {
      const waiter: ItemWaiter<T> = { batch: false, resolve };
      if (timeoutMs !== undefined && timeoutMs <= MAX_TIMER_MS) waiter.timer = setTimeout(() => this.expire(waiter), timeoutMs);
      this.waiters.push(waiter);
    });
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
      const waiter: BatchWaiter<T> = { batch: true, resolve, max: want, deadline: timeoutMs !== undefined };
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

  /** Wakes every waiter (`shift()` with `undefined`, `take()` with what is buffered); later pushes are still buffered for draining. */
  close(): void {
    this.closedFlag = true;
    for (const waiter of this.waiters.splice(0)) this.settle(waiter);
  }

  /** Hands buffered items to the waiters in order, while the oldest one can be served. */
  private serve(): void {
    while (this.waiters.length > 0 && this.items.size > 0) {
      const waiter = this.waiters[0];
      if (waiter.batch && waiter.deadline && this.items.size < waiter.max) return;
      if (waiter.batch && !waiter.deadline) {
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
   * older waiters' first), and the next one is served. A batch without a deadline whose items were
   * taken meanwhile (drain()) waits on for the next.
   */
  private expire(waiter: Waiter<T>): void {
    const i = this.waiters.indexOf(waiter);
    if (i < 0) return;
    if (waiter.batch && !waiter.deadline && this.items.size === 0 && !this.closedFlag) {
      waiter.scheduled = false;
      return;
    }
    this.waiters.splice(i, 1);
    if (i > 0) {
      if (waiter.timer) clearTimeout(waiter.timer);
      if (waiter.batch) waiter.resolve([]);
      else waiter.resolve(undefined);
      return;
    }
    this.settle(waiter);
    this.serve();
  }

  /** Resolves a waiter that has left the queue, as the oldest, with what it takes of the buffer. */
  private settle(waiter: Waiter<T>): void {
    if (waiter.timer) clearTimeout(waiter.timer);
    if (waiter.batch) waiter.resolve(this.takeUpTo(waiter.max));
    else waiter.resolve(this.items.shift());
  }

  private takeUpTo(max: number): T[] {
    const n = Math.min(max, this.items.size);
    const out: T[] = new Array<T>(n);
    for (let i = 0; i < n; i++) out[i] = this.items.shift() as T;
    return out;
  }
}
