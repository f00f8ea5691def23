// The worker pool of the RPC server and the notification listeners (oslo's executor): at most
// `size` tasks run at once, and submit() resolves only once its task has a slot, which is how
// back-pressure reaches the driver's listener and so the broker.

/**
 * Runs async tasks with bounded concurrency. A freed slot passes straight to the oldest waiting
 * `submit()` or `acquire()`, so waiting tasks start in order and `tryStart()`/`tryAcquire()`
 * never overtake them. The server lifecycle takes slots itself (`tryAcquire`/`acquire`, then
 * `release`) so that it runs handlers without a closure per message.
 * Tasks SHOULD NOT reject (they handle their own errors); one that rejects or throws only frees
 * its slot.
 */
export class BoundedExecutor {
  private active = 0;
  /** submit()/acquire() calls waiting for a slot; each is handed one by a finishing task. */
  private readonly waiting: Array<() => void> = [];
  private idleWaiters: Array<() => void> = [];

  /** @param size Most tasks running at once; the caller validates it (a positive integer). */
  constructor(readonly size: number) {}

  /** Tasks running now (at most `size`). */
  get running(): number {
    return this.active;
  }

  /**
   * Starts `task` at once and returns true when a slot is free; otherwise starts nothing and
   * returns false. The hot path: a caller with a free slot skips submit()'s promise.
   */
  tryStart(task: () => Promise<void> | void): boolean {
    if (!this.tryAcquire()) return false;
    this.run(task);
    return true;
  }

  /** Resolves once `task` has started, waiting for a free slot first (after earlier waiters). */
  async submit(task: () => Promise<void> | void): Promise<void> {
    // A free slot starts the task synchronously, as tryStart() would.
    if (!this.tryAcquire()) await this.acquire();
    this.run(task);
  }

  /**
   * Takes a slot and returns true when one is free (never ahead of a waiting `acquire()`);
   * otherwise takes nothing and returns false. Whoever took the slot MUST `release()` it once.
   * The server lifecycle runs its handlers this way, with no closure per message.
   */
  tryAcquire(): boolean {
    if (this.active >= this.size) return false;
    this.active++;
    return true;
  }

  /** Resolves once a slot is taken, after earlier waiters; MUST be followed by one `release()`. */
  acquire(): Promise<void> {
    if (this.active < this.size) {
      this.active++;
      return Promise.resolve();
    }
    // The releasing task hands its slot over without freeing it, so the count stays right.
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Resolves when every task started or waiting so far (and any added meanwhile) has finished. */
  drain(): Promise<void> {
    if (this.active === 0 && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private run(task: () => Promise<void> | void): void {
    let running: Promise<void> | void;
    try {
      running = task();
    } catch {
      // Tasks handle their own errors; a synchronous throw only frees its slot.
      running = undefined;
    }
    // A task that finished synchronously frees its slot now; the rejection handler only keeps a
    // task's bug from becoming an unhandled rejection.
    if (running === undefined) this.release();
    else running.then(this.release, this.release);
  }

  /** Frees a slot taken by `tryAcquire()`/`acquire()`: the oldest waiter gets it, else it is free. Bound, so it can be passed as a callback. */
  readonly release = (): void => {
    const next = this.waiting.shift();
    if (next) return next();
    this.active--;
    if (this.active === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  };
}
