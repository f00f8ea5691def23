// Notification listeners end to end over memory://: priorities, pools, requeue, errors,
// filters, back-pressure, draining on stop, lifecycle order and bad input.
import { describe, expect, it } from 'vitest';
import { InvalidArgument, InvalidState, InvalidTarget, NotSupportedError } from '../../../src/core/errors.js';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { Target } from '../../../src/core/target.js';
import type { Transport } from '../../../src/transport.js';
import { PRIORITIES, type Context, type Priority } from '../../../src/contract/types.js';
import { Notifier } from '../../../src/notify/notifier.js';
import { NotificationFilter } from '../../../src/notify/filter.js';
import { NotificationResult, type HandlerFailure, type NotificationMetadata } from '../../../src/notify/dispatcher.js';
import { getNotificationListener } from '../../../src/notify/listener.js';
import type { NotificationDispatchedEvent } from '../../../src/notify/instrumentation.js';
import { deferred, uniqueName, waitFor } from '../../../src/testing/wait.js';
import { useNotifyHarness } from './harness.js';

interface Seen {
  who: string;
  priority: Priority;
  ctx: Context;
  publisherId: string | null;
  eventType: string;
  payload: any;
  metadata: NotificationMetadata;
}

const { transport, track } = useNotifyHarness();

function recorder(who: string, log: Seen[], priorities: readonly Priority[] = ['info'], result?: (s: Seen) => unknown) {
  const endpoint: Record<string, unknown> = {};
  for (const priority of priorities) {
    endpoint[priority] = (ctx: Context, publisherId: string | null, eventType: string, payload: unknown, metadata: NotificationMetadata) => {
      const seen = { who, priority, ctx, publisherId, eventType, payload, metadata };
      log.push(seen);
      return result?.(seen);
    };
  }
  return endpoint;
}

async function listen(t: Transport, topic: string, endpoints: object[], options: Parameters<typeof getNotificationListener>[3] = {}) {
  const l = getNotificationListener(t, [new Target({ topic })], endpoints, options);
  track(l);
  await l.start();
  return l;
}


const ids = (log: Seen[]) => log.map((s) => s.payload.id as number).sort((a, b) => a - b);
const range = (n: number) => [...Array(n).keys()];

describe('getNotificationListener', () => {
  it('delivers every priority to the method of that name; warning() arrives as warn', async () => {
    const t = await transport();
    const topic = uniqueName();
    const log: Seen[] = [];
    await listen(t, topic, [recorder('all', log, PRIORITIES)]);
    const n = new Notifier(t, { topics: [topic], publisherId: 'compute.host1' });
    const ctx = { user_id: 'u1' };
    for (const p of PRIORITIES) await n[p](ctx, `ev.${p}`, { id: 0, p });
    await n.warning(ctx, 'ev.warning', { id: 0, p: 'warning' });
    await waitFor(() => log.length === PRIORITIES.length + 1, { message: 'all priorities' });
    expect(log.map((s) => s.priority).sort()).toEqual([...PRIORITIES, 'warn'].sort());
    for (const s of log) {
      expect(s.eventType).toBe(`ev.${s.payload.p}`);
      expect(s.ctx).toEqual(ctx);
      expect(s.publisherId).toBe('compute.host1');
      expect(s.metadata.message_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(s.metadata.timestamp).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?$/);
    }
  });

  it('subscribes only to priorities it has methods for, on every target', async () => {
    const t = await transport();
    const [a, b] = [uniqueName(), uniqueName()];
    const log: Seen[] = [];
    const l = getNotificationListener(t, [{ topic: a }, new Target({ topic: b })], [recorder('e', log, ['error'])]);
    track(l);
    expect(l.priorities).toEqual(['error']);
    await l.start();
    await new Notifier(t, { topics: [a] }).info({}, 'ev', { id: 1 });
    await new Notifier(t, { topics: [a] }).error({}, 'ev', { id: 2 });
    await new Notifier(t, { topics: [b] }).error({}, 'ev', { id: 3 });
    await waitFor(() => log.length === 2);
    expect(ids(log)).toEqual([2, 3]);
  });

  it('both messaging (1.0) and messagingv2 (2.0) notifiers reach the listener; several topics each get one', async () => {
    const t = await transport();
    const [a, b] = [uniqueName(), uniqueName()];
    const la: Seen[] = [];
    const lb: Seen[] = [];
    await listen(t, a, [recorder('a', la)]);
    await listen(t, b, [recorder('b', lb)]);
    await new Notifier(t, { driver: 'messaging', topics: [a, b] }).info({}, 'v1', { id: 1 });
    await new Notifier(t, { driver: 'messagingv2', topics: [a, b] }).info({}, 'v2', { id: 2 });
    await waitFor(() => la.length === 2 && lb.length === 2);
    expect(la.map((s) => s.eventType).sort()).toEqual(['v1', 'v2']);
    expect(lb.map((s) => s.metadata.message_id).sort()).toEqual(la.map((s) => s.metadata.message_id).sort());
  });

  it('two pools each get every message; two members of one pool share them', async () => {
    const t = await transport();
    const topic = uniqueName();
    const [poolA, poolB] = [uniqueName('pool'), uniqueName('pool')];
    const a: Seen[] = [];
    const b: Seen[] = [];
    await listen(t, topic, [recorder('a1', a)], { pool: poolA });
    await listen(t, topic, [recorder('a2', a)], { pool: poolA });
    await listen(t, topic, [recorder('b1', b)], { pool: poolB });
    const N = 30;
    const n = new Notifier(t, { topics: [topic] });
    for (let id = 0; id < N; id++) await n.info({}, 'ev', { id });
    await waitFor(() => a.length >= N && b.length >= N, { message: `${N} per pool` });
    expect(ids(a)).toEqual(range(N));
    expect(ids(b)).toEqual(range(N));
    expect(a.filter((s) => s.who === 'a1').length).toBeGreaterThan(0);
    expect(a.filter((s) => s.who === 'a2').length).toBeGreaterThan(0);
  });

  it('un-pooled listeners of a topic share its messages', async () => {
    const t = await transport();
    const topic = uniqueName();
    const log: Seen[] = [];
    await listen(t, topic, [recorder('l1', log)]);
    await listen(t, topic, [recorder('l2', log)]);
    const N = 20;
    const n = new Notifier(t, { topics: [topic] });
    for (let id = 0; id < N; id++) await n.info({}, 'ev', { id });
    await waitFor(() => log.length >= N);
    expect(ids(log)).toEqual(range(N));
    expect(log.filter((s) => s.who === 'l1').length).toBeGreaterThan(0);
    expect(log.filter((s) => s.who === 'l2').length).toBeGreaterThan(0);
  });

  it('REQUEUE redelivers when allowRequeue; otherwise the message is acknowledged', async () => {
    const t = await transport();
    const [withRequeue, without] = [uniqueName(), uniqueName()];
    const requeueOnce = (s: Seen) => (s.payload.id === 1 && !s.payload.seen ? ((s.payload.seen = true), NotificationResult.REQUEUE) : undefined);
    const r: Seen[] = [];
    const attempts = new Map<number, number>();
    await listen(t, withRequeue, [recorder('r', r, ['info'], (s) => {
      attempts.set(s.payload.id, (attempts.get(s.payload.id) ?? 0) + 1);
      return attempts.get(s.payload.id) === 1 && s.payload.id === 1 ? NotificationResult.REQUEUE : NotificationResult.HANDLED;
    })], { allowRequeue: true });
    const a: Seen[] = [];
    await listen(t, without, [recorder('a', a, ['info'], requeueOnce)]);
    for (const topic of [withRequeue, without]) {
      const n = new Notifier(t, { topics: [topic] });
      await n.info({}, 'ev', { id: 1 });
      await n.info({}, 'ev', { id: 2 });
    }
    await waitFor(() => attempts.get(1) === 2 && attempts.get(2) === 1, { message: 'redelivery of id 1' });
    await waitFor(() => a.length >= 2);
    // A later marker proves the REQUEUE'd message was not redelivered without allowRequeue.
    await new Notifier(t, { topics: [without] }).info({}, 'marker', { id: 3 });
    await waitFor(() => a.some((s) => s.payload.id === 3));
    expect(a.map((s) => s.payload.id)).toEqual([1, 2, 3]);
  });

  it('a throwing endpoint means requeue (allowRequeue) and the listener keeps going', async () => {
    const t = await transport();
    const topic = uniqueName();
    const failures: HandlerFailure[] = [];
    const handled: number[] = [];
    const tries = new Map<number, number>();
    const l = await listen(t, topic, [
      {
        info(_ctx: Context, _p: string | null, _e: string, payload: { id: number }) {
          const n = (tries.get(payload.id) ?? 0) + 1;
          tries.set(payload.id, n);
          if (payload.id % 2 === 0 && n === 1) throw new Error(`fails first time ${payload.id}`);
          handled.push(payload.id);
        },
      },
    ], { allowRequeue: true });
    l.events.on('handlerError', (f) => failures.push(f));
    const n = new Notifier(t, { topics: [topic] });
    for (let id = 0; id < 6; id++) await n.info({}, 'ev', { id });
    await waitFor(() => handled.length === 6, { message: 'all handled after retries' });
    expect(handled.sort()).toEqual(range(6));
    expect(failures.map((f) => (f.error as Error).message).sort()).toEqual(['fails first time 0', 'fails first time 2', 'fails first time 4']);
    expect(l.running).toBe(true);
  });

  it('applies endpoint filters; a filtered-out notification is still acknowledged', async () => {
    const t = await transport();
    const topic = uniqueName();
    const compute: Seen[] = [];
    const all: Seen[] = [];
    await listen(t, topic, [
      Object.assign(recorder('compute', compute), { filterRule: new NotificationFilter({ eventType: 'compute\\.', payload: { state: '^active$' } }) }),
      recorder('all', all),
    ]);
    const n = new Notifier(t, { topics: [topic] });
    await n.info({}, 'compute.instance.update', { id: 1, state: 'active' });
    await n.info({}, 'compute.instance.update', { id: 2, state: 'inactive' });
    await n.info({}, 'network.port.update', { id: 3, state: 'active' });
    await waitFor(() => all.length === 3);
    expect(ids(compute)).toEqual([1]);
  });

  it('keeps at most executorSize handlers in flight', async () => {
    const t = await transport();
    const topic = uniqueName();
    const gate = deferred();
    let active = 0;
    let maxActive = 0;
    let done = 0;
    await listen(t, topic, [
      {
        async info() {
          active++;
          maxActive = Math.max(maxActive, active);
          await gate.promise;
          active--;
          done++;
        },
      },
    ], { executorSize: 2 });
    const n = new Notifier(t, { topics: [topic] });
    for (let id = 0; id < 8; id++) await n.info({}, 'ev', { id });
    await waitFor(() => active === 2);
    gate.resolve();
    await waitFor(() => done === 8);
    expect(maxActive).toBe(2);
  });

  it('stop() hands what was received to the endpoints and wait() drains them; nothing is lost', async () => {
    const t = await transport();
    const topic = uniqueName();
    const gate = deferred();
    let started = 0;
    let finished = 0;
    const first: number[] = [];
    const l1 = await listen(t, topic, [
      {
        async info(_c: Context, _p: string | null, _e: string, payload: { id: number }) {
          started++;
          await gate.promise;
          first.push(payload.id);
          finished++;
        },
      },
    ], { executorSize: 2 });
    const n = new Notifier(t, { topics: [topic] });
    for (let id = 0; id < 10; id++) await n.info({}, 'ev', { id });
    await waitFor(() => started === 2);
    const stopped = l1.stop();
    setTimeout(() => gate.resolve(), 20);
    await stopped;
    await l1.wait();
    expect(finished).toBe(started);
    // Whatever l1 did not take is still queued for the next listener: the union is complete.
    const second: Seen[] = [];
    await listen(t, topic, [recorder('l2', second)]);
    await n.info({}, 'marker', { id: 10 });
    await waitFor(() => second.some((s) => s.payload.id === 10));
    expect([...first, ...second.map((s) => s.payload.id as number)].sort((a, b) => a - b)).toEqual(range(11));
  });

  it('emits started, dispatched and stopped events', async () => {
    const t = await transport();
    const topic = uniqueName();
    const l = getNotificationListener(t, [{ topic }], [{ info: () => NotificationResult.HANDLED, error: () => NotificationResult.REQUEUE }]);
    track(l);
    const seen: string[] = [];
    const dispatched: NotificationDispatchedEvent[] = [];
    l.events.on('started', () => seen.push('started'));
    l.events.on('stopped', () => seen.push('stopped'));
    l.events.on('dispatched', (e) => dispatched.push(e));
    await l.start();
    await new Notifier(t, { topics: [topic] }).info({ request_id: 'r1' }, 'ev', {});
    await new Notifier(t, { topics: [topic] }).error({}, 'ev', {});
    await waitFor(() => dispatched.length === 2);
    expect(dispatched[0].contexts).toEqual([{ request_id: 'r1' }]);
    await l.stop();
    expect(seen).toEqual(['started', 'stopped']);
    // Without allowRequeue a REQUEUE result is acknowledged.
    expect(dispatched.map((e) => [e.priorities, e.acknowledged, e.requeued])).toEqual([
      [['info'], 1, 0],
      [['error'], 1, 0],
    ]);
  });

  it('settles alike whether a handler returns a plain value or a promise (requeue, ack, dispatched counts)', async () => {
    const t = await transport();
    const topic = uniqueName();
    const attempts = new Map<number, number>();
    const l = getNotificationListener(t, [{ topic }], [{
      // id 1: REQUEUE returned as a plain value the first time; id 2: REQUEUE from a promise the first time.
      info: (_c: unknown, _p: unknown, _e: unknown, payload: { id: number }) => {
        const n = (attempts.get(payload.id) ?? 0) + 1;
        attempts.set(payload.id, n);
        const result = n === 1 ? NotificationResult.REQUEUE : NotificationResult.HANDLED;
        return payload.id === 2 ? Promise.resolve(result) : result;
      },
    }], { allowRequeue: true });
    track(l);
    const dispatched: NotificationDispatchedEvent[] = [];
    l.events.on('dispatched', (e) => dispatched.push(e));
    await l.start();
    const n = new Notifier(t, { topics: [topic] });
    await n.info({}, 'ev', { id: 1 });
    await n.info({}, 'ev', { id: 2 });
    await waitFor(() => dispatched.length === 4, { message: 'both notifications requeued once, then handled' });
    expect(Object.fromEntries(attempts)).toEqual({ 1: 2, 2: 2 });
    expect(dispatched.map((e) => [e.acknowledged, e.requeued]).sort()).toEqual([[0, 1], [0, 1], [1, 0], [1, 0]]);
    expect(dispatched.every((e) => e.durationMs >= 0)).toBe(true);
  });

  it('a throwing event listener never breaks dispatch or settling; it is logged', async () => {
    const t = await transport();
    const topic = uniqueName();
    const logger = createMemoryLogger();
    const handled: number[] = [];
    const l = getNotificationListener(t, [{ topic }], [
      {
        info(_ctx: Context, _p: string | null, _e: string, payload: { id: number }) {
          handled.push(payload.id);
          if (payload.id === 0) throw new Error('endpoint failed');
        },
      },
    ], { logger, executorSize: 1 });
    track(l);
    for (const event of ['started', 'dispatched', 'handlerError'] as const) {
      l.events.on(event, () => {
        throw new Error(`${event} listener bug`);
      });
    }
    await l.start();
    const n = new Notifier(t, { topics: [topic] });
    for (let id = 0; id < 3; id++) await n.info({}, 'ev', { id });
    const warned = () => logger.records.filter((r) => r.level === 'warn' && r.msg === 'an event listener threw').map((r) => r.fields.event);
    await waitFor(() => warned().length === 5, { message: 'every throwing listener logged' });
    expect(handled).toEqual([0, 1, 2]);
    expect(warned()).toEqual(['started', 'handlerError', 'dispatched', 'dispatched', 'dispatched']);
    expect(l.running).toBe(true);
  });

  it('enforces start → stop → wait and can be started again after wait()', async () => {
    const t = await transport();
    const topic = uniqueName();
    const log: Seen[] = [];
    const l = getNotificationListener(t, [{ topic }], [recorder('e', log)]);
    track(l);
    await expect(l.stop()).rejects.toThrow(InvalidState);
    await expect(l.wait()).rejects.toThrow(InvalidState);
    await Promise.all([l.start(), l.start()]);
    await expect(l.wait()).rejects.toThrow(InvalidState);
    await l.stop();
    await l.stop();
    await expect(l.start()).rejects.toThrow(InvalidState);
    await l.wait();
    await l.wait();
    await l.start();
    await new Notifier(t, { topics: [topic] }).info({}, 'ev', { id: 1 });
    await waitFor(() => log.length === 1);
  });

  it('a stop() during start() leaves nothing subscribed', async () => {
    const t = await transport();
    const topic = uniqueName();
    const l = getNotificationListener(t, [{ topic }], [{ info() {} }]);
    const starting = l.start();
    await l.stop();
    await starting;
    expect(l.running).toBe(false);
    await l.wait();
  });

  it('refuses bad targets, endpoints and options', async () => {
    const t = await transport();
    const ok = [{ info() {} }];
    expect(() => getNotificationListener(t, [new Target({ exchange: 'x' })], ok)).toThrow(InvalidTarget);
    expect(() => getNotificationListener(t, [], ok)).toThrow(/targets/);
    // @ts-expect-error no priority method: rejected by the types as well
    expect(() => getNotificationListener(t, [{ topic: 'a' }], [{ warning() {}, notify() {} }])).toThrow(InvalidArgument);
    // No endpoints is allowed at construction (on() may add handlers); start() refuses it.
    await expect(getNotificationListener(t, [{ topic: 'a' }], []).start()).rejects.toThrow(/endpoints/);
    expect(() => getNotificationListener(t, [{ topic: 'a' }], ok, { executorSize: 0 })).toThrow(/executorSize/);
    expect(() => getNotificationListener(t, [{ topic: 'a' }], ok, { pool: 'a b' })).toThrow(/pool/);
    expect(() => getNotificationListener(t, [{ topic: 'a' }], ok, { allowRequeue: 'yes' as never })).toThrow(/allowRequeue/);
    expect(() => getNotificationListener(t, [{ topic: 'a' }], ok, { batchSize: 10 } as never)).toThrow(/getBatchNotificationListener/);
  });

  it('fails at construction with NotSupportedError when the driver lacks requeue or pools', async () => {
    const t = await transport();
    Object.defineProperty(t.driver, 'capabilities', { value: { ...t.driver.capabilities, requeue: false, pools: false } });
    const ok = [{ info() {} }];
    expect(() => getNotificationListener(t, [{ topic: 'a' }], ok, { allowRequeue: true })).toThrow(NotSupportedError);
    expect(() => getNotificationListener(t, [{ topic: 'a' }], ok, { pool: 'p' })).toThrow(NotSupportedError);
    expect(() => getNotificationListener(t, [{ topic: 'a' }], ok)).not.toThrow();
  });
});
