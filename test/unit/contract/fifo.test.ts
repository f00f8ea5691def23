// Fifo: the O(1) queue under AsyncQueue and the memory broker's queues.
import { describe, expect, it } from 'vitest';
import { Fifo } from '../../../src/structures/fifo.js';

describe('Fifo', () => {
  it('is first-in first-out, puts items back at the front, and drains in order', () => {
    const q = new Fifo<number>();
    expect(q.shift()).toBeUndefined();
    q.push(1);
    q.push(2);
    q.push(3);
    expect(q.shift()).toBe(1);
    q.unshift(0);
    q.unshift(-1);
    expect(q.size).toBe(4);
    expect(q.shift()).toBe(-1);
    expect(q.drain()).toEqual([0, 2, 3]);
    expect(q.size).toBe(0);
  });

  it('counts the items held that match, without taking them (taken and put-back items included right)', () => {
    const q = new Fifo<number>();
    for (let i = 0; i < 10; i++) q.push(i);
    q.shift();
    q.shift();
    q.unshift(100);
    expect(q.count((n) => n % 2 === 0)).toBe(5);
    expect(q.count(() => true)).toBe(q.size);
    expect(q.size).toBe(9);
  });

  it('keeps order across compaction of a long-running queue that never empties', () => {
    const q = new Fifo<number>();
    const taken: number[] = [];
    for (let i = 0; i < 10_000; i++) {
      q.push(i);
      if (i % 2 === 1) taken.push(q.shift()!);
    }
    expect(q.size).toBe(5_000);
    expect(taken).toEqual(Array.from({ length: 5_000 }, (_, i) => i));
    expect(q.shift()).toBe(5_000);
  });
});
