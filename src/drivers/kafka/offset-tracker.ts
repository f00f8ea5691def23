// Offsets of the records a listener handed out, per partition: what may be committed. The same
// invariant as the AMQP ack batcher: never past a record still being handled, so the commit point
// of a partition is its lowest unsettled offset (or one past the highest settled when none is).
// Offsets are numbers: a Kafka offset stays far below 2^53 (at a million records a second, one
// partition reaches it after 285 years), and a number costs less to parse, hash and compare than a
// bigint for every record.

/** One partition's records handed out in this group generation, in offset order. */
export class PartitionOffsets {
  /** Offsets handed out and not settled; a Set keeps insertion (= offset) order. */
  private readonly outstanding = new Set<number>();
  /** One past the highest settled offset. */
  private next?: number;
  /** The last position committed (or read from: nothing before it needs committing). */
  private committed?: number;

  /** A record handed out, to be settled later. */
  track(offset: number): void {
    this.committed ??= offset;
    this.outstanding.add(offset);
  }

  /** The record is done (handled, requeued elsewhere or skipped); false when it was not tracked. */
  settle(offset: number): boolean {
    if (!this.outstanding.delete(offset)) return false;
    if (this.next === undefined || offset + 1 > this.next) this.next = offset + 1;
    return true;
  }

  /** The position to commit now, or undefined when it would not move past the last commit. */
  commitPoint(): number | undefined {
    const lowest = this.outstanding.values().next();
    const point = lowest.done ? this.next : lowest.value;
    if (point === undefined || (this.committed !== undefined && point <= this.committed)) return undefined;
    return point;
  }

  /** Records that `offset` was committed. */
  committedUpTo(offset: number): void {
    if (this.committed === undefined || offset > this.committed) this.committed = offset;
  }

  /** Records handed out and not settled. */
  get pending(): number {
    return this.outstanding.size;
  }
}
