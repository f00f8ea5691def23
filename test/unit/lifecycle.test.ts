// close({ deadlineMs }) and `await using` on RpcServer, NotificationListener and Transport over
// memory://: order, drain within the deadline, the deadline passed, idempotence, every state.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvalidArgument, MessagingTimeout } from '../../src/core/errors.js';
import { CLOSE_DEFAULTS } from '../../src/core/lifecycle.js';
import { getNotificationTransport, getRpcTransport, type Transport } from '../../src/transport.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcServer, type RpcServer } from '../../src/rpc/server.js';
import { Notifier } from '../../src/notify/notifier.js';
import { getBatchNotificationListener, getNotificationListener, type NotificationListener } from '../../src/notify/listener.js';
import { deferred, uniqueName, waitFor, type Deferred } from '../../src/testing/wait.js';

const transports: Transport[] = [];
const gates: Array<Deferred<void>> = [];

afterEach(async () => {
  // Handlers a test left blocked are let go, so nothing outlives the test.
  for (const gate of gates.splice(0)) gate.resolve();
  await Promise.all(transports.splice(0).map((t) => t.cleanup()));
});

function gate(): Deferred<void> {
  const d = deferred();
  gates.push(d);
  return d;
}

async function rpcTransport(url = 'memory:///' + uniqueName('vh')): Promise<Transport> {
  const t = await getRpcTransport(url);
  transports.push(t);
  return t;
}

async function notifyTransport(url = 'memory:///' + uniqueName('vh')): Promise<Transport> {
  const t = await getNotificationTransport(url);
  transports.push(t);
  return t;
}

/** A server whose `slow` method waits for `release` and logs when it ends. */
function slowServer(t: Transport, topic: string, log: string[], release: Deferred<void>): RpcServer {
  const server = getRpcServer(t, { topic, server: uniqueName('host') }, [
    {
      async slow() {
        await release.promise;
        log.push('handler done');
        return 'slow done';
      },
    },
  ]);
  server.events.on('stopped', () => log.push('server stopped'));
  return server;
}

function logCleanup(t: Transport, log: string[]): void {
  const cleanup = t.driver.cleanup.bind(t.driver);
  vi.spyOn(t.driver, 'cleanup').mockImplementation(() => {
    log.push('transport cleanup');
    return cleanup();
  });
}

/** A slow server with one cast running in it, held until `release` resolves. */
async function slowCastRunning(): Promise<{ server: RpcServer; log: string[]; release: Deferred<void> }> {
  const t = await rpcTransport();
  const topic = uniqueName('topic');
  const log: string[] = [];
  const release = gate();
  const server = slowServer(t, topic, log, release);
  await server.start();
  void getRpcClient(t, { topic }).cast({}, 'slow', {});
  await waitFor(() => server.inFlight === 1);
  return { server, log, release };
}

/** close() while stop() is under way, and after stop() and wait(): both resolve. */
async function closeWhileStoppingAndAfterWait(make: () => Pick<RpcServer, 'start' | 'stop' | 'wait' | 'close'>): Promise<void> {
  const stopping = make();
  await stopping.start();
  void stopping.stop();
  await stopping.close();

  const waited = make();
  await waited.start();
  await waited.stop();
  await waited.wait();
  await waited.close();
}

describe('Transport.close()', () => {
  it('stops the server, lets the running request finish and reply, then cleans up', async () => {
    const url = 'memory:///' + uniqueName('vh');
    const t = await rpcTransport(url);
    const topic = uniqueName('topic');
    const log: string[] = [];
    const release = gate();
    const server = slowServer(t, topic, log, release);
    await server.start();
    logCleanup(t, log);
    const client = getRpcClient(await rpcTransport(url), { topic });
    const reply = client.call({}, 'slow', {});
    await waitFor(() => server.inFlight === 1);
    const closing = t.close({ deadlineMs: 30_000 });
    await waitFor(() => log.includes('server stopped'));
    expect(log).toEqual(['server stopped']);
    release.resolve();
    await closing;
    expect(await reply).toBe('slow done');
    expect(log).toEqual(['server stopped', 'handler done', 'transport cleanup']);
  });

  it('closes the listeners still open, not those already ended', async () => {
    const t = await notifyTransport();
    const listener = getNotificationListener(t, [{ topic: uniqueName('topic') }], [{ info: () => undefined }]);
    const ended = getNotificationListener(t, [{ topic: uniqueName('topic') }], [{ info: () => undefined }]);
    const stopped: string[] = [];
    listener.events.on('stopped', () => stopped.push('open'));
    ended.events.on('stopped', () => stopped.push('ended'));
    await listener.start();
    await ended.start();
    await ended.stop();
    await ended.wait();
    await t.close();
    expect(stopped).toEqual(['ended', 'open']);
    expect(listener.running).toBe(false);
    // The ended listener was not closed again: it can still be started (and fails only because the transport is gone).
    await expect(ended.start()).rejects.toThrow(/cleaned up/);
  });

  it('past the deadline: releases the subscriptions, still cleans up, rejects with MessagingTimeout', async () => {
    const t = await rpcTransport();
    const topic = uniqueName('topic');
    const log: string[] = [];
    const server = slowServer(t, topic, log, gate());
    await server.start();
    logCleanup(t, log);
    void getRpcClient(t, { topic }).cast({}, 'slow', {});
    await waitFor(() => server.inFlight === 1);
    const err = await t.close({ deadlineMs: 20 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MessagingTimeout);
    expect((err as Error).message).toMatch(/did not drain within 20 ms: 1 handler\(s\) still running in 1 of 1 servers and listeners/);
    expect(log).toEqual(['server stopped', 'transport cleanup']);
  });

  it('is idempotent: every call returns the first one\'s promise', async () => {
    const t = await rpcTransport();
    const first = t.close();
    expect(t.close({ deadlineMs: 5 })).toBe(first);
    await first;
    expect(t.close()).toBe(first);
  });

  it('rejects a bad deadline with InvalidArgument naming deadlineMs, and closes nothing', async () => {
    const t = await rpcTransport();
    await expect(t.close({ deadlineMs: -1 })).rejects.toThrow(InvalidArgument);
    await expect(t.close({ deadlineMs: Number.NaN })).rejects.toThrow(/Invalid deadlineMs: expected a number of ms >= 0/);
    await expect(t.close({ deadlineMs: '10' as unknown as number })).rejects.toThrow(/received "10"/);
    await expect(t.close(null as never)).rejects.toThrow(/Invalid options/);
    const server = getRpcServer(t, { topic: uniqueName('topic'), server: 'h' }, [{}]);
    await server.start();
    await server.close();
  });

  it('defaults to a 30 s deadline, frozen', () => {
    expect(CLOSE_DEFAULTS).toEqual({ deadlineMs: 30_000 });
    expect(Object.isFrozen(CLOSE_DEFAULTS)).toBe(true);
  });
});

describe('RpcServer.close()', () => {
  it('resolves from every state and never throws InvalidState', async () => {
    const t = await rpcTransport();
    const make = () => getRpcServer(t, { topic: uniqueName('topic'), server: 'h' }, [{}]);

    await make().close(); // never started

    const starting = make();
    void starting.start();
    await starting.close();

    const running = make();
    await running.start();
    await running.close();

    await closeWhileStoppingAndAfterWait(make);

    const failed = getRpcServer(t, { topic: uniqueName('topic') }, [{}]); // no server: start() fails
    await expect(failed.start()).rejects.toThrow();
    await failed.close();

    const failing = getRpcServer(t, { topic: uniqueName('topic') }, [{}]);
    const start = failing.start();
    await failing.close();
    await expect(start).rejects.toThrow();

    // A closed server starts again.
    await running.start();
    await running.close();
  });

  it('is idempotent while under way, and a second close after a timeout waits again', async () => {
    const { server, log, release } = await slowCastRunning();
    const first = server.close({ deadlineMs: 10 });
    expect(server.close()).toBe(first);
    await expect(first).rejects.toThrow(/RpcServer on .* did not drain within 10 ms: 1 request\(s\) still running/);
    const second = server.close({ deadlineMs: 30_000 });
    release.resolve();
    await second;
    expect(log).toEqual(['server stopped', 'handler done']);
    expect(server.inFlight).toBe(0);
  });

  it('deadlineMs Infinity waits as long as the handler runs', async () => {
    const { server, log, release } = await slowCastRunning();
    const closing = server.close({ deadlineMs: Infinity });
    await waitFor(() => log.includes('server stopped'));
    release.resolve();
    await closing;
    expect(log).toEqual(['server stopped', 'handler done']);
  });
});

describe('NotificationListener.close()', () => {
  it('past the deadline the unsettled notification goes back to the broker for another listener', async () => {
    const t = await notifyTransport();
    const topic = uniqueName('topic');
    const release = gate();
    const first: string[] = [];
    const blocked = getNotificationListener(t, [{ topic }], [
      {
        async info(_ctx: unknown, _p: unknown, eventType: string) {
          first.push(eventType);
          await release.promise;
        },
      },
    ]);
    await blocked.start();
    await new Notifier(t, { topics: [topic], publisherId: 'p' }).info({}, 'ev.kept', {});
    await waitFor(() => blocked.inFlight === 1);
    await expect(blocked.close({ deadlineMs: 10 })).rejects.toThrow(/did not drain within 10 ms: 1 handler\(s\) still running; its subscription was released/);

    const second: string[] = [];
    const other = getNotificationListener(t, [{ topic }], [{ info: (_ctx: unknown, _p: unknown, eventType: string) => void second.push(eventType) }]);
    await other.start();
    await waitFor(() => second.length === 1);
    expect(second).toEqual(['ev.kept']);
    // The first handler ends later; its acknowledgement finds the channel gone and changes nothing.
    release.resolve();
    await blocked.wait();
    await other.close();
    expect(first).toEqual(['ev.kept']);
  });

  it.each([
    ['a listener', false],
    ['a batch listener', true],
  ])('%s whose executor is full releases at the deadline; the held-back notification goes back too', async (_name, batch) => {
    const t = await notifyTransport();
    const topic = uniqueName('topic');
    const release = gate();
    const endpoint = {
      async info() {
        await release.promise;
      },
    };
    const blocked = batch
      ? getBatchNotificationListener(t, [{ topic }], [endpoint], { executorSize: 1, batchSize: 1, batchTimeout: 10 })
      : getNotificationListener(t, [{ topic }], [endpoint], { executorSize: 1 });
    await blocked.start();
    const notifier = new Notifier(t, { topics: [topic], publisherId: 'p' });
    await notifier.info({}, 'ev', { id: 1 });
    await notifier.info({}, 'ev', { id: 2 });
    await waitFor(() => blocked.inFlight === 1);
    // The second one waits for the executor's only slot: stop() cannot finish, close() must not wait for it.
    await expect(blocked.close({ deadlineMs: 20 })).rejects.toThrow(MessagingTimeout);

    const ids: number[] = [];
    const other = getNotificationListener(t, [{ topic }], [{ info: (_c: unknown, _p: unknown, _e: unknown, payload: { id: number }) => void ids.push(payload.id) }]);
    await other.start();
    await waitFor(() => ids.length === 2);
    expect(ids.sort()).toEqual([1, 2]);
    release.resolve();
    await blocked.wait();
    await other.close();
  });

  it('resolves from every state and never throws InvalidState', async () => {
    const t = await notifyTransport();
    const make = (): NotificationListener => getNotificationListener(t, [{ topic: uniqueName('topic') }], [{ info: () => undefined }]);

    await make().close();

    const starting = make();
    void starting.start();
    await starting.close();
    expect(starting.running).toBe(false);

    const running = make();
    await running.start();
    const both = [running.close(), running.close()];
    expect(both[0]).toBe(both[1]);
    await Promise.all(both);

    await closeWhileStoppingAndAfterWait(make);

    await running.start();
    expect(running.running).toBe(true);
    await running.close();
  });
});

describe('await using', () => {
  it('Symbol.asyncDispose exists at runtime (Node >= 20)', () => {
    expect(typeof Symbol.asyncDispose).toBe('symbol');
  });

  it('closes the server, then the transport, at the end of the block', async () => {
    const log: string[] = [];
    const topic = uniqueName('topic');
    const url = 'memory:///' + uniqueName('vh');
    const client = getRpcClient(await rpcTransport(url), { topic }, { timeout: 5000 });
    {
      await using t = await getRpcTransport(url);
      logCleanup(t, log);
      await using server = getRpcServer(t, { topic, server: 'h' }, [{ ping: () => 'pong' }]);
      server.events.on('stopped', () => log.push('server stopped'));
      await server.start();
      expect(await client.call({}, 'ping', {})).toBe('pong');
      log.push('block end');
    }
    // Disposal runs in reverse order: the server first, then the transport (which finds it closed).
    expect(log).toEqual(['block end', 'server stopped', 'transport cleanup']);
  });

  it('disposes a notification listener', async () => {
    const t = await notifyTransport();
    let listener: NotificationListener;
    {
      await using l = getNotificationListener(t, [{ topic: uniqueName('topic') }], [{ info: () => undefined }]);
      await l.start();
      listener = l;
      expect(listener.running).toBe(true);
    }
    expect(listener.running).toBe(false);
  });
});
