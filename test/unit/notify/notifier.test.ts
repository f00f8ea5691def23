// Notifier: the §1.10 body, routing per topic and priority, driver kinds, validation and failures.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvalidArgument, MessageDeliveryFailure, MessagingError } from '../../../src/core/errors.js';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { JsonPayloadSerializer } from '../../../src/core/serializer.js';
import { Target } from '../../../src/core/target.js';
import { getNotificationTransport, type Transport } from '../../../src/transport.js';
import { PRIORITIES, type Context } from '../../../src/contract/types.js';
import type { NotificationSendOptions } from '../../../src/contract/base-driver.js';
import { Notifier, formatTimestamp } from '../../../src/notify/notifier.js';
import { TestNotificationSink, maskSecrets, type NotificationBody } from '../../../src/notify/notifier-drivers.js';
import { NOTIFY_CHANNELS, type NotificationSentEvent } from '../../../src/notify/instrumentation.js';
import { uniqueName } from '../../../src/testing/wait.js';

const UUID_WITH_DASHES = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const OSLO_TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{6})?$/;

const transports: Transport[] = [];
async function transport(): Promise<Transport> {
  const t = await getNotificationTransport('memory:///' + uniqueName());
  transports.push(t);
  return t;
}
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(transports.splice(0).map((t) => t.cleanup()));
});

interface Sent {
  target: Target;
  ctx: Context;
  body: NotificationBody;
  options: NotificationSendOptions | undefined;
}

/** Records what the façade hands to the driver; the real driver still sends. */
function spySends(t: Transport): Sent[] {
  const sent: Sent[] = [];
  const original = t.driver.sendNotification.bind(t.driver);
  vi.spyOn(t.driver, 'sendNotification').mockImplementation((target, ctx, message, options) => {
    sent.push({ target, ctx, body: message as NotificationBody, options });
    return original(target, ctx, message, options);
  });
  return sent;
}

describe('formatTimestamp', () => {
  it('is Python str(utcnow()): naive UTC, space separator, microseconds or nothing', () => {
    expect(formatTimestamp(new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678)))).toBe('2024-01-02 03:04:05.678000');
    expect(formatTimestamp(new Date(Date.UTC(2024, 11, 31, 23, 59, 59, 5)))).toBe('2024-12-31 23:59:59.005000');
    expect(formatTimestamp(new Date(Date.UTC(2024, 1, 29, 0, 0, 0, 0)))).toBe('2024-02-29 00:00:00');
  });
});

describe('Notifier', () => {
  it('sends the oslo body for every priority (warning = WARN) to <topic>.<priority> as 2.0 by default', async () => {
    const t = await transport();
    const sent = spySends(t);
    const n = new Notifier(t, { publisherId: 'compute.host1' });
    const ctx = { user_id: 'u1', request_id: 'req-1' };
    for (const p of PRIORITIES) await n[p](ctx, `ev.${p}`, { p });
    await n.warning(ctx, 'ev.warning', 'scalar');
    expect(sent.map((s) => s.target.topic)).toEqual([...PRIORITIES.map((p) => `notifications.${p}`), 'notifications.warn']);
    expect(sent.map((s) => s.body.priority)).toEqual([...PRIORITIES.map((p) => p.toUpperCase()), 'WARN']);
    for (const s of sent) {
      expect(Object.keys(s.body).sort()).toEqual(['event_type', 'message_id', 'payload', 'priority', 'publisher_id', 'timestamp']);
      expect(s.body.message_id).toMatch(UUID_WITH_DASHES);
      expect(s.body.publisher_id).toBe('compute.host1');
      expect(s.body.timestamp).toMatch(OSLO_TIMESTAMP);
      expect(Math.abs(Date.parse(s.body.timestamp.replace(' ', 'T') + 'Z') - Date.now())).toBeLessThan(60_000);
      expect(s.ctx).toEqual(ctx);
      expect(s.options).toEqual({ version: 2.0, retry: undefined });
    }
    expect(sent[0].body).toMatchObject({ event_type: 'ev.audit', payload: { p: 'audit' } });
    expect(sent.at(-1)!.body).toMatchObject({ event_type: 'ev.warning', payload: 'scalar' });
    expect(new Set(sent.map((s) => s.body.message_id)).size).toBe(sent.length);
  });

  it("'messaging' sends version 1.0; every topic gets the same message; retry is passed on", async () => {
    const t = await transport();
    const sent = spySends(t);
    const n = new Notifier(t, { driver: 'messaging', topics: ['a', 'b'], retry: 3 });
    await n.info({}, 'ev', { id: 1 });
    expect(sent.map((s) => s.target.topic)).toEqual(['a.info', 'b.info']);
    expect(sent.map((s) => s.options)).toEqual([
      { version: 1.0, retry: 3 },
      { version: 1.0, retry: 3 },
    ]);
    expect(sent[0].body).toBe(sent[1].body);
    expect(sent[0].body.publisher_id).toBeNull();
  });

  it('prepare() shares drivers and sink and overrides publisherId and retry', async () => {
    const t = await transport();
    const n = new Notifier(t, { driver: 'test', publisherId: 'p1', retry: 1 });
    const child = n.prepare({ publisherId: 'p2' });
    const grandchild = child.prepare({ retry: 0 });
    await n.info({ a: 1 }, 'ev1', 1);
    await child.info({}, 'ev2', 2);
    await grandchild.error({}, 'ev3', 3);
    expect(child.testNotifications).toBe(n.testNotifications);
    expect(n.testNotifications.records.map((r) => [r.message.publisher_id, r.retry, r.priority])).toEqual([
      ['p1', 1, 'INFO'],
      ['p2', 1, 'INFO'],
      ['p2', 0, 'ERROR'],
    ]);
    expect(n.testNotifications.records[0].ctx).toEqual({ a: 1 });
    expect(n.testNotifications.byEventType('ev3')).toHaveLength(1);
    expect(() => n.prepare({ retry: -5 })).toThrow(InvalidArgument);
  });

  it("the 'test' driver can write into an injected sink, next to the messaging driver", async () => {
    const t = await transport();
    const sent = spySends(t);
    const sink = new TestNotificationSink();
    const n = new Notifier(t, { driver: ['messagingv2', 'test'], testSink: sink });
    await n.sample({}, 'metric', { v: 1 });
    expect(sent).toHaveLength(1);
    expect(sink.records[0].message).toBe(sent[0].body);
    sink.clear();
    expect(sink.length).toBe(0);
  });

  it("the 'log' driver writes one structured record per notification at the priority's level, secrets masked", async () => {
    const t = await transport();
    const sent = spySends(t);
    const logger = createMemoryLogger();
    const n = new Notifier(t, { driver: 'log', logger, publisherId: 'api.host' });
    const payload = { user: 'bob', password: 'hunter2', nested: { auth_token: 'tok', list: [{ client_secret: 's' }], ok: 1 }, adminPass: 'x' };
    await n.info({ auth_token: 'ctx-secret' }, 'identity.login', payload);
    for (const p of ['audit', 'debug', 'warn', 'error', 'critical', 'sample'] as const) await n[p]({}, `ev.${p}`, {});
    expect(sent).toHaveLength(0);
    expect(logger.records.map((r) => r.level)).toEqual(['info', 'info', 'debug', 'warn', 'error', 'error', 'info']);
    const first = logger.records[0];
    expect(first.fields).toMatchObject({ eventType: 'identity.login', publisherId: 'api.host', priority: 'INFO' });
    expect(first.fields.payload).toEqual({ user: 'bob', password: '***', nested: { auth_token: '***', list: [{ client_secret: '***' }], ok: 1 }, adminPass: '***' });
    const text = JSON.stringify(logger.records);
    for (const secret of ['hunter2', 'tok"', 'ctx-secret']) expect(text).not.toContain(secret);
    expect(payload.password).toBe('hunter2');
  });

  it('drops secret-looking context keys (auth_token, password...) unless sendSecretContextKeys is set', async () => {
    const t = await transport();
    const n = new Notifier(t, { driver: 'test' });
    await n.info({ user_id: 'u1', auth_token: 'tok', db_password: 'pw', request_id: 'r1' }, 'ev', {});
    expect(n.testNotifications.records[0].ctx).toEqual({ user_id: 'u1', request_id: 'r1' });
    const open = new Notifier(t, { driver: 'test', sendSecretContextKeys: true });
    await open.info({ user_id: 'u1', auth_token: 'tok' }, 'ev', {});
    expect(open.testNotifications.records[0].ctx).toEqual({ user_id: 'u1', auth_token: 'tok' });
    expect(() => new Notifier(t, { sendSecretContextKeys: 'yes' as unknown as boolean })).toThrow(InvalidArgument);
  });

  it("'noop' sends nothing and is the only configuration that is not enabled", async () => {
    const t = await transport();
    const sent = spySends(t);
    const noop = new Notifier(t, { driver: 'noop' });
    await noop.critical({}, 'ev', {});
    expect(sent).toHaveLength(0);
    expect(noop.isEnabled()).toBe(false);
    expect(new Notifier(t, { driver: ['noop'] }).isEnabled()).toBe(false);
    expect(new Notifier(t, { driver: ['noop', 'test'] }).isEnabled()).toBe(true);
    expect(new Notifier(t).isEnabled()).toBe(true);
    expect(new Notifier(t).drivers).toEqual(['messagingv2']);
  });

  it('refuses bad input with InvalidArgument and sends nothing', async () => {
    const t = await transport();
    const sent = spySends(t);
    const n = new Notifier(t);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await expect(n.info({}, '', {})).rejects.toThrow(InvalidArgument);
    await expect(n.info({}, 5 as never, {})).rejects.toThrow(/eventType/);
    await expect(n.info({}, 'ev', { f: () => 1 })).rejects.toThrow(/payload\.f/);
    await expect(n.info({}, 'ev', { n: 10n })).rejects.toThrow(InvalidArgument);
    await expect(n.info({}, 'ev', [1, NaN])).rejects.toThrow(/payload\[1\]/);
    await expect(n.info({}, 'ev', cyclic)).rejects.toThrow(/cycles/);
    await expect(n.info({}, 'ev', new Map([[1, 2]]))).rejects.toThrow(/JsonPayloadSerializer/);
    await expect(n.info({}, 'ev', undefined)).rejects.toThrow(InvalidArgument);
    await expect(n.info('ctx' as never, 'ev', {})).rejects.toThrow(/context/);
    await expect(n.info({ when: new Map() }, 'ev', {})).rejects.toThrow(/context\.when/);
    expect(sent).toHaveLength(0);
    // Dates have toJSON; a serializer turns the rest into JSON first.
    await n.info({}, 'ev', { at: new Date(0), skip: undefined });
    const json = new Notifier(t, { serializer: new JsonPayloadSerializer() });
    await json.info({}, 'ev', new Map([['k', new Set([1])]]));
    expect(sent.map((s) => s.body.payload)).toEqual([{ at: new Date(0), skip: undefined }, { k: [1] }]);
  });

  it('refuses bad options with InvalidArgument naming the field', async () => {
    const t = await transport();
    expect(() => new Notifier(t, { driver: 'kafka' as never })).toThrow(/driver/);
    expect(() => new Notifier(t, { driver: ['test', 'nope' as never] })).toThrow(/driver\[1\]/);
    expect(() => new Notifier(t, { topics: [] })).toThrow(/topics/);
    expect(() => new Notifier(t, { topics: ['a b'] })).toThrow(/topics\[0\]/);
    expect(() => new Notifier(t, { retry: 1.5 })).toThrow(/retry/);
    expect(() => new Notifier(t, { publisherId: '' })).toThrow(/publisherId/);
    expect(() => new Notifier(undefined as never)).toThrow(/transport/);
  });

  it('rejects with the typed error when the broker does not take it (stricter than oslo)', async () => {
    const t = await transport();
    const n = new Notifier(t, { driver: ['messagingv2', 'test'] });
    const failed: unknown[] = [];
    n.events.on('failed', (e) => failed.push(e.error));
    await t.cleanup();
    const err = await n.info({}, 'ev', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MessagingError);
    expect(failed).toEqual([err]);
    // The other driver still got it.
    expect(n.testNotifications.length).toBe(1);
  });

  it('a throwing event listener never fails the send; it is logged', async () => {
    const t = await transport();
    const logger = createMemoryLogger();
    const n = new Notifier(t, { driver: 'test', logger });
    n.events.on('sent', () => {
      throw new Error('listener bug');
    });
    await expect(n.info({}, 'ev', {})).resolves.toBeUndefined();
    expect(n.testNotifications.length).toBe(1);
    expect(logger.records.filter((r) => r.level === 'warn').map((r) => [r.msg, r.fields.event])).toEqual([['an event listener threw', 'sent']]);
  });

  it('wraps a non-tidings driver failure in MessageDeliveryFailure', async () => {
    const t = await transport();
    vi.spyOn(t.driver, 'sendNotification').mockRejectedValue(new TypeError('socket gone'));
    const err = await new Notifier(t).info({}, 'ev', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MessageDeliveryFailure);
    expect((err as Error).cause).toBeInstanceOf(TypeError);
  });

  it('emits sent events and publishes on the diagnostics channel', async () => {
    const t = await transport();
    const n = new Notifier(t, { driver: 'test', publisherId: 'p' });
    const events: NotificationSentEvent[] = [];
    const channelMessages: unknown[] = [];
    const onMessage = (m: unknown) => channelMessages.push(m);
    n.prepare({ publisherId: 'q' }).events.on('sent', (e) => events.push(e));
    subscribe(NOTIFY_CHANNELS.send, onMessage);
    try {
      await n.info({}, 'ev', {});
    } finally {
      unsubscribe(NOTIFY_CHANNELS.send, onMessage);
    }
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ eventType: 'ev', priority: 'info', publisherId: 'p', context: {} });
    expect(events[0].messageId).toBe(n.testNotifications.records[0].message.message_id);
    expect(channelMessages).toEqual(events);
  });
});

describe('maskSecrets', () => {
  it('masks secret-like keys at any depth and survives cycles', () => {
    const a: Record<string, unknown> = { apiKey: 'k', db_password: 'p', fine: 'v' };
    a.loop = a;
    expect(maskSecrets(a)).toEqual({ apiKey: '***', db_password: '***', fine: 'v', loop: '[Circular]' });
    expect(maskSecrets('plain')).toBe('plain');
  });
});
