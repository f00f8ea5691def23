// Conformance: declared capabilities, start/stop/wait ordering, draining on stop, and
// transport cleanup with calls in flight.
import { describe, expect, it } from 'vitest';
import {
  getNotificationListener,
  getRpcClient,
  getRpcServer,
  InvalidState,
  MessageDeliveryFailure,
  MessagingTimeout,
  Target,
  type Context,
} from '../index.js';
import { waitFor } from './wait.js';
import { expectFailure, markStopped, since, started, type ConformanceEnv } from './harness.js';
import { notifier, recordingEndpoint, type Seen } from './notify.js';
import { startServer } from './rpc.js';

export function lifecycleTests(env: ConformanceEnv): void {
  // RPC lifecycle tests exist only for drivers with RPC; rpcNotSupportedTests covers the others.
  const itRpc = (name: string, fn: () => Promise<void>) => {
    if (env.caps.rpc) it(name, fn);
  };
  describe('lifecycle', () => {
    it('the driver declares the capabilities the subject expects', async () => {
      const t = await env.rpcTransport();
      expect({ ...t.driver.capabilities }).toEqual({ ...env.caps });
    });

    itRpc('server start() resolves only once subscribed: a call and a fanout cast right after it are handled', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      const fans: number[] = [];
      await startServer(env, t, topic, 's1', [
        {
          ping() {
            return 'pong';
          },
          fan(_ctx: Context, args: { n: number }) {
            fans.push(args.n);
          },
        },
      ]);
      await expect(getRpcClient(t, { topic }, { timeout: env.ms(10_000) }).call({}, 'ping', {})).resolves.toBe('pong');
      await expect(getRpcClient(t, { topic, server: 's1' }, { timeout: env.ms(10_000) }).call({}, 'ping', {})).resolves.toBe('pong');
      if (env.caps.fanout) {
        await getRpcClient(t, { topic, fanout: true }).cast({}, 'fan', { n: 1 });
        await waitFor(() => fans.length === 1, { timeoutMs: env.ms(10_000), message: 'fanout right after start' });
      }
    });

    it('listener start() resolves only once subscribed: a notification right after it is received', async () => {
      const nt = await env.notificationTransport();
      const topic = env.name('topic');
      const log: Seen[] = [];
      const pool = env.caps.pools ? { pool: env.name('pool') } : {};
      // The pooled queue (when pools exist) is created by start(), so only a subscribed listener can get this.
      await started(env, getNotificationListener(nt, [new Target({ topic })], [recordingEndpoint('l', log)], pool as never));
      await notifier(nt, topic).info({}, 'ev', { id: 1 });
      await waitFor(() => log.length === 1, { timeoutMs: env.ms(10_000), message: 'notification right after start' });
      if (env.caps.pools) {
        // Drain the un-pooled queue the notifier also fills.
        await started(env, getNotificationListener(nt, [new Target({ topic })], [recordingEndpoint('drain', [])]));
      }
    });

    itRpc('server wait() before stop() fails with InvalidState', async () => {
      const t = await env.rpcTransport();
      const server = await startServer(env, t, env.name('topic'), 's1', [{ ping: () => 'pong' }]);
      await expectFailure(() => server.wait(), InvalidState);
    });

    it('listener wait() before stop() fails with InvalidState', async () => {
      const nt = await env.notificationTransport();
      const listener = await started(env, getNotificationListener(nt, [new Target({ topic: env.name('topic') })], [recordingEndpoint('l', [])]));
      await expectFailure(() => listener.wait(), InvalidState);
    });

    itRpc('server stop() lets an in-flight call finish and reply; wait() resolves after it', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      const release = env.gate();
      let inFlight = false;
      const server = await startServer(env, t, topic, 's1', [
        {
          async slow() {
            inFlight = true;
            await release.promise;
            return 'finished';
          },
        },
      ]);
      const client = getRpcClient(t, { topic }, { timeout: env.ms(20_000) });
      const call = client.call({}, 'slow', {});
      call.catch(() => {});
      await waitFor(() => inFlight, { timeoutMs: env.ms(10_000), message: 'handler running' });
      await server.stop();
      let waited = false;
      const waiting = server.wait().then(() => (waited = true));
      markStopped(server);
      await new Promise((r) => setTimeout(r, 50));
      expect(waited, 'wait() resolved while a handler was still running').toBe(false);
      release.resolve();
      await expect(call).resolves.toBe('finished');
      await waiting;
    });

    itRpc('a stopped server handles no new calls', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      let calls = 0;
      const server = await startServer(env, t, topic, 's1', [
        {
          ping() {
            calls++;
            return 'pong';
          },
        },
      ]);
      const client = getRpcClient(t, { topic, server: 's1' }, { timeout: env.ms(10_000) });
      await expect(client.call({}, 'ping', {})).resolves.toBe('pong');
      await server.stop();
      await server.wait();
      markStopped(server);
      await expectFailure(() => client.call({}, 'ping', {}, { timeout: 400 }), MessagingTimeout);
      expect(calls).toBe(1);
    });

    itRpc('transport cleanup() rejects pending calls instead of hanging; later calls fail with InvalidState', async () => {
      const serverT = await env.rpcTransport();
      const clientT = await env.rpcTransport();
      const topic = env.name('topic');
      const release = env.gate();
      let inFlight = false;
      await startServer(env, serverT, topic, 's1', [
        {
          async slow() {
            inFlight = true;
            await release.promise;
            return 'too late';
          },
        },
      ]);
      const client = getRpcClient(clientT, { topic }, { timeout: env.ms(60_000) });
      const call = client.call({}, 'slow', {});
      call.catch(() => {});
      await waitFor(() => inFlight, { timeoutMs: env.ms(10_000), message: 'handler running' });
      const t0 = Date.now();
      await clientT.cleanup();
      let error: unknown;
      try {
        await call;
      } catch (err) {
        error = err;
      }
      expect(since(t0)).toBeLessThan(env.ms(5000));
      expect(error instanceof MessagingTimeout || error instanceof MessageDeliveryFailure, `pending call rejected with ${String(error)}`).toBe(true);
      await expectFailure(() => client.call({}, 'slow', {}), InvalidState);
      await expectFailure(() => client.cast({}, 'slow', {}), InvalidState);
      await expect(clientT.cleanup()).resolves.toBeUndefined();
    });

    itRpc('a server of a cleaned-up transport cannot start (InvalidState)', async () => {
      const t = await env.rpcTransport();
      await t.cleanup();
      await expectFailure(() => getRpcServer(t, new Target({ topic: env.name('topic'), server: 's1' }), [{}]).start(), InvalidState);
    });
  });
}
