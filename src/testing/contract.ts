// Conformance at the driver seam itself (BaseDriver, below the façades): rules the drivers once
// disagreed on, now decided by the contract and written once in src/contract.
import { describe, expect, it } from 'vitest';
import { AbortError, createMemoryLogger, getRpcClient, InvalidArgument, InvalidTarget, Target, type TransportOptions } from '../index.js';
import type { RpcIncomingMessage } from '../contract/incoming-message.js';
import type { ConformanceEnv } from './harness.js';
import { waitFor } from './wait.js';

export function contractTests(env: ConformanceEnv): void {
  describe('driver contract', () => {
    it('a value JSON cannot carry fails with InvalidArgument naming context or message, before anything is sent', async () => {
      const transport = await env.notificationTransport();
      const driver = transport.driver;
      const target = new Target({ topic: `${env.name('topic')}.info` });
      const body = { message_id: 'm', publisher_id: null, event_type: 'e', priority: 'INFO', timestamp: 't' };
      await expect(driver.sendNotification(target, {}, { ...body, payload: { n: 1n } })).rejects.toThrow(InvalidArgument);
      await expect(driver.sendNotification(target, { big: 1n }, { ...body, payload: {} })).rejects.toThrow(/context/);
      if (env.caps.rpc) {
        const rpc = await env.rpcTransport();
        const rpcTarget = new Target({ topic: env.name('topic') });
        await expect(rpc.driver.send(rpcTarget, {}, { method: 'm', args: { n: 1n } })).rejects.toThrow(InvalidArgument);
        await expect(rpc.driver.send(rpcTarget, {}, { method: 'm', args: { n: 1n } }, { waitForReply: true, timeout: env.ms(5000) })).rejects.toThrow(/message/);
      }
    });

    it('bad arguments at the seam fail with a typed error before anything is sent, on every driver', async () => {
      const transport = await env.notificationTransport();
      const driver = transport.driver;
      const topic = env.name('topic');
      const body = { message_id: 'm', publisher_id: null, event_type: 'e', priority: 'INFO', timestamp: 't', payload: {} };
      await expect(driver.sendNotification(new Target({}), {}, body)).rejects.toThrow(InvalidTarget);
      await expect(driver.sendNotification(new Target({ topic }), {}, body, { retry: 1.5 })).rejects.toThrow(InvalidArgument);
      await expect(driver.listenForNotifications([])).rejects.toThrow(InvalidArgument);
      await expect(driver.listenForNotifications([[new Target({}), 'info']])).rejects.toThrow(InvalidTarget);
      await expect(driver.listenForNotifications([[new Target({ topic }), 'loud' as 'info']])).rejects.toThrow(/priority/);
      await expect(driver.listenForNotifications([[new Target({ topic }), 'info']], { pool: '' })).rejects.toThrow(/pool/);
      await expect(driver.listenForNotifications([[new Target({ topic }), 'info']], { batchSize: 0 })).rejects.toThrow(/batchSize/);
      if (env.caps.rpc) {
        const rpc = (await env.rpcTransport()).driver;
        const message = { method: 'm', args: {} };
        await expect(rpc.send(new Target({}), {}, message)).rejects.toThrow(InvalidTarget);
        await expect(rpc.send(new Target({ topic, fanout: true }), {}, message, { waitForReply: true })).rejects.toThrow(InvalidTarget);
        await expect(rpc.send(new Target({ topic }), {}, message, { waitForReply: true, timeout: -1 })).rejects.toThrow(/timeout/);
        await expect(rpc.send(new Target({ topic }), {}, message, { retry: -2 })).rejects.toThrow(/retry/);
        await expect(rpc.send(new Target({ topic }), {}, message, { signal: AbortSignal.abort() })).rejects.toThrow(AbortError);
        await expect(rpc.listen(new Target({ server: 's' }))).rejects.toThrow(InvalidTarget);
        await expect(rpc.listen(new Target({ topic }))).rejects.toThrow(/server name/);
        await expect(rpc.listen(new Target({ topic, server: 's' }), { batchTimeout: Number.NaN })).rejects.toThrow(/batchTimeout/);
      }
      // Nothing above was sent: a listener on the topic finds its queue empty.
      const listener = await driver.listenForNotifications([[new Target({ topic }), 'info']]);
      env.defer(() => listener.cleanup());
      const got: unknown[] = [];
      listener.start(async (messages) => void got.push(...messages));
      await transport.driver.sendNotification(new Target({ topic: `${topic}.info` }), {}, { ...body, message_id: 'after' });
      await waitFor(() => got.length > 0, { timeoutMs: env.ms(5000), message: 'the notification sent after the bad ones' });
      expect(got.map((m) => (m as { notification: { message_id: string } }).notification.message_id)).toEqual(['after']);
    });

    if (env.caps.rpc) {
      it("a reply whose failure is empty ('') counts as no failure, as oslo reads it (`if data['failure']`)", async () => {
        // The test answers itself, with the body a non-tidings server might send.
        const client = await driverServer(env, {}, async (m) => {
          const body = { result: { echoed: m.request.args }, failure: '', ending: true, _msg_id: m.callId, _unique_id: 'raw-reply' };
          await env.subject.publishRaw(env.url(), '', m.replyAddress!, JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify(body) }));
        });
        await expect(client.call({}, 'anything', { a: 1 })).resolves.toEqual({ echoed: { a: 1 } });
      });

      it('a second final reply to one call is ignored with a warning; the caller gets the first', async () => {
        const logger = createMemoryLogger();
        const client = await driverServer(env, { logger }, async (m) => {
          expect(m.request).toEqual({ method: 'twice', args: { a: 1 }, namespace: undefined, version: '1.0' });
          await m.reply({ result: 'first' });
          await m.reply({ result: 'second' });
        });
        await expect(client.call({}, 'twice', { a: 1 })).resolves.toBe('first');
        await waitFor(() => logger.records.some((r) => r.level === 'warn' && /second final reply/.test(r.msg)), { timeoutMs: env.ms(5000), message: 'the second reply logged' });
      });
    }
  });
}

/**
 * A server made of a bare driver listener (no RpcServer) that hands each request to `handle`,
 * and a client of its topic on another transport.
 */
async function driverServer(env: ConformanceEnv, options: TransportOptions, handle: (m: RpcIncomingMessage) => Promise<void>) {
  const serverT = await env.rpcTransport(options);
  const clientT = await env.rpcTransport();
  const topic = env.name('topic');
  const listener = await serverT.driver.listen(new Target({ topic, server: 's1' }));
  env.defer(() => listener.cleanup());
  listener.start(async (messages: RpcIncomingMessage[]) => {
    for (const m of messages) await handle(m);
  });
  return getRpcClient(clientT, { topic }, { timeout: env.ms(10_000) });
}
