// Conformance: a malformed message (bad JSON, unknown envelope version, missing fields) is
// rejected without requeue and logged without its body; the server or listener keeps serving.
import { describe, expect, it } from 'vitest';
import { createMemoryLogger, getRpcClient, type Context, type MemoryLogger } from '../index.js';
import { waitFor } from './wait.js';
import type { ConformanceEnv } from './harness.js';
import { notifier, recordingEndpoint, startListener, type Seen } from './notify.js';
import { startServer } from './rpc.js';

const MARKER = 'PAYLOAD-MARKER-must-not-be-logged';

const BODIES = [
  `{not json ${MARKER}`,
  JSON.stringify({ 'oslo.version': '9.9', 'oslo.message': JSON.stringify({ m: MARKER }) }),
  JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': `not json either ${MARKER}` }),
  JSON.stringify([MARKER]),
];

const problems = (logger: MemoryLogger) => logger.records.filter((r) => r.level === 'warn' || r.level === 'error');

export function malformedTests(env: ConformanceEnv): void {
  describe('malformed messages', () => {
    if (env.caps.rpc) {
      it('an RPC server rejects and logs malformed messages without their body, then keeps serving', async () => {
        const logger = createMemoryLogger();
        const serverT = await env.rpcTransport({ logger });
        const clientT = await env.rpcTransport();
        const topic = env.name('topic');
        const calls: unknown[] = [];
        // The façade's logger too: a driver may pass a body on that the dispatcher then refuses.
        await startServer(env, serverT, topic, 's1', [
          {
            echo(_ctx: Context, args: unknown) {
              calls.push(args);
              return args;
            },
          },
        ], { logger });
        const client = getRpcClient(clientT, { topic }, { timeout: env.ms(10_000) });
        await expect(client.call({}, 'echo', { n: 0 })).resolves.toEqual({ n: 0 });
        // The seam validates a request's fields once: a namespace or version of the wrong type is malformed too.
        const bodies = [...BODIES, JSON.stringify({ args: { m: MARKER } }), JSON.stringify({ method: 'echo', namespace: 5, args: { m: MARKER } }), JSON.stringify({ method: 'echo', version: 1.1, args: { m: MARKER } })];
        for (const body of bodies) await env.subject.publishRaw(env.url(), 'openstack', topic, body);
        await waitFor(() => problems(logger).length >= bodies.length, { timeoutMs: env.ms(10_000), message: 'each malformed message logged' });
        await expect(client.call({}, 'echo', { n: 1 })).resolves.toEqual({ n: 1 });
        expect(calls).toEqual([{ n: 0 }, { n: 1 }]);
        // Rejected, not requeued: a requeued message would be logged again and again.
        expect(problems(logger).length).toBeLessThan(bodies.length * 3);
        expect(JSON.stringify(logger.records)).not.toContain(MARKER);
      });
    }

    it('a notification listener rejects and logs malformed messages without their body, then keeps serving', async () => {
      const logger = createMemoryLogger();
      const listenT = await env.notificationTransport({ logger });
      const sendT = await env.notificationTransport();
      const topic = env.name('topic');
      const log: Seen[] = [];
      await startListener(env, listenT, [topic], [recordingEndpoint('l', log)], env.caps.requeue ? { allowRequeue: true, logger } : { logger });
      const bodies = [...BODIES, JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ payload: MARKER }) })];
      for (const body of bodies) await env.subject.publishRaw(env.url(), 'openstack', `${topic}.info`, body);
      await waitFor(() => problems(logger).length >= bodies.length, { timeoutMs: env.ms(10_000), message: 'each malformed notification logged' });
      await notifier(sendT, topic).info({}, 'good', { id: 1 });
      await waitFor(() => log.length === 1, { timeoutMs: env.ms(10_000), message: 'the good notification' });
      expect(log[0].eventType).toBe('good');
      expect(problems(logger).length).toBeLessThan(bodies.length * 3);
      expect(JSON.stringify(logger.records)).not.toContain(MARKER);
    });
  });
}
