// Interop: notifications between Python oslo.messaging 14 and tidings over RabbitMQ, both
// directions, both formats (messaging 1.0 raw dict and messagingv2 envelope), with and without pools.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getNotificationListener,
  getNotificationTransport,
  Notifier,
  NotificationResult,
  Target,
  type Context,
  type Transport,
} from '../../src/index.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { deleteQueues, notificationQueues } from './support/amqp-admin.js';
import { PyClient, PyProcess, requireOsloMessaging, startPy } from './support/python.js';

interface Received {
  priority: string;
  ctx: Context;
  publisherId: string;
  eventType: string;
  payload: unknown;
  metadata: Record<string, unknown>;
}

/** A tidings endpoint recording every priority it is offered. */
function recorder(into: Received[]) {
  const handler = (priority: string) => (ctx: Context, publisherId: string, eventType: string, payload: unknown, metadata: Record<string, unknown>) => {
    into.push({ priority, ctx, publisherId, eventType, payload, metadata });
    return NotificationResult.HANDLED;
  };
  return { info: handler('info'), warn: handler('warn'), error: handler('error'), audit: handler('audit'), sample: handler('sample') };
}

// 14.0.3's Notifier keeps only whitelisted context keys (user_id, project_id, request_id, ...).
const PY_CTX = { user_id: 'u-py', project_id: 'p-py', request_id: 'req-py-1' };

describe('interop: Python Notifier -> tidings listeners', () => {
  const topic = uniqueName('t-pynotif');
  const pool = uniqueName('pool');
  const plain: Received[] = [];
  const pooled: Received[] = [];
  let transport: Transport;
  const listeners: Array<{ stop(): Promise<void>; wait(): Promise<void> }> = [];
  let py: PyClient;

  beforeAll(async () => {
    await requireRabbitMQ();
    requireOsloMessaging();
    transport = await getNotificationTransport(RABBIT_URL);
    const targets = [new Target({ topic })];
    const a = getNotificationListener(transport, targets, [recorder(plain)]);
    const b = getNotificationListener(transport, targets, [recorder(pooled)], { pool });
    await a.start();
    await b.start();
    listeners.push(a, b);
    py = await startPy(new PyClient(RABBIT_URL));
  }, 90_000);

  afterAll(async () => {
    await py?.stop();
    for (const l of listeners) {
      await l.stop();
      await l.wait();
    }
    await transport?.cleanup();
    await deleteQueues(notificationQueues([topic], [pool]));
  }, 60_000);

  for (const driver of ['messagingv2', 'messaging'] as const) {
    it(`${driver}: the un-pooled and the pooled listener each receive it with context, publisher, type, payload, metadata`, async () => {
      const eventType = uniqueName(`compute.instance.${driver}`);
      const payload = { id: 7, name: 'vm-ü', tags: ['a', 'b'], nested: { ok: true } };
      const reply = await py.notify({ driver, topics: [topic], publisherId: 'compute.py-host', priority: 'info', eventType, payload, ctx: PY_CTX });
      expect(reply).toMatchObject({ ok: true });
      for (const [name, got] of [['un-pooled', plain], ['pooled', pooled]] as const) {
        const n = await waitFor(() => got.find((r) => r.eventType === eventType), { timeoutMs: 15_000, message: `${name} tidings listener got the ${driver} notification` });
        expect(n.priority).toBe('info');
        expect(n.publisherId).toBe('compute.py-host');
        expect(n.payload).toEqual(payload);
        expect(n.ctx).toMatchObject(PY_CTX);
        expect(n.metadata.message_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        expect(String(n.metadata.timestamp)).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}/);
      }
    });
  }

  it('other priorities are routed by priority (warn, error)', async () => {
    const eventType = uniqueName('prio');
    await py.notify({ driver: 'messagingv2', topics: [topic], publisherId: 'p', priority: 'warn', eventType, payload: 1, ctx: PY_CTX });
    await py.notify({ driver: 'messaging', topics: [topic], publisherId: 'p', priority: 'error', eventType, payload: 'two', ctx: PY_CTX });
    await waitFor(() => plain.filter((r) => r.eventType === eventType).length === 2, { timeoutMs: 15_000, message: 'warn and error reached the tidings listener' });
    const got = plain.filter((r) => r.eventType === eventType);
    expect(got.map((r) => [r.priority, r.payload]).sort()).toEqual([['error', 'two'], ['warn', 1]]);
  });
});

describe('interop: tidings Notifier -> Python listeners', () => {
  const topic = uniqueName('t-tsnotif');
  const pool = uniqueName('pypool');
  let transport: Transport;
  const pyListeners: PyProcess[] = [];

  beforeAll(async () => {
    await requireRabbitMQ();
    requireOsloMessaging();
    transport = await getNotificationTransport(RABBIT_URL);
    pyListeners.push(new PyProcess('notify_listener.py', { url: RABBIT_URL, topics: [topic] }));
    pyListeners.push(new PyProcess('notify_listener.py', { url: RABBIT_URL, topics: [topic], pool }));
    await Promise.all(pyListeners.map((p) => startPy(p)));
  }, 90_000);

  afterAll(async () => {
    await Promise.all(pyListeners.map((p) => p.stop()));
    await transport?.cleanup();
    await deleteQueues(notificationQueues([topic], [pool]));
  }, 60_000);

  const cases = [
    { driver: 'messagingv2', priority: 'info' },
    { driver: 'messaging', priority: 'warn' },
    { driver: 'messagingv2', priority: 'error' },
  ] as const;

  for (const { driver, priority } of cases) {
    it(`${driver} ${priority}: the un-pooled and the pooled Python listener each receive it`, async () => {
      const notifier = new Notifier(transport, { publisherId: 'compute.ts-host', driver, topics: [topic] });
      const eventType = uniqueName('compute.instance.create.end');
      const payload = { id: 42, name: 'vm-✓', list: [1, null, 'x'] };
      const ctx = { user_id: 'u-ts', project_id: 'p-ts', request_id: 'req-ts-1', roles: ['admin'] };
      await notifier[priority](ctx, eventType, payload);
      for (const [i, name] of ['un-pooled', 'pooled'].entries()) {
        const n = await pyListeners[i].waitForEvent((e) => e.event === 'notification' && e.event_type === eventType, 15_000, `${name} Python listener got the ${driver} notification`);
        expect(n.priority).toBe(priority);
        expect(n.publisher_id).toBe('compute.ts-host');
        expect(n.payload).toEqual(payload);
        expect(n.ctx).toMatchObject(ctx);
        expect(n.metadata.message_id).toMatch(/^[0-9a-f-]{36}$/);
        // oslo's str(utcnow()): space separator, no zone.
        expect(n.metadata.timestamp).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{6})?$/);
      }
    });
  }
});
