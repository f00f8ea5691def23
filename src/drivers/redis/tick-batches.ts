// Writes made in the same tick, grouped by key (a list) and sent together on the next tick: one
// RPUSH for many requests or replies to the same list instead of one each (16 calls in flight
// answer in bursts, so their next requests and replies come in bursts too).

interface Batch<T> {
  readonly items: T[];
  readonly sent: Promise<void>;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Items added during one tick, grouped by key; each group goes to `send` once, on the next tick
 * (`process.nextTick`, so before any I/O), or at once when it reaches `max` items. `add` resolves
 * or rejects as `send` did for the group it joined.
 */
export class TickBatches<T> {
  private batches = new Map<string, Batch<T>>();

  constructor(
    private readonly max: number,
    private readonly send: (key: string, items: T[]) => Promise<void>,
  ) {}

  add(key: string, item: T): Promise<void> {
    let batch = this.batches.get(key);
    if (!batch || batch.items.length >= this.max) {
      if (this.batches.size === 0) process.nextTick(() => this.flush());
      if (batch) this.sendBatch(key, batch);
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const sent = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      batch = { items: [], sent, resolve, reject };
      this.batches.set(key, batch);
    }
    batch.items.push(item);
    return batch.sent;
  }

  /** Sends every group of this tick. */
  private flush(): void {
    const batches = this.batches;
    this.batches = new Map();
    for (const [key, batch] of batches) this.sendBatch(key, batch);
  }

  private sendBatch(key: string, batch: Batch<T>): void {
    let p: Promise<void>;
    try {
      p = this.send(key, batch.items);
    } catch (err) {
      p = Promise.reject(err);
    }
    p.then(batch.resolve, batch.reject);
  }
}
