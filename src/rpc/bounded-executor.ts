// The RPC server's worker pool (oslo's executor_thread_pool_size): at most `size` tasks run at
// once, and submit() resolves only when a slot is free, which is how back-pressure reaches the
// listener and so the broker.

/** Runs async tasks with bounded concurrency. Tasks MUST NOT reject (handle errors inside). */
export class BoundedExecutor {
  private active = 0;
  /** submit() calls waiting for a slot (counted until their task has started). */
  private pending = 0;
  private readonly waiters: Array<() => void> = [];
  private idleWaiters: Array<() => void> = [];

  constructor(readonly size: number) {}

  /** Tasks running now. */
  get running(): number {
    return this.active;
  }

  /**
   * Starts `task` at once and returns true when a slot is free; otherwise starts nothing and
   * returns false. Lets a caller with a free slot skip submit()'s promise.
   */
  tryStart(task: () => Promise<void>): boolean {
    if (this.active >= this.size) return false;
    this.start(task);
    return true;
  }

  /** Resolves once `task` has started, waiting for a free slot first. */
  async submit(task: () => Promise<void>): Promise<void> {
    if (this.active < this.size) return this.start(task);
    this.pending++;
    try {
      while (this.active >= this.size) await new Promise<void>((resolve) => this.waiters.push(resolve));
    } finally {
      this.pending--;
    }
    this.start(task);
  }

  /** Resolves when every task submitted so far (and any submitted meanwhile) has finished. */
  drain(): Promise<void> {
    if (this.active === 0 && this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private start(task: () => Promise<void>): void {
    this.active++;
    let run: Promise<void>;
    try {
      run = task();
    } catch {
      // tasks handle their own errors; a synchronous throw only frees its slot
      run = Promise.resolve();
    }
    // The rejection handler only keeps a stray rejection from going unhandled.
    run.then(this.finished, this.finished);
  }

  private readonly finished = (): void => {
    this.active--;
    this.waiters.shift()?.();
    if (this.active === 0 && this.pending === 0 && this.idleWaiters.length > 0) for (const w of this.idleWaiters.splice(0)) w();
  };
}
