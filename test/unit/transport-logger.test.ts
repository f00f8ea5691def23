// A logger given to the transport reaches the façades built on it unless they get their own.
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryLogger } from '../../src/core/logger.js';
import { getNotificationListener, getNotificationTransport, getRpcClient, getRpcServer, getRpcTransport, Notifier, Target, type Transport } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';

const transports: Transport[] = [];
afterEach(async () => {
  await Promise.all(transports.splice(0).map((t) => t.cleanup()));
});

describe('transport logger', () => {
  it('RPC servers log handler failures to the transport logger by default, and to their own when given', async () => {
    const logger = createMemoryLogger();
    const t = await getRpcTransport('memory:///' + uniqueName(), { logger });
    transports.push(t);
    const topic = uniqueName();
    const endpoint = { boom() { throw new Error('kaboom'); } };
    const server = getRpcServer(t, { topic, server: 's' }, [endpoint]);
    await server.start();
    await expect(getRpcClient(t, { topic }, { timeout: 5000 }).call({}, 'boom', {})).rejects.toThrow(/kaboom/);
    expect(logger.records.some((r) => r.level === 'error' && r.fields.component === 'rpc-server')).toBe(true);
    await server.stop();
    await server.wait();

    const own = createMemoryLogger();
    const before = logger.records.length;
    const server2 = getRpcServer(t, { topic, server: 's2' }, [endpoint], { logger: own });
    await server2.start();
    await expect(getRpcClient(t, { topic, server: 's2' }, { timeout: 5000 }).call({}, 'boom', {})).rejects.toBeInstanceOf(Error);
    expect(own.records.some((r) => r.level === 'error')).toBe(true);
    expect(logger.records.slice(before).some((r) => r.fields.component === 'rpc-server')).toBe(false);
    await server2.stop();
    await server2.wait();
  });

  it('notification listeners log endpoint failures to the transport logger by default', async () => {
    const logger = createMemoryLogger();
    const t = await getNotificationTransport('memory:///' + uniqueName(), { logger });
    transports.push(t);
    const topic = uniqueName();
    let calls = 0;
    const listener = getNotificationListener(t, [new Target({ topic })], [{ info() { calls++; throw new Error('listener boom'); } }]);
    await listener.start();
    await new Notifier(t, { topics: [topic] }).info({}, 'ev', { a: 1 });
    await waitFor(() => calls === 1 && logger.records.some((r) => r.level === 'error' && r.fields.component === 'notification-listener'));
    await listener.stop();
    await listener.wait();
  });
});
