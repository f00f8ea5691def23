// Duplicate suppression on `_unique_id` over a bounded window (oslo keeps 16; we default larger),
// and the ids of messages still being handled, in one map: a notification costs four map
// operations (look up and mark on receipt with `begin`, move into the window and evict the oldest
// with `add` once handled) where a window and a separate in-flight set cost seven.

/** What the map says of an id: handled (acknowledged), one of the last `size`... */
const IN_WINDOW = 0;
/** ...or handed out and not settled yet (`begin` without `add` or `drop`). */
const IN_FLIGHT = 1;

/** Remembers the last `size` ids, and the ids being handled; O(1) check and insert. */
export class DuplicateMessageChecker {
  private readonly ring: (string | undefined)[];
  private readonly ids = new Map<string, typeof IN_WINDOW | typeof IN_FLIGHT>();
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
    return this.ids.get(id) === IN_WINDOW;
  }

  /** Records an id (one being handled moves into the window); the oldest id falls out of the window when it is full. */
  add(id: string): void {
    if (this.ids.get(id) !== IN_WINDOW) this.insert(id);
  }

  /** Returns true (and records nothing) when `id` is in the window or being handled; otherwise records it. */
  checkAndAdd(id: string): boolean {
    if (this.ids.has(id)) return true;
    this.insert(id);
    return false;
  }

  /** Marks `id` as being handled; false (and nothing changes) when it is in the window or already being handled. */
  begin(id: string): boolean {
    if (this.ids.has(id)) return false;
    this.ids.set(id, IN_FLIGHT);
    return true;
  }

  /** `id` is no longer being handled, and was not handled (requeued, or its delivery abandoned): forgotten, so it may come again. */
  drop(id: string): void {
    if (this.ids.get(id) === IN_FLIGHT) this.ids.delete(id);
  }

  /** Records an id not in the window yet. */
  private insert(id: string): void {
    const old = this.ring[this.next];
    if (old !== undefined) this.ids.delete(old);
    this.ring[this.next] = id;
    this.ids.set(id, IN_WINDOW);
    this.next = this.next + 1 === this.size ? 0 : this.next + 1;
  }
}
