// Offsets of the records a listener handed out, per partition: what may be committed. The same
// invariant as the AMQP ack batcher, on the same structure (AscendingIds): never past a record
// still being handled, so the commit point of a partition is its lowest unsettled offset (or one
// past the highest settled when none is). Offsets are numbers: a Kafka offset stays far below 2^53
// (at a million records a second, one partition reaches it after 285 years), and a number costs
// less to parse and compare than a bigint for every record.
import { AscendingIds } from '../../structures/ascending-ids.js';

/** One partition's records handed out in this group generation, in offset order. */
export class PartitionOffsets {
  private readonly unsettled = new AscendingIds();
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
    return this.unsettled.add(offset);
  }

  /** The record is done (handled, requeued elsewhere or skipped); false when it was not tracked or is settled already. */
  settle(offset: number): boolean {
    if (!this.unsettled.delete(offset)) return false;
    if (this.next === undefined || offset + 1 > this.next) this.next = offset + 1;
    return true;
  }

  /** The position to commit now, or undefined when it would not move past the last commit. */
  commitPoint(): number | undefined {
    const point = this.unsettled.lowest() ?? this.next;
    if (point === undefined || (this.committed !== undefined && point <= this.committed)) return undefined;
    return point;
  }

  /** Records that `offset` was committed. */
  committedUpTo(offset: number): void {
    if (this.committed === undefined || offset > this.committed) this.committed = offset;
  }
}
