// Fault: malformed bodies (not JSON, wrong envelope version, missing keys) published with
// amqplib straight onto queues tidings listens on: each is rejected without requeue and
// logged, and the next good message is processed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createMemoryLogger,
  getNotificationListener,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  Notifier,
  NotificationResult,
  Target,
  type MemoryLogger,
  type Transport,
} from '../../src/index.js';
import { deleteQueues, notificationQueues, publishRaw, queueDepth, rpcQueues } from '../interop/support/amqp-admin.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';

const EXCHANGE = 'openstack';

/** Bodies a listener must refuse. `unique` makes each distinguishable in logs if a driver logs ids. */
function badBodies(kind: 'rpc' | 'notification'): Array<[string, string]> {
  const env = (inner: unknown) => JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': typeof inner === 'string' ? inner : JSON.stringify(inner) });
  const bodies: Array<[string, string]> = [
    ['not JSON', '{"oslo.version": "2.0", "oslo.message": '],
    ['JSON but not an object', '[1, 2, 3]'],
    ['envelope version 3.0', JSON.stringify({ 'oslo.version': '3.0', 'oslo.message': JSON.stringify({ method: 'echo', args: {} }) })],
    ['envelope minor 2.1', JSON.stringify({ 'oslo.version': '2.1', 'oslo.message': JSON.stringify({ method: 'echo', args: {} }) })],
    ['inner message not JSON', env('{nope')],
    ['inner message not an object', env('"just a string"')],
  ];
  if (kind === 'rpc') {
    bodies.push(['RPC request without method', env({ args: {}, _unique_id: 'a'.repeat(32) })]);
    bodies.push(['RPC request with non-object args', env({ method: 'echo', args: 'x', _unique_id: 'b'.repeat(32) })]);
  } else {
    bodies.push(['notification without event_type/priority/payload', env({ message_id: 'm-1', _unique_id: 'c'.repeat(32) })]);
  }
  return bodies;
}

/** Records the driver (or façade) logged about a message it refused. */
function rejections(logger: MemoryLogger) {
  return logger.records.filter((r) => (r.level === 'warn' || r.level === 'error') && /malformed|reject|invalid|decode|discard|unsupported|unknown|missing/i.test(`${r.msg} ${JSON.stringify(r.fields, (_k, v: unknown) => (v instanceof Error ? v.message : v))}`));
}

describe('fault: malformed bodies on listened queues', () => {
  const transports: Transport[] = [];
  const queues: string[] = [];

  beforeAll(async () => {
    await requireRabbitMQ();
  });

  afterAll(async () => {
    for (const t of transports) await t.cleanup();
    await deleteQueues(queues);
  }, 60_000);

  it('RPC server queue: each bad body is rejected once and logged; the next call is answered', async () => {
    const topic = uniqueName('t-bad-rpc');
    queues.push(...rpcQueues(topic, ['s1']));
    const logger = createMemoryLogger();
    const transport = await getRpcTransport(RABBIT_URL, { logger });
    transports.push(transport);
    const calls: unknown[] = [];
    const server = getRpcServer(transport, new Target({ topic, server: 's1' }), [
      {
        echo(_ctx: unknown, args: unknown) {
          calls.push(args);
          return args;
        },
      },
    ]);
    await server.start();
    try {
      const bad = badBodies('rpc');
      for (const [, body] of bad) await publishRaw(EXCHANGE, topic, body);
      // Also on the server's own queue.
      await publishRaw(EXCHANGE, `${topic}.s1`, 'garbage');

      const client = getRpcClient(transport, { topic }, { timeout: 15_000 });
      await expect(client.call({}, 'echo', { good: 1 })).resolves.toEqual({ good: 1 });
      await waitFor(() => rejections(logger).length >= bad.length + 1, {
        timeoutMs: 15_000,
        message: `a warning per rejected body (${bad.length + 1}); logged: ${JSON.stringify(logger.records.map((r) => [r.level, r.msg]))}`,
      });
      expect(calls).toEqual([{ good: 1 }]);
      await waitFor(async () => (await queueDepth(topic))?.messageCount === 0 && (await queueDepth(`${topic}.s1`))?.messageCount === 0, {
        timeoutMs: 10_000,
        message: 'both RPC queues are empty',
      });
      // No requeue loop: another round trip adds no further rejections.
      const before = rejections(logger).length;
      await expect(client.prepare({ server: 's1' }).call({}, 'echo', { good: 2 })).resolves.toEqual({ good: 2 });
      expect(rejections(logger).length).toBe(before);
      expect(before).toBeLessThanOrEqual((bad.length + 1) * 2);
      // Logs carry no payloads.
      expect(JSON.stringify(logger.records)).not.toContain('garbage');
    } finally {
      await server.stop();
      await server.wait();
    }
  }, 60_000);

  it('notification queue: each bad body is rejected once and logged; the next notification is handled', async () => {
    const topic = uniqueName('t-bad-notif');
    queues.push(...notificationQueues([topic]));
    const logger = createMemoryLogger();
    const transport = await getNotificationTransport(RABBIT_URL, { logger });
    transports.push(transport);
    const got: unknown[] = [];
    const listener = getNotificationListener(transport, [new Target({ topic })], [
      {
        info(_ctx: unknown, _pub: string, _type: string, payload: unknown) {
          got.push(payload);
          return NotificationResult.HANDLED;
        },
      },
    ]);
    await listener.start();
    try {
      const bad = badBodies('notification');
      for (const [, body] of bad) await publishRaw(EXCHANGE, `${topic}.info`, body);
      await new Notifier(transport, { publisherId: 'faults', driver: 'messagingv2', topics: [topic] }).info({}, 'good.one', { good: 1 });
      await waitFor(() => got.length >= 1, { timeoutMs: 15_000, message: 'the good notification was handled' });
      await waitFor(() => rejections(logger).length >= bad.length, {
        timeoutMs: 15_000,
        message: `a warning per rejected body (${bad.length}); logged: ${JSON.stringify(logger.records.map((r) => [r.level, r.msg]))}`,
      });
      await waitFor(async () => (await queueDepth(`${topic}.info`))?.messageCount === 0, { timeoutMs: 10_000, message: 'the notification queue is empty' });
      const before = rejections(logger).length;
      await new Notifier(transport, { publisherId: 'faults', driver: 'messaging', topics: [topic] }).info({}, 'good.two', { good: 2 });
      await waitFor(() => got.length >= 2, { timeoutMs: 15_000, message: 'the second good notification was handled' });
      expect(got).toEqual([{ good: 1 }, { good: 2 }]);
      expect(rejections(logger).length).toBe(before);
    } finally {
      await listener.stop();
      await listener.wait();
    }
  }, 60_000);
});
