// Conformance: `_reply_q` comes from the wire, so a server replies only to an address shaped
// like the reply addresses drivers create; a call naming another service's queue is not run.
import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createMemoryLogger, getRpcClient, type Context, type MemoryLogger } from '../index.js';
import { waitFor } from './wait.js';
import type { ConformanceEnv } from './harness.js';
import { startServer } from './rpc.js';

const MARKER = 'PAYLOAD-MARKER-must-not-be-logged';

/** A call in oslo's 2.0 envelope, as a client outside tidings would write it. */
function rawCall(method: string, replyQueue: string): string {
  const hex = () => randomUUID().replaceAll('-', '');
  const message = { method, args: { m: MARKER }, namespace: null, version: '1.0', _unique_id: hex(), _msg_id: hex(), _reply_q: replyQueue, _timeout: null };
  return JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify(message) });
}

const problems = (logger: MemoryLogger) => logger.records.filter((r) => r.level === 'warn' || r.level === 'error');

/** A server whose handler records its calls. */
function recording(calls: unknown[]) {
  return {
    echo(_ctx: Context, args: unknown) {
      calls.push(args);
      return args;
    },
  };
}

export function replyAddressTests(env: ConformanceEnv): void {
  if (!env.caps.rpc) return;
  describe('reply addresses', () => {
    it("a call whose _reply_q names another service's queue is not run and nothing reaches that queue; the server keeps serving", async () => {
      const logger = createMemoryLogger();
      const victimLogger = createMemoryLogger();
      const serverT = await env.rpcTransport({ logger });
      const victimT = await env.rpcTransport({ logger: victimLogger });
      const clientT = await env.rpcTransport();
      const topic = env.name('topic');
      const victim = env.name('victim');
      const calls: unknown[] = [];
      const victimCalls: unknown[] = [];
      await startServer(env, serverT, topic, 's1', [recording(calls)], { logger });
      // Another service: its request queues (topic and server) are what a hostile _reply_q names.
      await startServer(env, victimT, victim, 'v1', [recording(victimCalls)], { logger: victimLogger });
      const targets = [victim, `${victim}.v1`, `${victim}_fanout`, `reply_${'A'.repeat(32)}`, `reply_${'0'.repeat(31)}`, 'x'.repeat(300)];
      for (const replyQueue of targets) await env.subject.publishRaw(env.url(), 'openstack', topic, rawCall('echo', replyQueue));
      await waitFor(() => problems(logger).length >= targets.length, { timeoutMs: env.ms(10_000), message: 'each call with a foreign reply address dropped and logged' });
      const client = getRpcClient(clientT, { topic }, { timeout: env.ms(10_000) });
      await expect(client.call({}, 'echo', { n: 1 })).resolves.toEqual({ n: 1 });
      const victimClient = getRpcClient(clientT, { topic: victim }, { timeout: env.ms(10_000) });
      await expect(victimClient.call({}, 'echo', { n: 2 })).resolves.toEqual({ n: 2 });
      expect(calls).toEqual([{ n: 1 }]);
      // Nothing arrived at the other service: no call ran there and no reply body was refused there.
      expect(victimCalls).toEqual([{ n: 2 }]);
      expect(problems(victimLogger)).toEqual([]);
      expect(problems(logger)).toHaveLength(targets.length);
      expect(JSON.stringify(logger.records)).not.toContain(MARKER);
    });
  });
}
