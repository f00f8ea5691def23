// The RPC server's worker pool (oslo's executor_thread_pool_size): at most `size` tasks run at
// once, and submit() resolves only when a slot is free, which is how back-pressure reaches the
// listener and so the broker.

/** Runs async tasks with bounded concurrency. Tasks MUST NOT reject (handle errors inside). */
export class BoundedExecutor {
  private active = 0;
  private readonly waiters: Array<() => void> = [];
  private readonly inFlight = new Set<Promise<void>>();

  constructor(readonly size: number) {}

  /** Tasks running now. */
  get running(): number {
    return this.active;
  }

  /** Resolves once `task` has started, waiting for a free slot first. */
  async submit(task: () => Promise<void>): Promise<void> {
    while (this.active >= this.size) await new Promise<void>((resolve) => this.waiters.push(resolve));
    this.active++;
    // Started in a microtask so `run` exists when the task settles, even if it throws at once.
    const run: Promise<void> = Promise.resolve()
      .then(task)
      .catch(() => {}) // tasks handle their own errors; this only keeps a stray rejection unhandled-free
      .finally(() => {
        this.active--;
        this.inFlight.delete(run);
        this.waiters.shift()?.();
      });
    this.inFlight.add(run);
  }

  /** Resolves when every task submitted so far (and any submitted meanwhile) has finished. */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }
}
