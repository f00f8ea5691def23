// The buffer between a broker's push-style delivery and a PollStyleListener's poll().
// Waiters are resolved directly on push, so a waiting poll costs no timer round trip.
import { Fifo } from './fifo.js';

interface Waiter<T> {
  resolve: (item: T | undefined) => void;
  timer?: ReturnType<typeof setTimeout>;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/** An unbounded FIFO whose `shift()` waits for an item, a timeout, or `close()`. */
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

  /** Adds an item, handing it straight to the oldest waiter if there is one. */
  push(item: T): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      if (waiter.timer) clearTimeout(waiter.timer);
      waiter.resolve(item);
      return;
    }
    this.items.push(item);
  }

  /** Puts an item back at the front (e.g. a message that could not be handed out). */
  unshift(item: T): void {
    this.items.unshift(item);
  }

  /**
   * Resolves with the next item; with `undefined` after `timeoutMs` (undefined = no limit) or
   * once the queue is closed and empty. A closed queue still hands out what it holds.
   */
  shift(timeoutMs?: number): Promise<T | undefined> {
    if (this.size > 0) return Promise.resolve(this.items.shift());
    if (this.closedFlag || (timeoutMs !== undefined && timeoutMs <= 0)) return Promise.resolve(undefined);
    return new Promise<T | undefined>((resolve) => {
      const waiter: Waiter<T> = { resolve };
      // setTimeout fires after 1 ms for delays it cannot hold (> 2^31-1 ms, Infinity): treat those as no limit.
      if (timeoutMs !== undefined && timeoutMs <= MAX_TIMER_MS) {
        waiter.timer = setTimeout(() => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          resolve(undefined);
        }, timeoutMs);
      }
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

  /** Wakes every waiter with `undefined`; later pushes are still buffered for draining. */
  close(): void {
    this.closedFlag = true;
    for (const w of this.waiters.splice(0)) {
      if (w.timer) clearTimeout(w.timer);
      w.resolve(undefined);
    }
  }
}
