// Ids handed out in ascending order and settled in any order, nearly always the oldest first: an
// AMQP channel's delivery tags, a Kafka partition's offsets. Both drivers ask the same of them:
// which are still unsettled, and the lowest of those (how far a multiple-ack or a commit may go).
// Kept as a sorted queue: an id costs a push and, settled oldest first, a step of the queue's head;
// one settled out of order is found by binary search and taken out. It never holds more than the
// unsettled ids, where a Set would cost a hash insert and delete for each.

/** Settled ids at the queue's front before it is compacted (see delete). */
const COMPACT_AFTER = 256;

/** Unsettled ids, handed out in ascending order. */
export class AscendingIds {
  /** The ids, ascending, from index `head` on (what lies before is settled). */
  private queue: number[] = [];
  private head = 0;
  /** The highest id ever added. */
  private last?: number;

  /** Adds `id`; false, and nothing changes, when it is not above every id added before. */
  add(id: number): boolean {
    if (this.last !== undefined && id <= this.last) return false;
    this.last = id;
    this.queue.push(id);
    return true;
  }

  /** Takes `id` out; false when it is not held (never added, or taken out already). */
  delete(id: number): boolean {
    const queue = this.queue;
    if (this.head < queue.length && queue[this.head] === id) {
      // The oldest: the front is dropped now and then, not on every id (amortised O(1)).
      if (++this.head >= COMPACT_AFTER && this.head * 2 >= queue.length) {
        queue.splice(0, this.head);
        this.head = 0;
      }
      return true;
    }
    const at = indexOf(queue, this.head, id);
    if (at === -1) return false;
    queue.splice(at, 1);
    return true;
  }

  /** The lowest id held, or undefined when none is. */
  lowest(): number | undefined {
    return this.head < this.queue.length ? this.queue[this.head] : undefined;
  }

  /** How many ids are held. */
  get size(): number {
    return this.queue.length - this.head;
  }
}

/** The index of `id` in the ascending `queue` at or after `from`, or -1. */
function indexOf(queue: readonly number[], from: number, id: number): number {
  let lo = from;
  let hi = queue.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const at = queue[mid];
    if (at === id) return mid;
    if (at < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
