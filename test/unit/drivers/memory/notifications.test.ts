// Notifications through the memory:// driver API: store-and-forward, shared queues, pools,
// requeue, dedupe on acknowledge, envelope versions.
import { afterEach, describe, expect, it } from 'vitest';
import { decodeBody } from '../../../../src/contract/envelope.js';
import type { IncomingMessage } from '../../../../src/contract/incoming-message.js';
import { getMemoryBroker, type MemoryDelivery } from '../../../../src/drivers/memory/index.js';
import { InvalidArgument, InvalidTarget } from '../../../../src/core/errors.js';
import { createMemoryLogger } from '../../../../src/core/logger.js';
import { Target } from '../../../../src/core/target.js';
import { uniqueName, waitFor } from '../../../../src/testing/wait.js';
import { cleanupAll, makePair, record } from './helpers.js';

afterEach(cleanupAll);

let seq = 0;
function notification(eventType = 'thing.create', payload: unknown = { n: ++seq }) {
  return { message_id: crypto.randomUUID(), publisher_id: 'pub.host', event_type: eventType, priority: 'INFO', payload, timestamp: '2026-01-01 00:00:00.000001' };
}

/** Acks every message after recording it. */
function acking(m: IncomingMessage) {
  return m.acknowledge();
}

describe('memory driver: notifications', () => {
  it('delivers a notification with its context, and msgId = message_id', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const seen = record(await server.listenForNotifications([[new Target({ topic }), 'info']]), acking);
    const n = notification();
    await client.sendNotification(new Target({ topic: `${topic}.info` }), { user_id: 'u' }, n);
    await waitFor(() => seen.messages.length === 1);
    expect(seen.messages[0].notification).toEqual(n);
    expect(seen.messages[0].ctx).toEqual({ user_id: 'u' });
    expect(seen.messages[0].msgId).toBe(n.message_id);
  });

  it('keeps notifications sent before any listener (store-and-forward)', async () => {
    const { client, server, vhost } = makePair();
    const topic = uniqueName();
    for (let i = 0; i < 3; i++) await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, notification());
    expect(getMemoryBroker(vhost).queueDepth(`${topic}.info`)).toBe(3);
    const seen = record(await server.listenForNotifications([[new Target({ topic }), 'info']]), acking);
    await waitFor(() => seen.messages.length === 3);
    expect(getMemoryBroker(vhost).queueDepth(`${topic}.info`)).toBe(0);
  });

  it('sends version 1.0 as the raw dict and 2.0 in the envelope; listeners accept both', async () => {
    const { client, server, vhost } = makePair();
    const topic = uniqueName();
    const broker = getMemoryBroker(vhost);
    broker.declareExchange('openstack');
    broker.declareQueue('spy');
    broker.bindQueue('spy', 'openstack', `${topic}.info`);
    const bodies: string[] = [];
    broker.consume('spy', (d) => bodies.push(d.body), { noAck: true });
    const seen = record(await server.listenForNotifications([[new Target({ topic }), 'info']]), acking);
    await client.sendNotification(new Target({ topic: `${topic}.info` }), { u: 1 }, notification('v1'), { version: 1.0 });
    await client.sendNotification(new Target({ topic: `${topic}.info` }), { u: 1 }, notification('v2'), { version: 2.0 });
    await waitFor(() => seen.messages.length === 2 && bodies.length === 2);
    const [v1, v2] = bodies.map((b) => JSON.parse(b));
    expect(v1.event_type).toBe('v1');
    expect(v1._context_u).toBe(1);
    expect(v1._unique_id).toMatch(/^[0-9a-f]{32}$/);
    expect(v2['oslo.version']).toBe('2.0');
    expect(decodeBody(bodies[1]).event_type).toBe('v2');
    expect(seen.messages.map((m) => m.notification.event_type)).toEqual(['v1', 'v2']);
    expect(seen.messages.every((m) => !('_unique_id' in m.notification) && !('_context_u' in m.notification))).toBe(true);
  });

  it('shares one queue between un-pooled listeners', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const a = record(await server.listenForNotifications([[new Target({ topic }), 'info']]), acking);
    const b = record(await server.listenForNotifications([[new Target({ topic }), 'info']]), acking);
    for (let i = 0; i < 10; i++) await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, notification());
    await waitFor(() => a.messages.length + b.messages.length === 10);
    expect(a.messages.length).toBeGreaterThan(0);
    expect(b.messages.length).toBeGreaterThan(0);
  });

  it('gives every pool its own copy, shared between the pool members, besides the un-pooled queue', async () => {
    const { client, server, vhost } = makePair();
    const topic = uniqueName();
    const [p1, p2] = [uniqueName('pool'), uniqueName('pool')];
    const target = new Target({ topic });
    const a1 = record(await server.listenForNotifications([[target, 'info']], { pool: p1 }), acking);
    const a2 = record(await server.listenForNotifications([[target, 'info']], { pool: p1 }), acking);
    const b = record(await server.listenForNotifications([[target, 'info']], { pool: p2 }), acking);
    for (let i = 0; i < 10; i++) await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, notification());
    await waitFor(() => a1.messages.length + a2.messages.length === 10 && b.messages.length === 10);
    expect(a1.messages.length).toBeGreaterThan(0);
    expect(a2.messages.length).toBeGreaterThan(0);
    // The notifier's own queue keeps a copy for un-pooled listeners.
    expect(getMemoryBroker(vhost).queueDepth(`${topic}.info`)).toBe(10);
  });

  it('binds one pool queue to several priorities and topics with a single consumer', async () => {
    const { client, server, vhost } = makePair();
    const [t1, t2] = [uniqueName(), uniqueName()];
    const pool = uniqueName('pool');
    const seen = record(await server.listenForNotifications([[new Target({ topic: t1 }), 'info'], [new Target({ topic: t1 }), 'error'], [new Target({ topic: t2 }), 'info']], { pool }), acking);
    await client.sendNotification(new Target({ topic: `${t1}.info` }), {}, notification('a'));
    await client.sendNotification(new Target({ topic: `${t1}.error` }), {}, notification('b'));
    await client.sendNotification(new Target({ topic: `${t2}.info` }), {}, notification('c'));
    await client.sendNotification(new Target({ topic: `${t2}.error` }), {}, notification('d'));
    await waitFor(() => seen.messages.length === 3);
    expect(seen.messages.map((m) => m.notification.event_type).sort()).toEqual(['a', 'b', 'c']);
    expect(getMemoryBroker(vhost).queueStats(pool)?.consumers).toBe(1);
  });

  it('does not give a pool created later the notifications sent before it (as RabbitMQ)', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, notification('before'));
    const seen = record(await server.listenForNotifications([[new Target({ topic }), 'info']], { pool: uniqueName('pool') }), acking);
    await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, notification('after'));
    await waitFor(() => seen.messages.length === 1);
    expect(seen.messages[0].notification.event_type).toBe('after');
  });

  it('uses the target exchange', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const seen = record(await server.listenForNotifications([[new Target({ topic, exchange: 'nova' }), 'info']], { pool: uniqueName('pool') }), acking);
    await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, notification('other-exchange'));
    await client.sendNotification(new Target({ topic: `${topic}.info`, exchange: 'nova' }), {}, notification('nova'));
    await waitFor(() => seen.messages.length === 1);
    expect(seen.messages[0].notification.event_type).toBe('nova');
  });

  it('redelivers a requeued notification, marked redelivered, and does not treat it as a duplicate', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    let first = true;
    const seen = record(await server.listenForNotifications([[new Target({ topic }), 'info']]), (m) => {
      if (first) {
        first = false;
        return m.requeue();
      }
      return m.acknowledge();
    });
    await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, notification());
    await waitFor(() => seen.messages.length === 2);
    const [a, b] = seen.messages;
    expect(b.msgId).toBe(a.msgId);
    expect((a.unwrap() as MemoryDelivery).redelivered).toBe(false);
    expect((b.unwrap() as MemoryDelivery).redelivered).toBe(true);
  });

  it('drops a duplicate once the first copy was acknowledged', async () => {
    const logger = createMemoryLogger();
    const { server, vhost } = makePair({ logger });
    const topic = uniqueName();
    const seen = record(await server.listenForNotifications([[new Target({ topic }), 'info']]), acking);
    const body = JSON.stringify({ ...notification(), _unique_id: 'f'.repeat(32) });
    getMemoryBroker(vhost).publishRaw('openstack', `${topic}.info`, body);
    await waitFor(() => seen.messages.length === 1);
    getMemoryBroker(vhost).publishRaw('openstack', `${topic}.info`, body);
    getMemoryBroker(vhost).publishRaw('openstack', `${topic}.info`, JSON.stringify(notification('fresh')));
    await waitFor(() => seen.messages.length === 2);
    expect(seen.messages[1].notification.event_type).toBe('fresh');
    expect(logger.records.some((r) => /duplicate/.test(r.msg) && r.fields.uniqueId === 'f'.repeat(32))).toBe(true);
  });

  it('acknowledge and requeue are idempotent and never throw, even after cleanup', async () => {
    const { client, server } = makePair();
    const topic = uniqueName();
    const listener = await server.listenForNotifications([[new Target({ topic }), 'info']]);
    const seen = record(listener);
    await client.sendNotification(new Target({ topic: `${topic}.info` }), {}, notification());
    await waitFor(() => seen.messages.length === 1);
    const m = seen.messages[0];
    await listener.cleanup();
    await expect(m.acknowledge()).resolves.toBeUndefined();
    await expect(m.requeue()).resolves.toBeUndefined();
    await expect(m.acknowledge()).resolves.toBeUndefined();
  });

  it('refuses bad listen arguments', async () => {
    const { server } = makePair();
    await expect(server.listenForNotifications([])).rejects.toBeInstanceOf(InvalidArgument);
    await expect(server.listenForNotifications([[new Target({ topic: 't' }), 'loud' as 'info']])).rejects.toBeInstanceOf(InvalidArgument);
    await expect(server.listenForNotifications([[new Target({}), 'info']])).rejects.toBeInstanceOf(InvalidTarget);
    await expect(server.listenForNotifications([[new Target({ topic: 't' }), 'info']], { pool: '' })).rejects.toBeInstanceOf(InvalidArgument);
  });
});
