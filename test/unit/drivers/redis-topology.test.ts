// Key names of the Redis driver: shard hash tags placed on the Cluster slot ring (one shard per
// master of an evenly split cluster), tagSlot agreeing with Redis's CRC16 reference values, and
// the driver's bounded memo of each topic's keys.
import { describe, expect, it } from 'vitest';
import { getRpcTransport } from '../../../src/index.js';
import { shardTag, tagSlot, topicShards, type TopicKeys } from '../../../src/drivers/redis/topology.js';

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

describe('redis driver: the memo of topic keys', () => {
  it('stays bounded on one exchange with ever new topic names, and gives the same keys as topicShards', async () => {
    // No command is sent: the memo is filled without a connection.
    const transport = await getRpcTransport('redis://127.0.0.1:1/');
    try {
      const driver = transport.driver as unknown as { topicKeys(exchange: string, topic: string): TopicKeys[]; shardKeys: Map<string, Map<string, unknown>> };
      const held = () => [...driver.shardKeys.values()].reduce((n, m) => n + m.size, 0);
      let most = 0;
      for (let i = 0; i < 25_000; i++) {
        driver.topicKeys('openstack', `topic-${i}`);
        most = Math.max(most, held());
      }
      expect(most).toBeLessThanOrEqual(10_000);
      expect(driver.topicKeys('openstack', 'topic-1')).toEqual(topicShards('tidings', 'openstack', 'topic-1', 1));
      expect(driver.topicKeys('openstack', 'topic-1')).toBe(driver.topicKeys('openstack', 'topic-1'));
    } finally {
      await transport.cleanup();
    }
  });
});
