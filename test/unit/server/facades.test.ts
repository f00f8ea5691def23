// Both façades run on the one lifecycle of src/server: the same misuse gets the same InvalidState
// words from the RPC server and from plain and batch notification listeners, and the behaviours
// that had drifted apart (listen errors, stop during a failing start, cleanup errors) now agree.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConnectionError, InvalidState, ServerListenError } from '../../../src/core/errors.js';
import { createMemoryLogger, type MemoryLogger } from '../../../src/core/logger.js';
import { getNotificationTransport, getRpcTransport, type Transport } from '../../../src/transport.js';
import { getRpcServer } from '../../../src/rpc/server.js';
import { getBatchNotificationListener, getNotificationListener } from '../../../src/notify/listener.js';
import { refusal } from '../../../src/server/transitions.js';
import { uniqueName } from '../../../src/testing/wait.js';

interface Subject {
  start(): Promise<void>;
  stop(): Promise<void>;
  wait(): Promise<void>;
  close(): Promise<void>;
  readonly events: { on(event: 'started' | 'stopped', fn: () => void): unknown };
}

const transports: Transport[] = [];
afterEach(async () => {
  await Promise.all(transports.splice(0).map((t) => t.cleanup()));
});

/** One façade of each kind over its own memory:// transport; `listen` is the driver method it subscribes with. */
const FACADES: Array<[string, 'listen' | 'listenForNotifications', (logger: MemoryLogger) => Promise<{ subject: Subject; transport: Transport }>]> = [
  [
    'RpcServer',
    'listen',
    async (logger) => {
      const transport = await getRpcTransport('memory:///' + uniqueName('vh'));
      transports.push(transport);
      return { transport, subject: getRpcServer(transport, { topic: uniqueName('topic'), server: 'h' }, [{ hi: () => 'hi' }], { logger }) };
    },
  ],
  [
    'NotificationListener',
    'listenForNotifications',
    async (logger) => {
      const transport = await getNotificationTransport('memory:///' + uniqueName('vh'));
      transports.push(transport);
      return { transport, subject: getNotificationListener(transport, [{ topic: uniqueName('topic') }], [{ info() {} }], { logger }) };
    },
  ],
  [
    'batch NotificationListener',
    'listenForNotifications',
    async (logger) => {
      const transport = await getNotificationTransport('memory:///' + uniqueName('vh'));
      transports.push(transport);
      return { transport, subject: getBatchNotificationListener(transport, [{ topic: uniqueName('topic') }], [{ info() {} }], { logger, batchSize: 2, batchTimeout: 10 }) };
    },
  ],
];

/** The message of each refusal a misused façade gives, in one fixed sequence of misuse. */
async function misuse(subject: Subject): Promise<string[]> {
  const messages: string[] = [];
  const refused = async (p: Promise<void>) => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(InvalidState);
    messages.push((err as Error).message);
  };
  await refused(subject.stop()); // before start()
  await refused(subject.wait()); // before start()
  await subject.start();
  await refused(subject.wait()); // running
  await subject.stop();
  await refused(subject.start()); // stopped, before wait()
  await subject.wait();
  return messages;
}

describe('one lifecycle under both façades', () => {
  it('the same misuse gets the same InvalidState words from every façade, those of the shared table', async () => {
    const expected = [refusal('stop', 'idle'), refusal('wait', 'idle'), refusal('wait', 'running'), refusal('start', 'stopped')].map((e) => e.message);
    for (const [, , make] of FACADES) {
      const { subject } = await make(createMemoryLogger());
      expect(await misuse(subject)).toEqual(expected);
    }
  });

  it.each(FACADES)('%s: a driver failing to subscribe is a ServerListenError with the cause; the façade stays startable', async (_name, method, make) => {
    const { subject, transport } = await make(createMemoryLogger());
    const spy = vi.spyOn(transport.driver, method).mockRejectedValueOnce(new ConnectionError('broker went away'));
    const err = await subject.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerListenError);
    expect((err as Error).cause).toBeInstanceOf(ConnectionError);
    spy.mockRestore();
    await subject.start();
    await subject.close();
  });

  it.each(FACADES)('%s: stop() during a start that fails resolves and emits stopped; wait() ends the cycle', async (_name, method, make) => {
    const { subject, transport } = await make(createMemoryLogger());
    const spy = vi.spyOn(transport.driver, method).mockRejectedValueOnce(new ConnectionError('refused'));
    const events: string[] = [];
    subject.events.on('started', () => events.push('started'));
    subject.events.on('stopped', () => events.push('stopped'));
    const starting = subject.start();
    await subject.stop();
    await expect(starting).rejects.toBeInstanceOf(ServerListenError);
    await subject.wait();
    expect(events).toEqual(['stopped']);
    spy.mockRestore();
    await subject.start();
    expect(events).toEqual(['stopped', 'started']);
    await subject.close();
  });

  it.each(FACADES)('%s: a driver listener whose cleanup fails is logged; wait() resolves and the façade can start again', async (_name, method, make) => {
    const logger = createMemoryLogger();
    const { subject, transport } = await make(logger);
    const listen = (transport.driver[method] as (...args: unknown[]) => Promise<{ cleanup(): Promise<void> }>).bind(transport.driver);
    const spy = vi.spyOn(transport.driver, method).mockImplementationOnce((async (...args: unknown[]) => {
      const listener = await listen(...args);
      const cleanup = listener.cleanup.bind(listener);
      listener.cleanup = async () => {
        await cleanup();
        throw new ConnectionError('channel already closed');
      };
      return listener;
    }) as never);
    await subject.start();
    await subject.stop();
    await subject.wait();
    expect(logger.records.some((r) => r.level === 'error' && r.msg === 'listener cleanup failed')).toBe(true);
    spy.mockRestore();
    await subject.start();
    await subject.close();
  });
});
