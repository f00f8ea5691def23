// The buffer between a broker's delivery and a PollStyleListener's poll(). A waiting take is
// served on push, costing one promise and at most one timer; it never waits for a batch to fill:
// collecting a batch under one stopwatch is batchPoll's job, which passes it the time left.
import { Fifo } from './fifo.js';
import { MAX_TIMER_MS } from '../core/checks.js';

/** A `takeInto()` (or `take()`, `shift()`) waiting for its first item. */
interface Waiter<T> {
  /** Where its items go. */
  readonly into: T[];
  /** Called with how many items it appended to `into`. */
  readonly resolve: (count: number) => void;
  /** Most items it takes. */
  readonly max: number;
  timer?: ReturnType<typeof setTimeout>;
  /** Its first item arrived: it takes what is buffered once the pushing code is done. */
  scheduled?: boolean;
}


/** An unbounded FIFO whose `shift()` and `take()` wait for items, a timeout, or `close()`. */
export class AsyncQueue<T> {
  private readonly items = new Fifo<T>();
  private readonly waiters: Waiter<T>[] = [];
  private closedFlag = false;

  /** Items waiting to be taken. */
  get size(): number {
    return this.items.size;
  }

  /** Takes waiting for items (a pull source fetches while someone waits). */
  get waiting(): number {
    return this.waiters.length;
  }

  /** True after `close()`: waiters are woken and `shift()` no longer waits. */
  get closed(): boolean {
    return this.closedFlag;
  }

  /** Adds an item, serving the oldest waiter with it. */
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
   * Resolves with 1..`max` items as soon as one is buffered, taking what the pushing code has
   * buffered by then (so a burst is one take, not one per item); with none after `timeoutMs`
   * (undefined, or too large for a timer: no limit) or once the queue is closed and empty.
   * At once when items are buffered (and no older take waits), the queue is closed or
   * `timeoutMs` <= 0. `max` below 1 counts as 1.
   */
  take(max: number, timeoutMs?: number): Promise<T[]> {
    const out: T[] = [];
    return this.takeInto(out, max, timeoutMs).then(() => out);
  }

  /**
   * `take()` appending to `into`, resolving with how many items it appended. The items move from
   * the queue to `into` at once (never in flight in between), so a caller can still find them.
   */
  takeInto(into: T[], max: number, timeoutMs?: number): Promise<number> {
    const want = Math.max(1, max);
    if (this.waiters.length === 0 && this.items.size > 0) return Promise.resolve(this.moveTo(into, want));
    if (this.closedFlag || (timeoutMs !== undefined && timeoutMs <= 0)) return Promise.resolve(this.waiters.length === 0 ? this.moveTo(into, want) : 0);
    return new Promise<number>((resolve) => {
      const waiter: Waiter<T> = { into, resolve, max: want };
      // setTimeout fires after 1 ms for delays it cannot hold (> 2^31-1 ms, Infinity): treat those as no limit.
      if (timeoutMs !== undefined && timeoutMs <= MAX_TIMER_MS) waiter.timer = setTimeout(() => this.expire(waiter, true), timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /**
   * Moves up to `max` buffered items to the end of `into` without waiting and returns how many:
   * a take that costs no promise. None while an older take waits (the buffer is its first).
   */
  takeReady(into: T[], max: number): number {
    return this.waiters.length === 0 ? this.moveTo(into, Math.max(1, max)) : 0;
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

  /** The oldest waiter's first item arrived: it takes what is buffered once the code pushing it is done. */
  private serve(): void {
    const waiter = this.waiters[0];
    if (waiter === undefined || waiter.scheduled || this.items.size === 0) return;
    waiter.scheduled = true;
    queueMicrotask(() => this.expire(waiter));
  }

  /**
   * A waiter's time is up, or its items are here: it leaves the queue, the oldest with what it can
   * take (the buffer is the older waiters' first, so a later one takes nothing), and the next one is
   * served. One whose items were taken meanwhile (drain()) waits on for the next, timer running.
   */
  private expire(waiter: Waiter<T>, timedOut = false): void {
    const i = this.waiters.indexOf(waiter);
    if (i < 0) return;
    waiter.scheduled = false;
    if (!timedOut && this.items.size === 0) return;
    this.waiters.splice(i, 1);
    this.settle(waiter, i === 0);
    if (i === 0) this.serve();
  }

  /** Resolves a waiter that has left the queue: with what it takes of the buffer when it was the oldest, else with nothing. */
  private settle(waiter: Waiter<T>, oldest = true): void {
    if (waiter.timer) clearTimeout(waiter.timer);
    waiter.resolve(oldest ? this.moveTo(waiter.into, waiter.max) : 0);
  }

  /** Moves up to `max` items to the end of `into`; returns how many. */
  private moveTo(into: T[], max: number): number {
    const n = Math.min(max, this.items.size);
    for (let i = 0; i < n; i++) into.push(this.items.shift() as T);
    return n;
  }
}
