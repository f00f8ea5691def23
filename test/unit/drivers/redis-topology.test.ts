// Key names of the Redis driver: shard hash tags placed on the Cluster slot ring (one shard per
// master of an evenly split cluster), and tagSlot agreeing with Redis's CRC16 reference values.
import { describe, expect, it } from 'vitest';
import { shardTag, tagSlot, topicShards } from '../../../src/drivers/redis/topology.js';

describe('redis topology: shard tags', () => {
  it('tagSlot matches the reference values of the Redis Cluster spec', () => {
    // CRC16/XMODEM("123456789") = 0x31C3 = 12739; CLUSTER KEYSLOT foo = 12182.
    expect(tagSlot('123456789')).toBe(12739);
    expect(tagSlot('foo')).toBe(12182);
  });

  it('shard 0 keeps the unsharded tag; shards 1..n-1 each land in the middle of their own arc of the slot ring', () => {
    for (let t = 0; t < 200; t++) {
      for (const n of [2, 3, 4, 6, 16]) {
        const tags = Array.from({ length: n }, (_, i) => shardTag('openstack', `topic-${t}`, i, n));
        expect(tags[0]).toBe(`openstack:topic-${t}`);
        const arcs = tags.map((tag) => Math.floor(tagSlot(tag) / (16384 / n)));
        expect(new Set(arcs).size).toBe(n);
        for (const tag of tags.slice(1)) {
          const offset = tagSlot(tag) % (16384 / n);
          expect(offset).toBeGreaterThanOrEqual(16384 / n / 4);
          expect(offset).toBeLessThan((3 * 16384) / n / 4);
        }
      }
    }
  });

  it('is a pure function of the names: every transport computes the same keys', () => {
    const a = topicShards('p', 'ex', 'hot', 3).map((k) => k.base);
    const b = topicShards('p', 'ex', 'hot', 3).map((k) => k.base);
    expect(a).toEqual(b);
    expect(a[0]).toBe('p:{ex:hot}');
    expect(new Set(a).size).toBe(3);
  });
});
