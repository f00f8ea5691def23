import { describe, it, expect } from 'vitest';
import { DEFAULTS } from '../../../../src/drivers/amqp/options.js';
import {
  fanoutExchange,
  notificationSpecs,
  queueArguments,
  rpcServerSpecs,
  streamFanoutQueue,
  topicExchange,
  topicQueue,
  transientQueue,
} from '../../../../src/drivers/amqp/topology.js';

const o = { ...DEFAULTS };

describe('amqp topology (oslo-wire.md §1.2)', () => {
  it('declares the topic exchange non-durable, not auto-delete by default', () => {
    expect(topicExchange('openstack', o)).toEqual({ name: 'openstack', type: 'topic', options: { durable: false, autoDelete: false, internal: false } });
    expect(topicExchange('nova', { ...o, durableQueues: true }).options.durable).toBe(true);
    expect(topicExchange('nova', { ...o, quorumQueue: true }).options.durable).toBe(true);
    expect(topicExchange('nova', { ...o, autoDelete: true }).options.autoDelete).toBe(true);
  });

  it('declares the fanout exchange non-durable and auto-delete', () => {
    expect(fanoutExchange('tt', o)).toEqual({ name: 'tt_fanout', type: 'fanout', options: { durable: false, autoDelete: true, internal: false } });
  });

  it('topic queues carry no x-expires; ha and quorum arguments when configured', () => {
    expect(topicQueue('tt', o).options).toEqual({ durable: false, autoDelete: false, exclusive: false, arguments: {} });
    expect(topicQueue('tt', { ...o, haQueues: true }).options.arguments).toEqual({ 'x-ha-policy': 'all' });
    const q = topicQueue('tt', { ...o, quorumQueue: true, quorumDeliveryLimit: 3, quorumMaxMemoryLength: 10, quorumMaxMemoryBytes: 1000 });
    expect(q.options.durable).toBe(true);
    expect(q.options.arguments).toEqual({ 'x-queue-type': 'quorum', 'x-delivery-limit': 3, 'x-max-in-memory-length': 10, 'x-max-in-memory-bytes': 1000 });
    expect(queueArguments({ ...o, quorumQueue: true })).toEqual({ 'x-queue-type': 'quorum' });
  });

  it('reply and fanout queues are transient with x-expires = ttl (no quorum in 14.0.3)', () => {
    expect(transientQueue('reply_x', o).options).toEqual({ durable: false, autoDelete: false, exclusive: false, arguments: { 'x-expires': 1_800_000 } });
    expect(transientQueue('reply_x', { ...o, quorumQueue: true, durableQueues: true }).options).toEqual({
      durable: false,
      autoDelete: false,
      exclusive: false,
      arguments: { 'x-expires': 1_800_000 },
    });
    expect(transientQueue('q', { ...o, haQueues: true }).options.arguments).toEqual({ 'x-expires': 1_800_000, 'x-ha-policy': 'all' });
  });

  it('rabbit_transient_quorum_queue: reply and fanout queues durable quorum with x-expires, fanout exchange durable (oslo 14.7+)', () => {
    const tq = { ...o, transientQuorumQueue: true, quorumDeliveryLimit: 3 };
    expect(transientQueue('reply_x', tq).options).toEqual({
      durable: true,
      autoDelete: false,
      exclusive: false,
      arguments: { 'x-queue-type': 'quorum', 'x-delivery-limit': 3, 'x-expires': 1_800_000 },
    });
    expect(fanoutExchange('tt', tq).options).toEqual({ durable: true, autoDelete: true, internal: false });
    // Topic queues follow rabbit_quorum_queue only.
    expect(topicQueue('tt', tq).options.arguments).toEqual({});
    const [, , fanout] = rpcServerSpecs('openstack', 'tt', 's1', tq, 'tt_fanout_h:p:1');
    expect(fanout.queue.name).toBe('tt_fanout_h:p:1');
    expect(fanout.bindings[0].exchange.options.durable).toBe(true);
  });

  it('rabbit_stream_fanout: one durable stream <topic>_fanout with x-max-age in seconds, as oslo 14.7+ _get_queue_arguments; kept on cleanup', () => {
    const sf = { ...o, streamFanout: true, transientQuorumQueue: true, quorumDeliveryLimit: 3, haQueues: false };
    const [shared, server, fanout] = rpcServerSpecs('openstack', 'tt', 's1', sf, 'tt_fanout_h:p:1');
    expect(fanout.queue).toEqual({ name: 'tt_fanout', options: { durable: true, autoDelete: false, exclusive: false, arguments: { 'x-queue-type': 'stream', 'x-max-age': '1800s' } } });
    expect(fanout.bindings.map((b) => [b.exchange.name, b.exchange.type, b.exchange.options.durable, b.exchange.options.autoDelete, b.routingKey])).toEqual([['tt_fanout', 'fanout', true, true, 'tt']]);
    expect(fanout.stream).toBe(true);
    expect(fanout.deleteOnCleanup).toBeFalsy();
    expect([shared.stream, server.stream]).toEqual([undefined, undefined]);
    // oslo: `"%ss" % rabbit_transient_queues_ttl`, none when 0; ms round up to a whole second.
    expect(streamFanoutQueue('tt', { transientQueuesTtl: 0 }).options.arguments).toEqual({ 'x-queue-type': 'stream' });
    expect(streamFanoutQueue('tt', { transientQueuesTtl: 1500 }).options.arguments).toEqual({ 'x-queue-type': 'stream', 'x-max-age': '2s' });
    // Reply queues stay transient quorum queues.
    expect(transientQueue('reply_x', sf).options.arguments).toEqual({ 'x-queue-type': 'quorum', 'x-delivery-limit': 3, 'x-expires': 1_800_000 });
  });

  it('an RPC server subscribes <topic>, <topic>.<server> and a private fanout queue', () => {
    const [shared, server, fanout] = rpcServerSpecs('openstack', 'tt', 's1', o);
    expect(shared.queue.name).toBe('tt');
    expect(shared.bindings.map((b) => [b.exchange.name, b.routingKey])).toEqual([['openstack', 'tt']]);
    expect(server.queue.name).toBe('tt.s1');
    expect(server.bindings.map((b) => [b.exchange.name, b.routingKey])).toEqual([['openstack', 'tt.s1']]);
    expect(fanout.queue.name).toMatch(/^tt_fanout_[0-9a-f]{32}$/);
    expect(fanout.queue.options.arguments).toEqual({ 'x-expires': 1_800_000 });
    expect(fanout.bindings.map((b) => [b.exchange.name, b.exchange.type, b.routingKey])).toEqual([['tt_fanout', 'fanout', 'tt']]);
    expect(fanout.deleteOnCleanup).toBe(true);
    expect(shared.deleteOnCleanup).toBeFalsy();
  });

  it('notification listeners: a queue per <topic>.<priority>, or one queue named after the pool', () => {
    const pairs = [
      { exchange: 'openstack', routingKey: 'notifications.info' },
      { exchange: 'openstack', routingKey: 'notifications.error' },
    ];
    expect(notificationSpecs(pairs, undefined, o).map((s) => s.queue.name)).toEqual(['notifications.info', 'notifications.error']);
    const pooled = notificationSpecs(pairs, 'billing', o);
    expect(pooled).toHaveLength(1);
    expect(pooled[0].queue.name).toBe('billing');
    expect(pooled[0].queue.options.arguments).toEqual({});
    expect(pooled[0].bindings.map((b) => b.routingKey)).toEqual(['notifications.info', 'notifications.error']);
  });

  it('pool_queue_per_topic: a pooled listener gets one queue <pool>:<topic>.<priority> per address', () => {
    const pairs = [
      { exchange: 'openstack', routingKey: 'notifications.info' },
      { exchange: 'openstack', routingKey: 'notifications.error' },
    ];
    const specs = notificationSpecs(pairs, 'billing', { ...o, poolQueuePerTopic: true });
    expect(specs.map((s) => [s.queue.name, s.bindings.map((b) => b.routingKey)])).toEqual([
      ['billing:notifications.info', ['notifications.info']],
      ['billing:notifications.error', ['notifications.error']],
    ]);
    // Un-pooled listeners keep oslo's `<topic>.<priority>` queues.
    expect(notificationSpecs(pairs, undefined, { ...o, poolQueuePerTopic: true }).map((s) => s.queue.name)).toEqual(['notifications.info', 'notifications.error']);
  });

  it('server_queue_expires_ms: x-expires on <topic>.<server> only', () => {
    const [shared, server] = rpcServerSpecs('openstack', 'tt', 's1', { ...o, serverQueueExpires: 60_000 });
    expect(server.queue.options.arguments).toEqual({ 'x-expires': 60_000 });
    expect(shared.queue.options.arguments).toEqual({});
    expect(rpcServerSpecs('openstack', 'tt', 's1', o)[1].queue.options.arguments).toEqual({});
  });
});
