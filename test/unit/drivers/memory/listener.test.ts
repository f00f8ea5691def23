// Listener behaviour of memory://: malformed messages, dedupe, prefetch, batching, stop()
// handing out what is buffered, cleanup giving unacked messages back.
import { afterEach, describe, expect, it } from 'vitest';
import { serializeEnvelope } from '../../../../src/contract/envelope.js';
import type { IncomingMessage } from '../../../../src/contract/incoming-message.js';
import { getMemoryBroker, type MemoryDelivery } from '../../../../src/drivers/memory/index.js';
import { createMemoryLogger } from '../../../../src/core/logger.js';
import { Target } from '../../../../src/core/target.js';
import { deferred, uniqueName, waitFor } from '../../../../src/testing/wait.js';
import { cleanupAll, makePair, record, track } from './helpers.js';

afterEach(cleanupAll);

const request = (method: string, extra: Record<string, unknown> = {}) => JSON.stringify(serializeEnvelope({ method, args: {}, ...extra }));

describe('memory driver: malformed messages', () => {
  it('rejects malformed RPC requests without requeue, logs them without payload, and keeps serving', async () => {
    const logger = createMemoryLogger();
    const { server, vhost } = makePair({ logger });
    const topic = uniqueName();
    const seen = record(await server.listen(new Target({ topic, server: 's' })));
    const broker = getMemoryBroker(vhost);
    const secret = 'SECRET-PAYLOAD';
    const bad = [
      `not json ${secret}`,
      JSON.stringify({ 'oslo.version': '3.0', 'oslo.message': JSON.stringify({ method: secret }) }),
      JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': `{broken ${secret}` }),
      JSON.stringify(serializeEnvelope({ args: { secret } })),
      JSON.stringify([secret]),
    ];
    for (const body of bad) broker.publishRaw('openstack', topic, body);
    broker.publishRaw('openstack', topic, request('good'));
    await waitFor(() => seen.messages.length === 1);
    expect(seen.messages[0].request.method).toBe('good');
    const warnings = logger.records.filter((r) => r.level === 'warn' && r.msg === 'Rejecting a malformed message (not requeued)');
    expect(warnings).toHaveLength(bad.length);
    expect(warnings.map((w) => w.fields.reason)).toEqual([
      'Message body is not valid JSON',
      expect.stringContaining('Unsupported envelope version'),
      'Envelope oslo.message is not valid JSON',
      'RPC message without a "method" string',
      expect.stringContaining('not a JSON object'),
    ]);
    expect(JSON.stringify(logger.records)).not.toContain(secret);
    expect(broker.queueStats(topic)).toMatchObject({ rejected: bad.length, ready: 0, unacked: 0 });
  });

  it('rejects a malformed notification and goes on with the next one', async () => {
    const logger = createMemoryLogger();
    const { client, server, vhost } = makePair({ logger });
    const topic = uniqueName();
    const seen = record(await server.listenForNotifications([[new Target({ topic }), 'info']]), (m) => m.acknowledge());
    getMemoryBroker(vhost).publishRaw('openstack', `${topic}.info`, '{"truncated": ');
    await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, { event_type: 'ok', priority: 'INFO', payload: {} });
    await waitFor(() => seen.messages.length === 1);
    expect(seen.messages[0].notification.event_type).toBe('ok');
    expect(logger.records.filter((r) => r.level === 'warn' && r.msg === 'Rejecting a malformed message (not requeued)')).toHaveLength(1);
    expect(getMemoryBroker(vhost).queueStats(`${topic}.info`)?.rejected).toBe(1);
  });

  it('drops an RPC request whose _unique_id was already seen', async () => {
    const { server, vhost } = makePair();
    const topic = uniqueName();
    const seen = record(await server.listen(new Target({ topic, server: 's' })));
    const broker = getMemoryBroker(vhost);
    const dup = request('dup', { _unique_id: 'a'.repeat(32) });
    broker.publishRaw('openstack', topic, dup);
    broker.publishRaw('openstack', `${topic}.s`, dup);
    broker.publishRaw('openstack', topic, request('after'));
    await waitFor(() => seen.messages.some((m) => m.request.method === 'after'));
    expect(seen.messages.map((m) => m.request.method)).toEqual(['dup', 'after']);
  });

  it('honours a smaller dedup window', async () => {
    const { server, vhost } = makePair({ options: { dedupWindow: 1 } });
    const topic = uniqueName();
    const seen = record(await server.listen(new Target({ topic, server: 's' })));
    const broker = getMemoryBroker(vhost);
    broker.publishRaw('openstack', topic, request('x', { _unique_id: '1' }));
    broker.publishRaw('openstack', topic, request('y', { _unique_id: '2' }));
    broker.publishRaw('openstack', topic, request('x', { _unique_id: '1' }));
    await waitFor(() => seen.messages.length === 3);
  });
});

describe('memory driver: prefetch and batches', () => {
  it('caps unacked messages per consumer and batch sizes at prefetch_count', async () => {
    const { client, server, vhost } = makePair({ options: { prefetchCount: 3 } });
    expect(server.options.prefetchCount).toBe(3);
    const topic = uniqueName();
    const held: IncomingMessage[] = [];
    const listener = track(await server.listenForNotifications([[new Target({ topic }), 'info']], { batchSize: 10, batchTimeout: 50 }));
    const sizes: number[] = [];
    listener.start((batch) => {
      sizes.push(batch.length);
      held.push(...batch);
    });
    for (let i = 0; i < 7; i++) await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, { event_type: 'e', priority: 'INFO', payload: i });
    await waitFor(() => held.length === 3);
    const broker = getMemoryBroker(vhost);
    expect(broker.queueStats(`${topic}.info`)).toMatchObject({ unacked: 3, ready: 4 });
    for (const m of held.splice(0)) await m.acknowledge();
    await waitFor(() => held.length === 3);
    for (const m of held.splice(0)) await m.acknowledge();
    await waitFor(() => held.length === 1);
    await held[0].acknowledge();
    expect(Math.max(...sizes)).toBeLessThanOrEqual(3);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(7);
  });

  it('collects a batch within batchTimeout: 205 messages with batchSize 100 come as 100, 100, 5', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const listener = await server.listenForNotifications([[new Target({ topic }), 'info']], { batchSize: 100, batchTimeout: 200 });
    for (let i = 0; i < 205; i++) await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, { event_type: 'e', priority: 'INFO', payload: i });
    const seen = record(listener, (m) => m.acknowledge());
    await waitFor(() => seen.messages.length === 205);
    expect(seen.batches.map((b) => b.length)).toEqual([100, 100, 5]);
    expect(seen.messages.map((m) => m.notification.payload)).toEqual(Array.from({ length: 205 }, (_, i) => i));
  });

  it('hands out a partial batch when batchTimeout passes', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const seen = record(await server.listenForNotifications([[new Target({ topic }), 'info']], { batchSize: 50, batchTimeout: 100 }), (m) => m.acknowledge());
    for (let i = 0; i < 3; i++) await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, { event_type: 'e', priority: 'INFO', payload: i });
    await waitFor(() => seen.messages.length === 3, { timeoutMs: 5000 });
    expect(seen.batches.every((b) => b.length <= 3)).toBe(true);
  });

  it('batches RPC requests too', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const listener = await server.listen(new Target({ topic, server: 's' }), { batchSize: 10, batchTimeout: 100 });
    for (let i = 0; i < 10; i++) await client.send(new Target({ topic }), {}, { method: 'm', args: { i } });
    const seen = record(listener);
    await waitFor(() => seen.messages.length === 10);
    expect(seen.batches.map((b) => b.length)).toEqual([10]);
  });
});

describe('memory driver: delivery loop', () => {
  it('moves a burst of 10k casts through the driver', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    let n = 0;
    const listener = track(await server.listen(new Target({ topic, server: 's' })));
    listener.start((batch) => {
      n += batch.length;
    });
    const target = new Target({ topic });
    await Promise.all(Array.from({ length: 10_000 }, (_, i) => client.send(target, { u: 1 }, { method: 'm', args: { i } })));
    await waitFor(() => n === 10_000, { timeoutMs: 20_000 });
  });

  it('a handler that requeues forever (max_deliveries=0) does not starve timers and I/O', async () => {
    const { client, server } = makePair({ options: { maxDeliveries: 0 } });
    const topic = uniqueName();
    let deliveries = 0;
    record(await server.listenForNotifications([[new Target({ topic }), 'info']]), (m) => {
      deliveries++;
      return m.requeue();
    });
    await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, { event_type: 'e', priority: 'INFO', payload: 1 });
    // If redelivery ran on microtasks only, this timer (and waitFor's own) would never fire.
    await new Promise<void>((resolve) => setTimeout(resolve, 50));
    await waitFor(() => deliveries > 10);
  });
});

describe('memory driver: stop and cleanup', () => {
  it('stop() takes no new messages but still delivers the ones already buffered', async () => {
    const { client, server, vhost } = makePair();
    const topic = uniqueName();
    const listener = track(await server.listenForNotifications([[new Target({ topic }), 'info']]));
    const gate = deferred();
    const handled: unknown[] = [];
    listener.start(async ([m]) => {
      if (handled.length === 0) await gate.promise;
      handled.push(m.notification.payload);
      await m.acknowledge();
    });
    for (let i = 0; i < 5; i++) await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, { event_type: 'e', priority: 'INFO', payload: i });
    const broker = getMemoryBroker(vhost);
    await waitFor(() => broker.queueStats(`${topic}.info`)?.unacked === 5);
    const stopped = listener.stop();
    await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, { event_type: 'e', priority: 'INFO', payload: 'after-stop' });
    gate.resolve();
    await stopped;
    expect(handled).toEqual([0, 1, 2, 3, 4]);
    expect(broker.queueStats(`${topic}.info`)).toMatchObject({ ready: 1, unacked: 0, consumers: 0 });
    // The message sent after stop() waits for the next listener.
    const next = record(await server.listenForNotifications([[new Target({ topic }), 'info']]), (m) => m.acknowledge());
    await waitFor(() => next.messages.length === 1);
    expect(next.messages[0].notification.payload).toBe('after-stop');
  });

  it('stop() of an RPC listener leaves later requests queued for the other servers', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const a = track(await server.listen(new Target({ topic, server: 'a' })));
    a.start(() => {});
    await a.stop();
    const b = record(await server.listen(new Target({ topic, server: 'b' })), (m) => m.reply({ result: 'b' }));
    await expect(client.send(new Target({ topic }), {}, { method: 'm', args: {} }, { waitForReply: true, timeout: 5000 })).resolves.toBe('b');
    expect(b.messages).toHaveLength(1);
  });

  it('cleanup() gives unacknowledged notifications back for redelivery', async () => {
    const { client, server, vhost } = makePair();
    const topic = uniqueName();
    const first = track(await server.listenForNotifications([[new Target({ topic }), 'info']]));
    const got: IncomingMessage[] = [];
    first.start(([m]) => {
      got.push(m); // never acknowledged
    });
    await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, { event_type: 'e', priority: 'INFO', payload: 1 });
    await waitFor(() => got.length === 1);
    await first.cleanup();
    expect(getMemoryBroker(vhost).queueDepth(`${topic}.info`)).toBe(1);
    const second = record(await server.listenForNotifications([[new Target({ topic }), 'info']]), (m) => m.acknowledge());
    await waitFor(() => second.messages.length === 1);
    expect((second.messages[0].unwrap() as MemoryDelivery).redelivered).toBe(true);
  });

  it('driver cleanup cuts its listeners off; their messages stay with the broker', async () => {
    const { client, server, vhost } = makePair();
    const topic = uniqueName();
    const seen = record(await server.listenForNotifications([[new Target({ topic }), 'info']]), (m) => m.acknowledge());
    await server.cleanup();
    await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, { event_type: 'e', priority: 'INFO', payload: 1 });
    await new Promise((r) => setImmediate(r));
    expect(getMemoryBroker(vhost).queueDepth(`${topic}.info`)).toBe(1);
    expect(seen.messages).toHaveLength(0);
  });
});
