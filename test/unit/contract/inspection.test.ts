// Pool inspection in the contract: BaseDriver's defaults (a driver that cannot inspect says so),
// the query's defaults and checks, and the pure name rules the drivers list RPC topics by.
import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '../../../src/core/errors.js';
import { resolvePoolQuery } from '../../../src/contract/addressing.js';
import { NO_INSPECTION } from '../../../src/contract/inspection.js';
import * as contract from '../../../src/contract/index.js';
import { PRIORITIES } from '../../../src/contract/types.js';
import type { KafkaClientAdapter } from '../../../src/drivers/kafka/client/adapter.js';
import { listKafkaRpcTopics } from '../../../src/drivers/kafka/inspection.js';
import { rpcStreamPattern, rpcTopicOfStream, TopicKeys } from '../../../src/drivers/redis/topology.js';

describe('inspection in tidings/driver', () => {
  it('is exported', () => {
    expect(contract.resolvePoolQuery).toBe(resolvePoolQuery);
    expect(contract.NO_INSPECTION).toBe(NO_INSPECTION);
  });
});

describe('resolvePoolQuery', () => {
  it('defaults to the control exchange and every oslo priority, in order; drops duplicate pools and priorities', () => {
    const q = resolvePoolQuery({ topic: 'n' }, 'openstack');
    expect(q.exchange).toBe('openstack');
    expect(q.priorities).toEqual(PRIORITIES);
    expect(q.addresses).toEqual(PRIORITIES.map((p) => `n.${p}`));
    expect(q.pools).toEqual([]);
    const r = resolvePoolQuery({ topic: 'n', exchange: 'nova', priorities: ['error', 'info', 'error'], pools: ['a', 'a', 'b'] }, 'openstack');
    expect(r).toEqual({ topic: 'n', exchange: 'nova', priorities: ['error', 'info'], addresses: ['n.error', 'n.info'], pools: ['a', 'b'] });
  });

  it('refuses a bad query with InvalidArgument naming the field', () => {
    const bad: Array<[unknown, RegExp]> = [
      [undefined, /query/],
      [{ topic: '' }, /topic/],
      [{ topic: 't', exchange: '' }, /exchange/],
      [{ topic: 't', priorities: ['loud'] }, /priorities/],
      [{ topic: 't', priorities: 'info' }, /priorities/],
      [{ topic: 't', pools: [''] }, /pools/],
      [{ topic: 't', pools: [7] }, /pools/],
    ];
    for (const [query, field] of bad) {
      expect(() => resolvePoolQuery(query as never, 'openstack')).toThrow(InvalidArgument);
      expect(() => resolvePoolQuery(query as never, 'openstack')).toThrow(field);
    }
  });
});

describe('Redis: RPC topics from stream keys', () => {
  it('finds the topic of every shard of a shared RPC stream, never a named server stream or another exchange', () => {
    const shards = [0, 1, 2].map((i) => new TopicKeys('pfx', 'openstack', 'compute', i, 3));
    for (const k of shards) expect(rpcTopicOfStream('pfx', 'openstack', k.topicStream)).toBe('compute');
    expect(rpcTopicOfStream('pfx', 'openstack', shards[0].serverStream('host1'))).toBeUndefined();
    expect(rpcTopicOfStream('pfx', 'nova', shards[0].topicStream)).toBeUndefined();
    expect(rpcTopicOfStream('pfx', 'openstack', shards[0].notificationStream('info'))).toBeUndefined();
    const dotted = new TopicKeys('pfx', 'openstack', 'a.b');
    expect(rpcTopicOfStream('pfx', 'openstack', dotted.topicStream)).toBe('a.b');
    expect(rpcTopicOfStream('pfx', 'openstack', dotted.serverStream('c'))).toBeUndefined();
  });

  it('escapes glob characters of the prefix and exchange in the SCAN pattern', () => {
    expect(rpcStreamPattern('p*x', 'ex[1]')).toBe('p\\*x:{ex\\[1\\]:*}:rpc:*');
  });
});

describe('Kafka: RPC topics from the topic list', () => {
  const adapter = (topics: string[]) => ({ listTopics: async () => topics }) as unknown as KafkaClientAdapter;

  it('lists the topics with both a request topic and a fanout topic, sorted; the vhost suffix comes off', async () => {
    const topics = ['b', 'b_fanout', 'a', 'a_fanout', 'a.host1', 'n.info', 'lonely_fanout', 'reply_0123', 'n.info.dlq'];
    expect(await listKafkaRpcTopics(adapter(topics), '')).toEqual(['a', 'b']);
    expect(await listKafkaRpcTopics(adapter(['a.v1', 'a_fanout.v1', 'b', 'b_fanout']), 'v1')).toEqual(['a']);
  });
});
