// Duplicate suppression on `_unique_id` over a bounded window (oslo keeps 16; we default larger).

/** Remembers the last `size` ids; O(1) check and insert. */
export class DuplicateMessageChecker {
  private readonly ring: (string | undefined)[];
  private readonly seen = new Set<string>();
  private next = 0;

  constructor(
    /** How many ids are remembered. @default 4096 */
    readonly size: number = 4096,
  ) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`DuplicateMessageChecker size must be a positive integer, received ${size}`);
    this.ring = new Array(size);
  }

  /** True when `id` is in the window. */
  has(id: string): boolean {
    return this.seen.has(id);
  }

  /** Records an id; the oldest id falls out of the window when it is full. */
  add(id: string): void {
    if (!this.seen.has(id)) this.insert(id);
  }

  /** Returns true (and records nothing) when `id` was already seen; otherwise records it. */
  checkAndAdd(id: string): boolean {
    if (this.seen.has(id)) return true;
    this.insert(id);
    return false;
  }

  /** Records an id known to be new (one Set lookup per message instead of two). */
  private insert(id: string): void {
    const old = this.ring[this.next];
    if (old !== undefined) this.seen.delete(old);
    this.ring[this.next] = id;
    this.seen.add(id);
    this.next = (this.next + 1) % this.size;
  }
}
