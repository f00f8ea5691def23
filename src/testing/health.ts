// Conformance: health and discovery: `transport.health()`, `RpcClient.ping()`, `discover()` and
// `waitForServers()` on it, the fanout call whose replies the seam collects for a window
// (`collectReplies`), and a client retry reaching a server that started after the first attempt.
import { describe, expect, it } from 'vitest';
import { getRpcClient, InvalidArgument, NotSupportedError, Target } from '../index.js';
import type { CollectedReply } from '../contract/pending-replies.js';
import { expectNotSupported, type ConformanceEnv } from './harness.js';
import { startServer } from './rpc.js';

const HEALTHY = { connected: true, blocked: false, reconnecting: false };

export function healthTests(env: ConformanceEnv): void {
  describe('health and discovery', () => {
    it('transport.health() is connected after a send and not connected after cleanup', async () => {
      const transport = await env.notificationTransport();
      const body = { message_id: 'm', publisher_id: null, event_type: 'e', priority: 'INFO', timestamp: 't', payload: {} };
      await transport.driver.sendNotification(new Target({ topic: `${env.name('topic')}.info` }), {}, body);
      expect(transport.health()).toMatchObject(HEALTHY);
      await transport.cleanup();
      expect(transport.health()).toMatchObject({ connected: false, reconnecting: false });
    });

    if (!env.caps.rpc) return;

    it('collectReplies needs waitForReply and a timeout: InvalidArgument before anything is sent', async () => {
      const driver = (await env.rpcTransport()).driver;
      const message = { method: 'm', args: {} };
      const target = new Target({ topic: env.name('topic') });
      await expect(driver.send(target, {}, message, { collectReplies: true, timeout: 100 })).rejects.toThrow(InvalidArgument);
      await expect(driver.send(target, {}, message, { collectReplies: true, waitForReply: true })).rejects.toThrow(/collectReplies/);
    });

    it('ping() resolves with a round trip; a server without the ping endpoint says how to enable it', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      await startServer(env, t, topic, 'on', [{}]);
      await startServer(env, t, topic, 'off', [{ other: () => 1 }], { rpcPingEnabled: false });
      const client = getRpcClient(t, { topic }, { timeout: env.ms(10_000) });
      expect(await client.ping({ server: 'on' })).toBeGreaterThanOrEqual(0);
      expect(await client.prepare({ server: 'on' }).ping()).toBeGreaterThanOrEqual(0);
      const err = await client.ping({ server: 'off' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NotSupportedError);
      expect((err as Error).message).toMatch(/rpcPingEnabled/);
      expect(t.health()).toMatchObject(HEALTHY);
    });

    if (env.caps.fanout) {
      it('discover() lists every server of the topic that answers the fanout ping within the window', async () => {
        const t = await env.rpcTransport();
        const topic = env.name('topic');
        const other = env.name('topic');
        await startServer(env, t, topic, 's2', [{}]);
        await startServer(env, t, topic, 's1', [{}]);
        await startServer(env, t, topic, 'mute', [{}], { rpcPingEnabled: false });
        await startServer(env, t, other, 'elsewhere', [{}]);
        const client = getRpcClient(t, { topic });
        const found = await client.discover({ windowMs: env.ms(3000) });
        expect(found).toEqual([
          // Idle servers: the ping they answer is not counted.
          { server: 's1', topic, host: expect.any(String), pid: process.pid, inFlight: 0 },
          { server: 's2', topic, host: expect.any(String), pid: process.pid, inFlight: 0 },
        ]);
        // Nobody on a topic: an empty list once the window passed, not a timeout.
        await expect(getRpcClient(t, { topic: env.name('topic') }).discover({ windowMs: env.ms(300) })).resolves.toEqual([]);
      });

      it('waitForServers() resolves once servers started later answer; a retried idempotent call reaches a server started after its first attempt', async () => {
        const t = await env.rpcTransport();
        const topic = env.name('topic');
        const client = getRpcClient(t, { topic }, { timeout: env.ms(1500), retryPolicy: { attempts: 40, delayMs: env.ms(100), jitter: 0, idempotentMethods: ['who'] } });
        const waiting = client.waitForServers({ count: 2, timeoutMs: env.ms(20_000), windowMs: env.ms(500), intervalMs: 50 });
        await startServer(env, t, topic, 's2', [{ who: () => 's2' }]);
        await startServer(env, t, topic, 's1', [{ who: () => 's1' }]);
        expect((await waiting).map((s) => s.server)).toEqual(['s1', 's2']);
        // A topic nobody serves yet: the call times out, is retried as a new request, and the
        // server started at the first retry answers one of them.
        const later = env.name('topic');
        const retried = client.prepare({ topic: later });
        const started = new Promise<void>((resolve) => retried.events.once('retry', () => void startServer(env, t, later, 'late', [{ who: () => 'late' }]).then(() => resolve())));
        await expect(retried.call({}, 'who', {})).resolves.toBe('late');
        await started;
      });

      it('a fanout call with collectReplies gathers one reply per server, failures included', async () => {
        const t = await env.rpcTransport();
        const topic = env.name('topic');
        await startServer(env, t, topic, 'a', [{ who: () => 'a' }]);
        await startServer(env, t, topic, 'b', [{ who: () => 'b' }]);
        await startServer(env, t, topic, 'c', [{ other: () => 'c' }]);
        const replies = (await t.driver.send(new Target({ topic, fanout: true }), {}, { method: 'who', args: {} }, { waitForReply: true, collectReplies: true, timeout: env.ms(3000) })) as CollectedReply[];
        expect(replies.filter((r) => r.ok).map((r) => (r.ok ? r.result : undefined)).sort()).toEqual(['a', 'b']);
        expect(replies.filter((r) => !r.ok)).toHaveLength(1);
      });
    } else {
      it('discover() fails at once with NotSupportedError (no fanout capability)', async () => {
        const t = await env.rpcTransport();
        await expectNotSupported(() => getRpcClient(t, { topic: env.name('topic') }).discover({ windowMs: 10 }));
      });
    }
  });
}
