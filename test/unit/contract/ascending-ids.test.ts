// AscendingIds: the unsettled ids shared by the AMQP ack batcher (delivery tags) and the Kafka
// listener (offsets).
import { describe, expect, it } from 'vitest';
import { AscendingIds } from '../../../src/structures/ascending-ids.js';

describe('AscendingIds', () => {
  it('holds ids added in ascending order, and gives the lowest still held', () => {
    const ids = new AscendingIds();
    expect(ids.lowest()).toBeUndefined();
    for (const id of [3, 4, 9]) expect(ids.add(id)).toBe(true);
    expect(ids.size).toBe(3);
    expect(ids.lowest()).toBe(3);
    expect(ids.delete(4)).toBe(true); // out of order
    expect(ids.lowest()).toBe(3);
    expect(ids.delete(3)).toBe(true);
    expect(ids.lowest()).toBe(9);
    expect(ids.delete(9)).toBe(true);
    expect(ids.lowest()).toBeUndefined();
    expect(ids.size).toBe(0);
  });

  it('refuses an id not above every one added before, and deletes only what it holds, once', () => {
    const ids = new AscendingIds();
    ids.add(5);
    expect(ids.add(5)).toBe(false);
    expect(ids.add(2)).toBe(false);
    expect(ids.delete(2)).toBe(false);
    expect(ids.delete(5)).toBe(true);
    expect(ids.delete(5)).toBe(false);
    expect(ids.add(5)).toBe(false); // added before, even though no longer held
    expect(ids.add(6)).toBe(true);
    expect(ids.size).toBe(1);
  });

  it('agrees with a sorted array over long runs of mostly-oldest-first deletes', () => {
    let seed = 5;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const ids = new AscendingIds();
    const model: number[] = [];
    let next = 0;
    for (let step = 0; step < 50_000; step++) {
      if (model.length === 0 || random(3) > 0) {
        next += 1 + random(3);
        ids.add(next);
        model.push(next);
      } else {
        const i = random(5) === 0 ? random(model.length) : 0;
        expect(ids.delete(model[i])).toBe(true);
        model.splice(i, 1);
      }
      expect(ids.lowest()).toBe(model[0]);
      expect(ids.size).toBe(model.length);
    }
    for (const id of model) expect(ids.delete(id)).toBe(true);
    expect(ids.size).toBe(0);
  });
});
