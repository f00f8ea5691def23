// Offsets of the records a listener handed out, per partition: what may be committed. The same
// invariant as the AMQP ack batcher: never past a record still being handled, so the commit point
// of a partition is its lowest unsettled offset (or one past the highest settled when none is).
// Offsets are numbers: a Kafka offset stays far below 2^53 (at a million records a second, one
// partition reaches it after 285 years), and a number costs less to parse, hash and compare than a
// bigint for every record.
//
// A partition's records are handed out in offset order and nearly always settled in that order
// (the executor starts them in order), so the unsettled offsets are kept as a sorted queue: a
// record costs a push and, settled in order, a step of the queue's head. One settled out of order
// is found by binary search and taken out; the queue never holds more than the unsettled records.

/** Settled records at the queue's front before the queue is compacted (see settle). */
const COMPACT_AFTER = 256;

/** One partition's records handed out in this group generation, in offset order. */
export class PartitionOffsets {
  /** Unsettled offsets handed out, ascending, from index `head` on (what lies before is settled). */
  private queue: number[] = [];
  private head = 0;
  /** The highest offset handed out. */
  private last?: number;
  /** One past the highest settled offset. */
  private next?: number;
  /** The last position committed (or read from: nothing before it needs committing). */
  private committed?: number;

  /**
   * A record handed out, to be settled later. False, and nothing is tracked, for an offset at or
   * below one handed out before in this generation (the client read it again): the first
   * delivery's settling is what counts for that offset.
   */
  track(offset: number): boolean {
    this.committed ??= offset;
    if (this.last !== undefined && offset <= this.last) return false;
    this.last = offset;
    this.queue.push(offset);
    return true;
  }

  /** The record is done (handled, requeued elsewhere or skipped); false when it was not tracked or is settled already. */
  settle(offset: number): boolean {
    const queue = this.queue;
    if (this.head < queue.length && queue[this.head] === offset) {
      // Settled in order: the front is dropped now and then, not on every record (amortised O(1)).
      if (++this.head >= COMPACT_AFTER && this.head * 2 >= queue.length) {
        queue.splice(0, this.head);
        this.head = 0;
      }
    } else {
      const at = indexOf(queue, this.head, offset);
      if (at === -1) return false;
      queue.splice(at, 1);
    }
    if (this.next === undefined || offset + 1 > this.next) this.next = offset + 1;
    return true;
  }

  /** The position to commit now, or undefined when it would not move past the last commit. */
  commitPoint(): number | undefined {
    const point = this.head < this.queue.length ? this.queue[this.head] : this.next;
    if (point === undefined || (this.committed !== undefined && point <= this.committed)) return undefined;
    return point;
  }

  /** Records that `offset` was committed. */
  committedUpTo(offset: number): void {
    if (this.committed === undefined || offset > this.committed) this.committed = offset;
  }
}

/** The index of `offset` in the ascending `queue` at or after `from`, or -1. */
function indexOf(queue: readonly number[], from: number, offset: number): number {
  let lo = from;
  let hi = queue.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const at = queue[mid];
    if (at === offset) return mid;
    if (at < offset) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
