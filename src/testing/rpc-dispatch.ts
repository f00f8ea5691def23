// Conformance: what comes back from the server side of RPC: remote errors, version and
// namespace dispatch, call-monitor heartbeats, and cancellation of a pending call.
import { describe, expect, it } from 'vitest';
import {
  AbortError,
  defaultRemoteErrorRegistry,
  getRpcClient,
  MessagingTimeout,
  NoSuchMethod,
  RemoteError,
  Target,
  UnsupportedVersion,
} from '../index.js';
import { waitFor } from './wait.js';
import { expectFailure, expectNotSupported, since, type ConformanceEnv } from './harness.js';
import { startServer } from './rpc.js';

/** An application error with its own remote module, as a user would declare one. */
export class QuotaExceeded extends Error {
  static remoteModule = 'app.errors';
  constructor(message: string) {
    super(message);
    this.name = 'QuotaExceeded';
  }
}

export function rpcDispatchTests(env: ConformanceEnv): void {
  describe('remote errors', () => {
    it('a built-in error thrown by a handler arrives as the same class with its message', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      await startServer(env, t, topic, 's1', [
        {
          typeError() {
            throw new TypeError('expected a flavor');
          },
          async rangeError() {
            throw new RangeError('too many');
          },
        },
      ]);
      const client = getRpcClient(t, { topic }, { timeout: env.ms(10_000) });
      const te = await expectFailure(() => client.call({}, 'typeError', {}), TypeError);
      expect(te.message).toBe('expected a flavor');
      const re = await expectFailure(() => client.call({}, 'rangeError', {}), RangeError);
      expect(re.message).toBe('too many');
    });

    it('an application error is rebuilt only when its module is allowed', async () => {
      const registry = defaultRemoteErrorRegistry.clone().register('app.errors', QuotaExceeded);
      const serverT = await env.rpcTransport({ remoteErrors: registry });
      const allowedT = await env.rpcTransport({ remoteErrors: registry, allowedRemoteExmods: ['app.errors'] });
      const plainT = await env.rpcTransport({ remoteErrors: registry });
      const topic = env.name('topic');
      await startServer(env, serverT, topic, 's1', [
        {
          reserve() {
            throw new QuotaExceeded('over quota: cores');
          },
        },
      ]);
      const rebuilt = await expectFailure(() => getRpcClient(allowedT, { topic }, { timeout: env.ms(10_000) }).call({}, 'reserve', {}), QuotaExceeded);
      expect(rebuilt.message).toBe('over quota: cores');
      const remote = await expectFailure(() => getRpcClient(plainT, { topic }, { timeout: env.ms(10_000) }).call({}, 'reserve', {}), RemoteError);
      expect(remote.excType).toBe('QuotaExceeded');
      expect(remote.value).toBe('over quota: cores');
      expect(remote.module).toBe('app.errors');
    });

    it('a handler that throws never stops the server', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      await startServer(env, t, topic, 's1', [
        {
          boom() {
            throw new Error('boom');
          },
          rejectNonError() {
            return Promise.reject('a string, not an Error');
          },
          ok() {
            return 'ok';
          },
        },
      ]);
      const client = getRpcClient(t, { topic }, { timeout: env.ms(10_000) });
      for (let i = 0; i < 3; i++) {
        await expectFailure(() => client.call({}, 'boom', {}), Error);
        await expect(client.call({}, 'ok', {})).resolves.toBe('ok');
      }
      await expectFailure(() => client.call({}, 'rejectNonError', {}), Error);
      await client.cast({}, 'boom', {});
      await expect(client.call({}, 'ok', {})).resolves.toBe('ok');
    });
  });

  describe('version and namespace dispatch', () => {
    it('an endpoint of version 1.3 serves 1.0-1.3, refuses 1.4 and 2.0; namespaces must match', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      await startServer(env, t, topic, 's1', [
        {
          target: new Target({ namespace: 'calc', version: '1.3', legacyNamespaces: ['old-calc'] }),
          which() {
            return 'calc';
          },
        },
        {
          target: new Target({ namespace: 'other', version: '2.1' }),
          which() {
            return 'other';
          },
        },
        {
          which() {
            return 'default';
          },
        },
      ]);
      const client = getRpcClient(t, { topic, namespace: 'calc' }, { timeout: env.ms(10_000) });
      for (const version of ['1.0', '1.1', '1.3']) await expect(client.prepare({ version }).call({}, 'which', {})).resolves.toBe('calc');
      for (const version of ['1.4', '2.0']) {
        const err = await expectFailure(() => client.prepare({ version }).call({}, 'which', {}), UnsupportedVersion);
        expect(err.version).toBe(version);
      }
      // Legacy namespace accepted; an unknown namespace refused.
      await expect(client.prepare({ namespace: 'old-calc', version: '1.2' }).call({}, 'which', {})).resolves.toBe('calc');
      await expectFailure(() => client.prepare({ namespace: 'nope', version: '1.0' }).call({}, 'which', {}), UnsupportedVersion);
      // Dispatch picks the endpoint by namespace and version.
      await expect(client.prepare({ namespace: 'other', version: '2.0' }).call({}, 'which', {})).resolves.toBe('other');
      await expect(getRpcClient(t, { topic }, { timeout: env.ms(10_000) }).call({}, 'which', {})).resolves.toBe('default');
      // Matching namespace and version but no such method.
      const nsm = await expectFailure(() => client.prepare({ version: '1.2' }).call({}, 'missing', {}), NoSuchMethod);
      expect(nsm.method).toBe('missing');
    });

    it('private methods (leading underscore) are not callable', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      let ran = false;
      await startServer(env, t, topic, 's1', [
        {
          _secret() {
            ran = true;
            return 'secret';
          },
        },
      ]);
      const client = getRpcClient(t, { topic }, { timeout: env.ms(10_000) });
      await expectFailure(() => client.call({}, '_secret', {}), NoSuchMethod);
      expect(ran).toBe(false);
    });
  });

  describe('call monitor', () => {
    if (env.caps.callMonitor) {
      it('heartbeats keep a call longer than the monitor window alive', async () => {
        const t = await env.rpcTransport();
        const topic = env.name('topic');
        // oslo heartbeats every floor(seconds)/2 s and sends none for windows under 2 s (§1.7).
        const window = env.ms(2_000);
        await startServer(env, t, topic, 's1', [
          {
            async long() {
              await new Promise((r) => setTimeout(r, window * 1.75));
              return 'done';
            },
          },
        ]);
        const client = getRpcClient(t, { topic }, { timeout: env.ms(30_000), callMonitorTimeout: window });
        await expect(client.call({}, 'long', {})).resolves.toBe('done');
      });

      it('without a server, a monitored call fails after the monitor window, long before its timeout', async () => {
        const t = await env.rpcTransport();
        const client = getRpcClient(t, { topic: env.name('nobody') }, { timeout: 60_000, callMonitorTimeout: 500 });
        const t0 = Date.now();
        await expectFailure(() => client.call({}, 'long', {}), MessagingTimeout);
        expect(since(t0)).toBeGreaterThanOrEqual(400);
        expect(since(t0)).toBeLessThan(env.ms(10_000));
      });
    } else {
      it('asking for a call-monitor window fails at once with NotSupportedError (no callMonitor capability)', async () => {
        const t = await env.rpcTransport();
        await expectNotSupported(() => getRpcClient(t, { topic: env.name('topic') }, { callMonitorTimeout: 500 }).call({}, 'x', {}));
      });
    }
  });

  describe('cancellation', () => {
    it('aborting a pending call rejects it with AbortError; the server keeps serving', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      const release = env.gate();
      let slowStarted = false;
      await startServer(env, t, topic, 's1', [
        {
          async slow() {
            slowStarted = true;
            await release.promise;
            return 'slow';
          },
          ping() {
            return 'pong';
          },
        },
      ]);
      const client = getRpcClient(t, { topic }, { timeout: env.ms(30_000) });
      const ac = new AbortController();
      const pending = client.call({}, 'slow', {}, { signal: ac.signal });
      pending.catch(() => {});
      await waitFor(() => slowStarted, { timeoutMs: env.ms(10_000), message: 'slow handler started' });
      const t0 = Date.now();
      ac.abort();
      await expectFailure(() => pending, AbortError);
      expect(since(t0)).toBeLessThan(env.ms(2000));
      release.resolve();
      await expect(client.call({}, 'ping', {})).resolves.toBe('pong');
    });

    it('an already-aborted signal rejects at once with AbortError', async () => {
      const t = await env.rpcTransport();
      const client = getRpcClient(t, { topic: env.name('topic') }, { timeout: env.ms(30_000) });
      await expectFailure(() => client.call({}, 'x', {}, { signal: AbortSignal.abort() }), AbortError, { withinMs: env.ms(2000) });
    });
  });
}
