// Conformance: `handlerTimeout` frees a stuck handler's executor slot on every driver. The caller
// of a stuck call gets a HandlerTimeout at the deadline and the server keeps serving on its few
// slots; a stuck notification is requeued through the broker (allowRequeue) and handled on its
// next delivery, or acknowledged so that the next one is handled.
import { describe, expect, it } from 'vitest';
import { getRpcClient, HandlerTimeout, type Context, type NotificationHandlerTimeoutEvent, type NotificationMetadata, type RpcMeta } from '../index.js';
import { waitFor } from './wait.js';
import type { ConformanceEnv } from './harness.js';
import { notifier, startListener } from './notify.js';
import { startServer } from './rpc.js';

const TIMEOUT_MS = 200;

export function handlerTimeoutTests(env: ConformanceEnv): void {
  describe('handler timeouts', () => {
    if (env.caps.rpc) {
      it('answers stuck calls with HandlerTimeout at the deadline and frees their slots: 6 in a row on 2 slots, then a normal call', async () => {
        const t = await env.rpcTransport();
        const topic = env.name('topic');
        const signals: AbortSignal[] = [];
        const endpoint = {
          // Ignores its signal: only the lifecycle can free the slot.
          hang: (_ctx: Context, _args: unknown, meta: RpcMeta) => (signals.push(meta.signal), env.gate().promise),
          echo: (_ctx: Context, args: { v: number }) => args.v,
        };
        await startServer(env, t, topic, 's1', [endpoint], { executorSize: 2, handlerTimeout: TIMEOUT_MS });
        const client = getRpcClient(t, { topic }, { timeout: env.ms(30_000) });
        for (let i = 0; i < 6; i++) {
          const began = Date.now();
          await expect(client.call({}, 'hang', {})).rejects.toBeInstanceOf(HandlerTimeout);
          // Answered at the handler's deadline, not at the call's own 30 s timeout.
          expect(Date.now() - began).toBeLessThan(env.ms(10_000));
        }
        expect(await client.call({}, 'echo', { v: 7 })).toBe(7);
        expect(signals).toHaveLength(6);
        for (const s of signals) expect(s.reason).toBeInstanceOf(HandlerTimeout);
      });
    }

    if (env.caps.requeue) {
      it('requeues a stuck notification (allowRequeue) through the broker; its next delivery is handled, redelivered', async () => {
        const nt = await env.notificationTransport();
        const topic = env.name('topic');
        const deliveries: NotificationMetadata[] = [];
        const handled: number[] = [];
        const timeouts: NotificationHandlerTimeoutEvent[] = [];
        const endpoint = {
          info(_ctx: Context, _p: unknown, _e: string, payload: { id: number }, metadata: NotificationMetadata) {
            deliveries.push(metadata);
            if (deliveries.length === 1) return env.gate().promise;
            handled.push(payload.id);
            return undefined;
          },
        };
        const listener = await startListener(env, nt, [topic], [endpoint], { allowRequeue: true, executorSize: 1, handlerTimeout: TIMEOUT_MS });
        listener.events.on('handlerTimeout', (e) => timeouts.push(e));
        await notifier(nt, topic).info({}, 'compute.stuck', { id: 42 });
        await waitFor(() => handled.length > 0, { timeoutMs: env.ms(20_000), message: 'the requeued notification handled on its next delivery' });
        expect(handled).toEqual([42]);
        expect(deliveries[0].signal.reason).toBeInstanceOf(HandlerTimeout);
        expect(deliveries[1].redelivered).toBe(true);
        expect(deliveries[1].signal.aborted).toBe(false);
        expect(timeouts).toMatchObject([{ eventTypes: ['compute.stuck'], messages: 1, requeued: true, timeoutMs: TIMEOUT_MS }]);
      });
    }

    it('acknowledges a stuck notification without allowRequeue and handles the next one on the same single slot', async () => {
      const nt = await env.notificationTransport();
      const topic = env.name('topic');
      const seen: number[] = [];
      const timeouts: NotificationHandlerTimeoutEvent[] = [];
      const endpoint = {
        info(_ctx: Context, _p: unknown, _e: string, payload: { id: number }) {
          seen.push(payload.id);
          return payload.id === 1 ? env.gate().promise : undefined;
        },
      };
      const listener = await startListener(env, nt, [topic], [endpoint], { executorSize: 1, handlerTimeout: TIMEOUT_MS });
      listener.events.on('handlerTimeout', (e) => timeouts.push(e));
      const n = notifier(nt, topic);
      // One after the other: a broker with partitions does not keep the order of two sends.
      await n.info({}, 'ev', { id: 1 });
      await waitFor(() => seen.includes(1), { timeoutMs: env.ms(15_000), message: 'the first notification taken (and stuck)' });
      await n.info({}, 'ev', { id: 2 });
      await waitFor(() => seen.includes(2), { timeoutMs: env.ms(15_000), message: 'the next notification handled while the first is stuck' });
      expect(timeouts).toMatchObject([{ requeued: false }]);
      expect(seen).toEqual([1, 2]);
    });
  });
}
