// Conformance: notifications per priority, body fields, pools, shared queues,
// store-and-forward, requeue, and stopping a listener without losing messages.
import { describe, expect, it } from 'vitest';
import {
  getNotificationListener,
  NotificationResult,
  Notifier,
  PRIORITIES,
  Target,
  type Context,
  type Priority,
  type Transport,
} from '../index.js';
import { waitFor } from './wait.js';
import { expectNotSupported, markStopped, sendInRounds, started, type ConformanceEnv } from './harness.js';

/** One received notification as an endpoint saw it. */
export interface Seen {
  who: string;
  priority: Priority;
  ctx: Context;
  publisherId: unknown;
  eventType: string;
  payload: any;
  metadata: any;
}

/** An endpoint with a method per given priority that records into `log`. */
export function recordingEndpoint(who: string, log: Seen[], priorities: readonly Priority[] = ['info'], result?: () => unknown) {
  const ep: Record<string, unknown> = {};
  for (const priority of priorities) {
    ep[priority] = (ctx: Context, publisherId: unknown, eventType: string, payload: unknown, metadata: unknown) => {
      log.push({ who, priority, ctx, publisherId, eventType, payload, metadata });
      return result ? result() : NotificationResult.HANDLED;
    };
  }
  return ep;
}

/** Starts a listener on `topic` and registers stop()+wait() for teardown. */
export function startListener(env: ConformanceEnv, nt: Transport, topics: string[], endpoints: object[], options?: Record<string, unknown>) {
  return started(env, getNotificationListener(nt, topics.map((topic) => new Target({ topic })), endpoints, options as never));
}

export function notifier(nt: Transport, topic: string | string[], driver = 'messagingv2') {
  return new Notifier(nt, { publisherId: 'conformance.host1', driver, topics: Array.isArray(topic) ? topic : [topic] } as never);
}

const UUID_WITH_DASHES = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const OSLO_TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?$/;

const ids = (log: Seen[]) => log.map((s) => s.payload?.id);

export function notifyTests(env: ConformanceEnv): void {
  describe('notifications', () => {
    it('each priority reaches only the endpoint method of that priority; warning() arrives as warn', async () => {
      const nt = await env.notificationTransport();
      const topic = env.name('topic');
      const log: Seen[] = [];
      await startListener(env, nt, [topic], PRIORITIES.map((p) => recordingEndpoint(p, log, [p])));
      const n = notifier(nt, topic) as any;
      for (const p of PRIORITIES) await n[p]({}, `ev.${p}`, { p });
      await n.warning({}, 'ev.warning', { p: 'warning' });
      await waitFor(() => log.length >= PRIORITIES.length + 1, { timeoutMs: env.ms(10_000), message: 'all priorities received' });
      for (const s of log) {
        expect(s.who).toBe(s.priority);
        expect(s.metadata.priority).toBe(s.priority);
        expect(s.eventType).toBe(s.priority === 'warn' && s.payload.p === 'warning' ? 'ev.warning' : `ev.${s.priority}`);
      }
      expect(log.map((s) => s.priority).sort()).toEqual([...PRIORITIES, 'warn'].sort());
    });

    it('a listener only receives the priorities it has methods for', async () => {
      const nt = await env.notificationTransport();
      const topic = env.name('topic');
      const log: Seen[] = [];
      await startListener(env, nt, [topic], [recordingEndpoint('e', log, ['error'])]);
      const n = notifier(nt, topic);
      await n.info({}, 'ev.info', { id: 1 });
      await n.error({}, 'ev.error', { id: 2 });
      await waitFor(() => log.length >= 1, { timeoutMs: env.ms(10_000) });
      await n.error({}, 'ev.error', { id: 3 });
      await waitFor(() => log.length >= 2, { timeoutMs: env.ms(10_000) });
      expect(ids(log)).toEqual([2, 3]);
    });

    it('the body carries message_id, publisher_id, event_type, payload, timestamp and the context', async () => {
      const nt = await env.notificationTransport();
      const topic = env.name('topic');
      const log: Seen[] = [];
      await startListener(env, nt, [topic], [recordingEndpoint('e', log, ['info'])]);
      const ctx = { user_id: 'u1', project_id: 'p1', request_id: 'req-1' };
      const payload = { id: 1, name: 'vm-1', tags: ['a', 'b'], flavor: { vcpus: 2 }, none: null };
      const before = Date.now();
      await notifier(nt, topic).info(ctx, 'compute.instance.create.end', payload);
      await notifier(nt, topic).info({}, 'scalar.payload', 'just a string' as never);
      await notifier(nt, topic, 'messaging').info({}, 'v1.format', { id: 3 });
      await waitFor(() => log.length >= 3, { timeoutMs: env.ms(10_000), message: '3 notifications' });
      const [first] = log.filter((s) => s.eventType === 'compute.instance.create.end');
      expect(first.publisherId).toBe('conformance.host1');
      expect(first.payload).toEqual(payload);
      expect(first.ctx).toMatchObject(ctx);
      expect(first.metadata.message_id).toMatch(UUID_WITH_DASHES);
      expect(first.metadata.timestamp).toMatch(OSLO_TIMESTAMP);
      // oslo's metadata shape: exactly these enumerable keys (tidings extras are non-enumerable).
      expect(Object.keys(first.metadata).sort()).toEqual(['message_id', 'timestamp']);
      // Naive UTC: within a minute of now.
      const ts = Date.parse(first.metadata.timestamp.replace(' ', 'T') + 'Z');
      expect(Math.abs(ts - before)).toBeLessThan(60_000);
      expect(log.find((s) => s.eventType === 'scalar.payload')?.payload).toBe('just a string');
      // The 1.0 (messaging) format arrives the same way.
      const v1 = log.find((s) => s.eventType === 'v1.format');
      expect(v1?.payload).toEqual({ id: 3 });
      expect(v1?.metadata.message_id).toMatch(UUID_WITH_DASHES);
      expect(new Set(log.map((s) => s.metadata.message_id)).size).toBe(3);
    });

    it('a notifier with several topics publishes to each', async () => {
      const nt = await env.notificationTransport();
      const [a, b] = [env.name('topica'), env.name('topicb')];
      const la: Seen[] = [];
      const lb: Seen[] = [];
      await startListener(env, nt, [a], [recordingEndpoint('a', la)]);
      await startListener(env, nt, [b], [recordingEndpoint('b', lb)]);
      await notifier(nt, [a, b]).info({}, 'ev', { id: 1 });
      await waitFor(() => la.length === 1 && lb.length === 1, { timeoutMs: env.ms(10_000) });
    });

    it('one listener on several targets receives from each', async () => {
      const nt = await env.notificationTransport();
      const [a, b] = [env.name('topica'), env.name('topicb')];
      const log: Seen[] = [];
      await startListener(env, nt, [a, b], [recordingEndpoint('l', log, ['info', 'error'])]);
      await notifier(nt, a).info({}, 'from.a', { id: 1 });
      await notifier(nt, b).error({}, 'from.b', { id: 2 });
      await waitFor(() => log.length >= 2, { timeoutMs: env.ms(10_000) });
      expect(log.map((s) => `${s.priority}:${s.eventType}`).sort()).toEqual(['error:from.b', 'info:from.a']);
    });

    it('un-pooled listeners of a topic share its messages (each > 0, union = all, no duplicates)', async () => {
      const nt = await env.notificationTransport();
      const topic = env.name('topic');
      const log: Seen[] = [];
      await startListener(env, nt, [topic], [recordingEndpoint('l1', log)]);
      await startListener(env, nt, [topic], [recordingEndpoint('l2', log)]);
      const n = notifier(nt, topic);
      const N = await sendInRounds({
        send: (id) => n.info({}, 'ev', { id }),
        delivered: () => log.length,
        shared: () => new Set(log.map((s) => s.who)).size === 2,
        timeoutMs: env.ms(10_000),
        what: 'notifications',
      });
      expect(log.filter((s) => s.who === 'l1').length).toBeGreaterThan(0);
      expect(log.filter((s) => s.who === 'l2').length).toBeGreaterThan(0);
      expect(ids(log).sort((x, y) => x - y)).toEqual([...Array(N).keys()]);
    });
  });

  describe('pools', () => {
    if (env.caps.pools) {
      it('every pool gets every message; members of a pool share them', async () => {
        const nt = await env.notificationTransport();
        const topic = env.name('topic');
        const poolA = env.name('poola');
        const poolB = env.name('poolb');
        const a: Seen[] = [];
        const b: Seen[] = [];
        const plain: Seen[] = [];
        await startListener(env, nt, [topic], [recordingEndpoint('a1', a)], { pool: poolA });
        await startListener(env, nt, [topic], [recordingEndpoint('a2', a)], { pool: poolA });
        await startListener(env, nt, [topic], [recordingEndpoint('b1', b)], { pool: poolB });
        await startListener(env, nt, [topic], [recordingEndpoint('b2', b)], { pool: poolB });
        // The un-pooled queue also receives (oslo: the publisher declares it); drain it.
        await startListener(env, nt, [topic], [recordingEndpoint('plain', plain)]);
        const n = notifier(nt, topic);
        const N = await sendInRounds({
          send: (id) => n.info({}, 'ev', { id }),
          delivered: () => Math.min(a.length, b.length, plain.length),
          shared: () => new Set([...a, ...b].map((s) => s.who)).size === 4,
          timeoutMs: env.ms(10_000),
          what: 'notifications in both pools and the plain queue',
        });
        for (const [pool, log] of [['A', a], ['B', b]] as const) {
          const members = pool === 'A' ? ['a1', 'a2'] : ['b1', 'b2'];
          for (const m of members) expect(log.filter((s) => s.who === m).length, `pool ${pool} member ${m}`).toBeGreaterThan(0);
          expect(ids(log).sort((x, y) => x - y), `pool ${pool}`).toEqual([...Array(N).keys()]);
        }
        expect(ids(plain).sort((x, y) => x - y)).toEqual([...Array(N).keys()]);
      });

      it('one pool name on two topics: each listener sees only its own topic, every notification handled once', async () => {
        const nt = await env.notificationTransport();
        const [mine, theirs] = [env.name('topic'), env.name('topic')];
        const pool = env.name('pool');
        const logs = { [mine]: [] as Seen[], [theirs]: [] as Seen[] };
        // Two members on `mine` (the pool still shares their work), one on `theirs`.
        await startListener(env, nt, [mine], [recordingEndpoint('m1', logs[mine]!)], { pool });
        await startListener(env, nt, [mine], [recordingEndpoint('m2', logs[mine]!)], { pool });
        await startListener(env, nt, [theirs], [recordingEndpoint('t1', logs[theirs]!)], { pool });
        const N = 20;
        for (const topic of [mine, theirs]) {
          const n = notifier(nt, topic);
          for (let id = 0; id < N; id++) await n.info({}, 'ev', { id, topic });
        }
        const own = (topic: string) => logs[topic]!.filter((s) => s.payload.topic === topic).length;
        await waitFor(() => own(mine) >= N && own(theirs) >= N, { timeoutMs: env.ms(15_000), message: `the listeners of each topic handled its ${N}` }).catch(() => undefined);
        for (const topic of [mine, theirs]) {
          const log = logs[topic]!;
          expect(log.filter((s) => s.payload.topic !== topic).map((s) => `${s.who} got ${s.payload.topic}`), `foreign notifications for ${topic}`).toEqual([]);
          expect(ids(log).sort((x, y) => x - y), `each of ${topic} handled once`).toEqual([...Array(N).keys()]);
        }
      });
    } else {
      it('a pool fails at once with NotSupportedError (no pools capability)', async () => {
        const nt = await env.notificationTransport();
        await expectNotSupported(async () => {
          const l = getNotificationListener(nt, [new Target({ topic: env.name('topic') })], [recordingEndpoint('x', [])], { pool: env.name('pool') } as never);
          await l.start();
          env.defer(async () => {
            await l.stop();
            await l.wait();
          });
        });
      });
    }
  });

  describe('store and forward', () => {
    if (env.caps.durableNotifications) {
      it('a notification sent before the listener starts is received by it', async () => {
        const nt = await env.notificationTransport();
        const topic = env.name('topic');
        await notifier(nt, topic).info({}, 'early', { id: 1 });
        const log: Seen[] = [];
        await startListener(env, nt, [topic], [recordingEndpoint('late', log)]);
        await waitFor(() => log.length >= 1, { timeoutMs: env.ms(10_000), message: 'early notification' });
        expect(log[0].eventType).toBe('early');
      });
    } else {
      it('declares no durable notifications (nothing to ask for; the capability says messages may be lost)', async () => {
        const nt = await env.notificationTransport();
        expect(nt.driver.capabilities.durableNotifications).toBe(false);
      });
    }
  });

  describe('requeue', () => {
    if (env.caps.requeue) {
      it('REQUEUE redelivers when allowRequeue; the message is then done', async () => {
        const nt = await env.notificationTransport();
        const topic = env.name('topic');
        const deliveries = new Map<number, number>();
        await startListener(
          env,
          nt,
          [topic],
          [
            {
              info(_ctx: Context, _pub: unknown, _ev: string, payload: { id: number }) {
                const count = (deliveries.get(payload.id) ?? 0) + 1;
                deliveries.set(payload.id, count);
                return payload.id === 1 && count === 1 ? NotificationResult.REQUEUE : NotificationResult.HANDLED;
              },
            },
          ],
          { allowRequeue: true },
        );
        const n = notifier(nt, topic);
        await n.info({}, 'ev', { id: 1 });
        await waitFor(() => deliveries.get(1) === 2, { timeoutMs: env.ms(10_000), message: 'requeued message redelivered' });
        // A later message as a barrier: the handled message is not delivered again.
        await n.info({}, 'ev', { id: 2 });
        await waitFor(() => deliveries.get(2) === 1, { timeoutMs: env.ms(10_000) });
        await n.info({}, 'ev', { id: 3 });
        await waitFor(() => deliveries.get(3) === 1, { timeoutMs: env.ms(10_000) });
        expect(deliveries.get(1)).toBe(2);
      });

      it('an endpoint that throws has its message requeued when allowRequeue', async () => {
        const nt = await env.notificationTransport();
        const topic = env.name('topic');
        let calls = 0;
        await startListener(
          env,
          nt,
          [topic],
          [
            {
              info() {
                calls++;
                if (calls === 1) throw new Error('transient');
              },
            },
          ],
          { allowRequeue: true },
        );
        await notifier(nt, topic).info({}, 'ev', { id: 1 });
        await waitFor(() => calls === 2, { timeoutMs: env.ms(10_000), message: 'redelivery after a throw' });
      });
    } else {
      it('allowRequeue fails at once with NotSupportedError (no requeue capability)', async () => {
        const nt = await env.notificationTransport();
        await expectNotSupported(async () => {
          const l = getNotificationListener(nt, [new Target({ topic: env.name('topic') })], [recordingEndpoint('x', [])], { allowRequeue: true } as never);
          await l.start();
          env.defer(async () => {
            await l.stop();
            await l.wait();
          });
        });
      });
    }

    it('without allowRequeue, REQUEUE acknowledges: the message is not redelivered', async () => {
      const nt = await env.notificationTransport();
      const topic = env.name('topic');
      const deliveries = new Map<number, number>();
      await startListener(env, nt, [topic], [
        {
          info(_ctx: Context, _pub: unknown, _ev: string, payload: { id: number }) {
            deliveries.set(payload.id, (deliveries.get(payload.id) ?? 0) + 1);
            return NotificationResult.REQUEUE;
          },
        },
      ]);
      const n = notifier(nt, topic);
      await n.info({}, 'ev', { id: 1 });
      await waitFor(() => deliveries.get(1) === 1, { timeoutMs: env.ms(10_000) });
      for (const id of [2, 3]) {
        await n.info({}, 'ev', { id });
        await waitFor(() => deliveries.get(id) === 1, { timeoutMs: env.ms(10_000) });
      }
      expect(deliveries.get(1)).toBe(1);
    });
  });

  describe('stopping a listener', () => {
    it('a listener stopped mid-stream loses nothing: every message is handled once, before stop or by the next listener', async () => {
      const nt = await env.notificationTransport();
      const topic = env.name('topic');
      const first: number[] = [];
      const second: number[] = [];
      const slowly = (log: number[]) => ({
        async info(_ctx: Context, _pub: unknown, _ev: string, payload: { id: number }) {
          await new Promise((r) => setTimeout(r, 5));
          log.push(payload.id);
        },
      });
      const l1 = await startListener(env, nt, [topic], [slowly(first)], { executorSize: 4 });
      const n = notifier(nt, topic);
      const N = 60;
      let sent = 0;
      const sending = (async () => {
        for (; sent < N; sent++) await n.info({}, 'ev', { id: sent });
      })();
      await waitFor(() => first.length >= 5, { timeoutMs: env.ms(10_000), message: 'first listener under way' });
      // The successor shares the queue before l1 stops, so nothing depends on durability.
      await startListener(env, nt, [topic], [slowly(second)], { executorSize: 4 });
      await waitFor(() => sent >= N / 2, { timeoutMs: env.ms(10_000) });
      await l1.stop();
      await l1.wait();
      markStopped(l1);
      const handledByFirst = first.length;
      await sending;
      await waitFor(() => first.length + second.length >= N, { timeoutMs: env.ms(15_000), message: `${N} handled across both listeners` });
      expect(first.length, 'nothing handled by the first listener after its wait() resolved').toBe(handledByFirst);
      expect([...first, ...second].sort((x, y) => x - y)).toEqual([...Array(N).keys()]);
    });

    it('stop() lets received messages finish: wait() resolves only after in-flight handlers complete', async () => {
      const nt = await env.notificationTransport();
      const topic = env.name('topic');
      const gate = env.gate();
      const done: number[] = [];
      let started = 0;
      const l = await startListener(env, nt, [topic], [
        {
          async info(_ctx: Context, _pub: unknown, _ev: string, payload: { id: number }) {
            started++;
            await gate.promise;
            done.push(payload.id);
          },
        },
      ]);
      await notifier(nt, topic).info({}, 'ev', { id: 7 });
      await waitFor(() => started === 1, { timeoutMs: env.ms(10_000) });
      await l.stop();
      let waited = false;
      const waiting = l.wait().then(() => (waited = true));
      markStopped(l);
      await new Promise((r) => setTimeout(r, 50));
      expect(waited, 'wait() must not resolve while a handler runs').toBe(false);
      gate.resolve();
      await waiting;
      expect(done).toEqual([7]);
    });
  });
}
