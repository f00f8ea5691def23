// The listener's bounded executor: at most `size` handlers in flight; `acquire()` waits for a
// slot, which is how back-pressure reaches the driver's poll loop and the broker's prefetch.

/** A counting semaphore with a drain signal. */
export class BoundedExecutor {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  private idleWaiters: Array<() => void> = [];

  constructor(readonly size: number) {}

  /** Handlers currently running. */
  get inFlight(): number {
    return this.active;
  }

  /** Resolves once a slot is free and taken; pair every acquire with one `release()`. */
  acquire(): Promise<void> {
    if (this.active < this.size) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    // The slot passes straight to the next waiter, so the count does not change.
    if (next) return next();
    this.active--;
    if (this.active === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  /** Takes a slot (waiting if needed), then runs `task` in the background and frees the slot after it. */
  async submit(task: () => Promise<void>): Promise<void> {
    await this.acquire();
    this.run(task);
  }

  /** Runs `task` at once and returns true when a slot is free; otherwise starts nothing and returns false. */
  tryStart(task: () => Promise<void>): boolean {
    if (this.active >= this.size) return false;
    this.active++;
    this.run(task);
    return true;
  }

  private run(task: () => Promise<void>): void {
    // Tasks handle their own failures; the rejection handler only keeps a bug from becoming an unhandled rejection.
    task().then(this.released, this.released);
  }

  private readonly released = (): void => this.release();

  /** Resolves once nothing runs and nothing waits for a slot. */
  idle(): Promise<void> {
    if (this.active === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
