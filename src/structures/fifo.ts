// A first-in first-out buffer for drivers and listeners: Array#shift is O(n) once an array is
// large, which makes draining a burst quadratic; this is O(1) for push, shift and unshift.

/** A FIFO with O(1) `push`, `shift` and `unshift` (putting an item back at the front). */
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  /** Items held. */
  get size(): number {
    return this.items.length - this.head;
  }

  /** Adds an item at the back. */
  push(item: T): void {
    this.items.push(item);
  }

  /** Puts an item back at the front (e.g. a message given back for redelivery). */
  unshift(item: T): void {
    if (this.head > 0) this.items[--this.head] = item;
    else this.items.unshift(item);
  }

  /** Takes the front item; undefined when empty. */
  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    // Reclaim the consumed prefix once it is most of the array.
    if (this.head === this.items.length || (this.head > 1024 && this.head * 2 > this.items.length)) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** How many items match `predicate`, without taking any (O(n)). */
  count(predicate: (item: T) => boolean): number {
    let n = 0;
    for (let i = this.head; i < this.items.length; i++) if (predicate(this.items[i] as T)) n++;
    return n;
  }

  /** Takes every item at once, front first. */
  drain(): T[] {
    const out = this.items.slice(this.head) as T[];
    this.items = [];
    this.head = 0;
    return out;
  }
}
