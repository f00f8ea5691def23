// The Redis driver's per-tick write batches: what is added in one tick goes out once per key on
// the next tick, a full batch goes at once, and each add settles as its batch's send did.
import { describe, expect, it } from 'vitest';
import { TickBatches } from '../../../src/drivers/redis/tick-batches.js';

describe('TickBatches', () => {
  it('sends what one tick added once per key, on the next tick, and each add resolves with its batch', async () => {
    const sent: Array<[string, number[]]> = [];
    const batches = new TickBatches<number>(100, async (key, items) => void sent.push([key, [...items]]));
    const adds = [batches.add('a', 1), batches.add('b', 2), batches.add('a', 3)];
    expect(sent).toEqual([]);
    await Promise.all(adds);
    expect(sent).toEqual([
      ['a', [1, 3]],
      ['b', [2]],
    ]);
    await batches.add('a', 4);
    expect(sent.at(-1)).toEqual(['a', [4]]);
  });

  it('a batch that reaches max goes at once; the rest waits for the tick', async () => {
    const sent: number[][] = [];
    const batches = new TickBatches<number>(2, async (_key, items) => void sent.push([...items]));
    const adds = [1, 2, 3, 4, 5].map((n) => batches.add('k', n));
    expect(sent).toEqual([[1, 2], [3, 4]]);
    await Promise.all(adds);
    expect(sent).toEqual([[1, 2], [3, 4], [5]]);
  });

  it("a failed send rejects every add of that batch only; a send that throws is a failed send", async () => {
    const batches = new TickBatches<string>(10, (key) => {
      if (key === 'throws') throw new Error('sync');
      return key === 'bad' ? Promise.reject(new Error('no')) : Promise.resolve();
    });
    const results = await Promise.allSettled([batches.add('bad', 'x'), batches.add('good', 'y'), batches.add('bad', 'z'), batches.add('throws', 'w')]);
    expect(results.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : 'ok'))).toEqual(['no', 'ok', 'no', 'sync']);
  });
});
