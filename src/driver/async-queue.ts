// The buffer between a broker's push-style delivery and a PollStyleListener's poll().
// Waiters are resolved directly on push, so a waiting poll costs no timer round trip.

interface Waiter<T> {
  resolve: (item: T | undefined) => void;
  timer?: ReturnType<typeof setTimeout>;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/** An unbounded FIFO whose `shift()` waits for an item, a timeout, or `close()`. */
export class AsyncQueue<T> {
  private items: T[] = [];
  private head = 0;
  private readonly waiters: Waiter<T>[] = [];
  private closedFlag = false;

  /** Items waiting to be taken. */
  get size(): number {
    return this.items.length - this.head;
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
    if (this.head > 0) this.items[--this.head] = item;
    else this.items.unshift(item);
  }

  /**
   * Resolves with the next item; with `undefined` after `timeoutMs` (undefined = no limit) or
   * once the queue is closed and empty. A closed queue still hands out what it holds.
   */
  shift(timeoutMs?: number): Promise<T | undefined> {
    if (this.size > 0) return Promise.resolve(this.take());
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
    return this.size > 0 ? this.take() : undefined;
  }

  /** Takes every buffered item at once. */
  drain(): T[] {
    const out = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    return out;
  }

  /** Wakes every waiter with `undefined`; later pushes are still buffered for draining. */
  close(): void {
    this.closedFlag = true;
    for (const w of this.waiters.splice(0)) {
      if (w.timer) clearTimeout(w.timer);
      w.resolve(undefined);
    }
  }

  private take(): T {
    const item = this.items[this.head];
    this.items[this.head] = undefined as T;
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}
