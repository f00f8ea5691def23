// Events by name over memory://: listener.on(glob, handler) beside priority endpoints, the glob's
// meaning, the priorities it subscribes to, batch listeners, and bad or late registrations.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { InvalidArgument, InvalidState } from '../../../src/core/errors.js';
import { PRIORITIES, type Context } from '../../../src/contract/types.js';
import { Notifier } from '../../../src/notify/notifier.js';
import { NotificationResult, type HandlerFailure } from '../../../src/notify/dispatcher.js';
import { eventTypeGlob, type NotificationEventMetadata } from '../../../src/notify/event-routes.js';
import { getBatchNotificationListener, getNotificationListener } from '../../../src/notify/listener.js';
import type { NotificationDispatchedEvent } from '../../../src/notify/instrumentation.js';
import { uniqueName, waitFor } from '../../../src/testing/wait.js';
import { useNotifyHarness } from '../notify/harness.js';

const { transport, track } = useNotifyHarness();

describe('eventTypeGlob', () => {
  it('* matches any run of characters, dots included; the rest is literal and the whole type must match', () => {
    const glob = eventTypeGlob('compute.instance.*');
    for (const yes of ['compute.instance.create.end', 'compute.instance.delete', 'compute.instance.']) expect(glob.test(yes)).toBe(true);
    for (const no of ['compute.instancex', 'compute.volume.create', 'xcompute.instance.create', 'compute_instance_create']) expect(glob.test(no)).toBe(false);
    expect(eventTypeGlob('*').test('anything.at.all')).toBe(true);
    expect(eventTypeGlob('*.end').test('compute.instance.create.end')).toBe(true);
    expect(eventTypeGlob('*.end').test('compute.instance.create.start')).toBe(false);
    expect(eventTypeGlob('a.b').test('aXb')).toBe(false);
    expect(eventTypeGlob('a.b').test('a.b.c')).toBe(false);
    expect(eventTypeGlob('x(1)+[y]').test('x(1)+[y]')).toBe(true);
  });
});

describe('listener.on()', () => {
  it('routes by event type beside priority endpoints; non-matching notifications are ignored', async () => {
    const t = await transport();
    const topic = uniqueName();
    const seen: string[] = [];
    const metas: NotificationEventMetadata[] = [];
    const endpoint = { info: (_c: Context, _p: string | null, eventType: string) => void seen.push(`endpoint:${eventType}`) };
    const listener = track(getNotificationListener(t, [{ topic }], [endpoint]));
    listener
      .on('compute.instance.*', (_ctx, payload, metadata) => {
        seen.push(`instance:${metadata.eventType}:${payload.n}`);
        metas.push(metadata);
      })
      .on('*.end', (_ctx, _payload, metadata) => void seen.push(`end:${metadata.eventType}`));
    expect(listener.priorities).toEqual(PRIORITIES);
    await listener.start();
    const notifier = new Notifier(t, { topics: [topic], publisherId: 'compute.host1' });
    await notifier.info({ user: 'u' }, 'compute.instance.create.end', { n: 1 });
    await notifier.info({}, 'volume.create.start', { n: 2 });
    await notifier.error({}, 'compute.instance.delete.start', { n: 3 });
    await waitFor(() => seen.length >= 5, { message: 'five deliveries' });
    // Per notification: endpoints first, then on() handlers in registration order (notifications run concurrently).
    const of = (eventType: string) => seen.filter((s) => s.includes(`:${eventType}`));
    expect(of('compute.instance.create.end')).toEqual(['endpoint:compute.instance.create.end', 'instance:compute.instance.create.end:1', 'end:compute.instance.create.end']);
    expect(of('volume.create.start')).toEqual(['endpoint:volume.create.start']);
    // error has no endpoint method, only the on() handlers' subscription.
    expect(of('compute.instance.delete.start')).toEqual(['instance:compute.instance.delete.start:3']);
    expect(seen).toHaveLength(5);
    const created = metas.find((m) => m.eventType === 'compute.instance.create.end')!;
    expect(created).toMatchObject({ publisherId: 'compute.host1', priority: 'info' });
    expect(created.message_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(metas.find((m) => m.eventType === 'compute.instance.delete.start')).toMatchObject({ priority: 'error' });
  });

  it('subscribes only to the given priorities; a listener may have on() handlers and no endpoints', async () => {
    const t = await transport();
    const topic = uniqueName();
    const seen: string[] = [];
    const listener = track(getNotificationListener(t, [{ topic }], []));
    listener.on('billing.*', { priorities: ['error', 'critical'] }, (_ctx, _payload, m) => void seen.push(`${m.priority}:${m.eventType}`));
    expect(listener.priorities).toEqual(['error', 'critical']);
    await listener.start();
    const notifier = new Notifier(t, { topics: [topic] });
    await notifier.info({}, 'billing.charge', {});
    await notifier.critical({}, 'billing.charge', {});
    await notifier.error({}, 'billing.refund', {});
    await waitFor(() => seen.length >= 2, { message: 'two deliveries' });
    expect(seen.sort()).toEqual(['critical:billing.charge', 'error:billing.refund']);
  });

  it('a handler that throws or returns REQUEUE is reported and requeued like an endpoint method', async () => {
    const t = await transport();
    const topic = uniqueName();
    const failures: HandlerFailure[] = [];
    const dispatched: NotificationDispatchedEvent[] = [];
    let calls = 0;
    const listener = track(getNotificationListener(t, [{ topic }], [], { allowRequeue: true }));
    listener.on('job.*', () => {
      calls++;
      if (calls === 1) throw new Error('first try fails');
      if (calls === 2) return NotificationResult.REQUEUE;
    });
    listener.events.on('handlerError', (f) => failures.push(f));
    listener.events.on('dispatched', (e) => dispatched.push(e));
    await listener.start();
    await new Notifier(t, { topics: [topic] }).info({}, 'job.done', {});
    await waitFor(() => dispatched.length >= 3, { message: 'delivered three times' });
    expect(dispatched.map((e) => e.requeued)).toEqual([1, 1, 0]);
    expect(failures).toEqual([{ error: new Error('first try fails'), priority: 'info', endpoint: 'on("job.*")', eventTypes: ['job.done'] }]);
  });

  it('works on batch listeners: each matching notification of a batch in turn', async () => {
    const t = await transport();
    const topic = uniqueName();
    const seen: string[] = [];
    const listener = track(getBatchNotificationListener(t, [{ topic }], [], { batchSize: 10, batchTimeout: 50 }));
    listener.on('a.*', (_ctx, payload: { n: number }) => void seen.push(`a${payload.n}`));
    await listener.start();
    const notifier = new Notifier(t, { topics: [topic] });
    for (let n = 0; n < 4; n++) await notifier.info({}, n % 2 ? 'b.x' : 'a.x', { n });
    await waitFor(() => seen.length >= 2, { message: 'two a.* deliveries' });
    expect(seen).toEqual(['a0', 'a2']);
  });

  it('refuses bad arguments with InvalidArgument and registrations after start() with InvalidState', async () => {
    const t = await transport();
    const listener = track(getNotificationListener(t, [{ topic: uniqueName() }], [{ info() {} }]));
    const handler = () => undefined;
    expect(() => listener.on('', handler)).toThrow(InvalidArgument);
    expect(() => listener.on('a.*', null as never)).toThrow(/handler/);
    expect(() => listener.on('a.*', { payload: { parse() {} } as never }, handler)).toThrow(/options\.payload/);
    expect(() => listener.on('a.*', { priorities: ['loud' as never] }, handler)).toThrow(/options\.priorities/);
    expect(() => listener.on('a.*', { priorities: [] }, handler)).toThrow(/options\.priorities/);
    expect(listener.priorities).toEqual(['info']);
    await listener.start();
    expect(() => listener.on('a.*', handler)).toThrow(InvalidState);
    await listener.stop();
    expect(() => listener.on('a.*', handler)).toThrow(InvalidState);
    await listener.wait();
    // After wait() the listener is idle again: handlers may be added before the next start().
    listener.on('a.*', handler);
    expect(listener.priorities).toEqual(PRIORITIES);
  });

  it('types: without a schema the payload is any and the metadata carries the event type', () => {
    const register = (listener: ReturnType<typeof getNotificationListener>) =>
      listener.on('x.*', (ctx, payload, metadata) => {
        expectTypeOf(ctx).toEqualTypeOf<Context>();
        expectTypeOf(payload).toBeAny();
        expectTypeOf(metadata.eventType).toEqualTypeOf<string>();
        expectTypeOf(metadata.publisherId).toEqualTypeOf<string | null>();
      });
    expectTypeOf(register).toBeFunction();
  });
});
