import { describe, expect, it } from 'vitest';
import { PartitionOffsets } from '../../../src/drivers/kafka/offset-tracker.js';

/** Tracks `offsets` in order on a fresh partition. */
function tracked(...offsets: number[]): PartitionOffsets {
  const p = new PartitionOffsets();
  for (const o of offsets) expect(p.track(o)).toBe(true);
  return p;
}

describe('PartitionOffsets (what a Kafka listener may commit)', () => {
  it('commits nothing before a record is settled, and never past the lowest unsettled one', () => {
    const p = tracked(10, 11, 12);
    expect(p.commitPoint()).toBeUndefined();
    expect(p.settle(11)).toBe(true);
    expect(p.commitPoint()).toBeUndefined();
    expect(p.settle(10)).toBe(true);
    expect(p.commitPoint()).toBe(12);
    expect(p.settle(12)).toBe(true);
    expect(p.commitPoint()).toBe(13);
  });

  it('settles each tracked offset once, and nothing it did not track', () => {
    const p = tracked(5, 6, 9);
    expect(p.settle(7)).toBe(false);
    expect(p.settle(6)).toBe(true);
    expect(p.settle(6)).toBe(false);
    expect(p.settle(5)).toBe(true);
    expect(p.settle(5)).toBe(false);
    expect(p.settle(4)).toBe(false);
    expect(p.commitPoint()).toBe(9);
    expect(p.settle(9)).toBe(true);
    expect(p.settle(9)).toBe(false);
    expect(p.commitPoint()).toBe(10);
  });

  it('skips gaps in the offsets (transaction markers, compacted records)', () => {
    const p = tracked(3, 7, 20);
    p.settle(3);
    expect(p.commitPoint()).toBe(7);
    p.settle(20);
    expect(p.commitPoint()).toBe(7);
    p.settle(7);
    expect(p.commitPoint()).toBe(21);
  });

  it('does not track an offset at or below one handed out before (a record read again)', () => {
    const p = tracked(1, 2);
    expect(p.track(2)).toBe(false);
    expect(p.track(1)).toBe(false);
    p.settle(1);
    p.settle(2);
    expect(p.track(2)).toBe(false);
    expect(p.settle(2)).toBe(false);
    expect(p.track(3)).toBe(true);
    expect(p.commitPoint()).toBe(3);
  });

  it('does not move below the last commit', () => {
    const p = tracked(100, 101);
    p.settle(100);
    expect(p.commitPoint()).toBe(101);
    p.committedUpTo(101);
    expect(p.commitPoint()).toBeUndefined();
    p.settle(101);
    expect(p.commitPoint()).toBe(102);
    p.committedUpTo(102);
    expect(p.commitPoint()).toBeUndefined();
  });

  it('keeps the lowest unsettled record as the commit point while thousands after it settle', () => {
    const p = new PartitionOffsets();
    for (let o = 0; o < 5000; o++) p.track(o);
    // Offset 1 is held by a slow handler; everything else settles, in order, around it.
    expect(p.settle(0)).toBe(true);
    for (let o = 2; o < 5000; o++) expect(p.settle(o)).toBe(true);
    expect(p.commitPoint()).toBe(1);
    for (let o = 5000; o < 6000; o++) p.track(o);
    expect(p.settle(1)).toBe(true);
    expect(p.commitPoint()).toBe(5000);
    for (let o = 5999; o >= 5000; o--) expect(p.settle(o)).toBe(true);
    expect(p.commitPoint()).toBe(6000);
  });

  it('agrees with a plain model over long runs of out-of-order settling', () => {
    let seed = 7;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
    const p = new PartitionOffsets();
    const open: number[] = [];
    let next = 0;
    let highestSettled = -1;
    let committed: number | undefined;
    for (let step = 0; step < 20_000; step++) {
      if (open.length === 0 || random(3) > 0) {
        next += 1 + random(2);
        expect(p.track(next)).toBe(true);
        committed ??= next;
        open.push(next);
      } else {
        // Mostly the oldest, sometimes any.
        const i = random(4) === 0 ? random(open.length) : 0;
        const [offset] = open.splice(i, 1);
        expect(p.settle(offset)).toBe(true);
        highestSettled = Math.max(highestSettled, offset);
      }
      const expected = open.length > 0 ? open[0] : highestSettled + 1;
      const point = p.commitPoint();
      if (point === undefined) {
        // Nothing to commit: the commit point has not moved past the last commit.
        expect(expected).toBeLessThanOrEqual(committed!);
        continue;
      }
      expect(point).toBe(expected);
      if (random(10) === 0) {
        p.committedUpTo(point);
        committed = point;
      }
    }
  });
});
