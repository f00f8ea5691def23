// Connection management of the amqp driver on a real RabbitMQ: failure without retries, bad
// URLs and options, no password leaks, reconnect after the broker closes every connection of
// this process (traffic resumes, consumers restored, notifications exactly once after dedupe).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IncomingMessage, RpcIncomingMessage } from '../../src/contract/incoming-message.js';
import type { Listener } from '../../src/contract/listener.js';
import type { AmqpDriver } from '../../src/drivers/amqp/index.js';
import { ConnectionError, InvalidArgument, InvalidState, InvalidTransportURL, MessageDeliveryFailure, MessagingTimeout } from '../../src/core/errors.js';
import { createMemoryLogger, type MemoryLogger } from '../../src/core/logger.js';
import { Target } from '../../src/core/target.js';
import { getRpcTransport } from '../../src/transport.js';
import { cleanupAmqpDrivers, makeAmqpDriver, sampleNotification } from '../support/amqp-driver.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';

const run = promisify(execFile);
const PREFIX = uniqueName('t-amqpconn');
const EXCHANGE = `${PREFIX}-x`;

const makeDriver = (url = RABBIT_URL, options: Record<string, unknown> = {}, logger: MemoryLogger = createMemoryLogger()): AmqpDriver => makeAmqpDriver(EXCHANGE, options, logger, url);

/** Closes, broker side, every AMQP connection opened by this test process (not other test files'). */
async function closeOurConnections(): Promise<number> {
  const { stdout } = await run('rabbitmqctl', ['-q', 'list_connections', 'pid', 'client_properties'], { timeout: 60_000 });
  const pids = stdout
    .split('\n')
    .filter((line) => line.includes(`:${process.pid}:`))
    .map((line) => /^(<[^>]+>)/.exec(line.trim())?.[1])
    .filter((p): p is string => !!p);
  for (const pid of pids) await run('rabbitmqctl', ['-q', 'close_connection', pid, 'tidings test: closing connections'], { timeout: 60_000 }).catch(() => undefined);
  return pids.length;
}

const notification = sampleNotification;

describe('amqp driver connections (RabbitMQ)', () => {
  const drivers: AmqpDriver[] = [];
  const listeners: Listener<any>[] = [];

  beforeAll(requireRabbitMQ);

  afterAll(async () => {
    const replyQueues = drivers.map((d) => d.replyQueue).filter((q): q is string => !!q);
    await cleanupAmqpDrivers(drivers, listeners);
    await deleteRabbitObjectsWithPrefix(PREFIX);
    for (const q of replyQueues) await deleteRabbitObjectsWithPrefix(q).catch(() => undefined);
  });

  it('retry=0 to an unreachable port fails quickly with MessageDeliveryFailure (cast, call, notification)', async () => {
    const driver = makeDriver('rabbit://guest:guest@127.0.0.1:1/');
    drivers.push(driver);
    const started = Date.now();
    await expect(driver.send(new Target({ topic: 't' }), {}, { method: 'm', args: {} }, { retry: 0 })).rejects.toBeInstanceOf(MessageDeliveryFailure);
    await expect(driver.send(new Target({ topic: 't' }), {}, { method: 'm', args: {} }, { retry: 0, waitForReply: true, timeout: 20_000 })).rejects.toBeInstanceOf(MessageDeliveryFailure);
    await expect(driver.sendNotification(new Target({ topic: 't.info' }), {}, notification(1), { retry: 0 })).rejects.toBeInstanceOf(MessageDeliveryFailure);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('retry=N makes N+1 attempts with backoff, then MessageDeliveryFailure', async () => {
    const driver = makeDriver('rabbit://127.0.0.1:1/', { retryInterval: 10, retryBackoff: 10, intervalMax: 50 });
    drivers.push(driver);
    let attempts = 0;
    driver.events.on('connect-failed', () => attempts++);
    await expect(driver.send(new Target({ topic: 't' }), {}, { method: 'm', args: {} }, { retry: 2 })).rejects.toBeInstanceOf(MessageDeliveryFailure);
    expect(attempts).toBe(3);
  });

  it('a call whose request never reached the broker times out saying so, with the connection error as cause', async () => {
    const driver = makeDriver('rabbit://guest:s3cret@127.0.0.1:1/', { retryInterval: 50, retryBackoff: 0 });
    drivers.push(driver);
    const err = await driver.send(new Target({ topic: 't' }), {}, { method: 'm', args: {} }, { waitForReply: true, timeout: 500 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MessagingTimeout);
    expect((err as Error).message).toMatch(/never reached the broker/);
    expect((err as Error).message).not.toContain('s3cret');
    expect((err as Error).cause).toBeInstanceOf(Error);
  });

  it('cleanup stops sends that are waiting to retry instead of leaving them (and the process) hanging', async () => {
    const driver = makeDriver('rabbit://127.0.0.1:1/', { retryInterval: 60_000, retryBackoff: 0 });
    let failures = 0;
    driver.events.on('connect-failed', () => failures++);
    const cast = driver.send(new Target({ topic: 't' }), {}, { method: 'm', args: {} });
    const settled = cast.then(
      () => 'resolved',
      (e: unknown) => e,
    );
    await waitFor(() => failures > 0, { message: 'a first failed connection attempt' });
    await driver.cleanup();
    // The retry wait was 60 s: only an abort on cleanup settles it within the deadline.
    const outcome = await Promise.race([settled, new Promise((r) => setTimeout(() => r('still pending'), 10_000))]);
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).name).toMatch(/AbortError|MessageDeliveryFailure|InvalidState/);
  });

  it('a wrong password is not retried: sends fail at once, typed and non-retriable, even with retry forever', async () => {
    const wrong = RABBIT_URL.replace(/\/\/([^:]+):[^@]*@/, '//$1:Wr0ng-pw@');
    expect(wrong).not.toBe(RABBIT_URL);
    const driver = makeDriver(wrong, { retryInterval: 200, retryBackoff: 200 });
    drivers.push(driver);
    let attempts = 0;
    driver.events.on('connect-failed', () => attempts++);
    const started = Date.now();
    for (const send of [
      () => driver.send(new Target({ topic: 't' }), {}, { method: 'm', args: {} }, { retry: -1 }),
      () => driver.sendNotification(new Target({ topic: 'n.info' }), {}, notification(1), { retry: -1 }),
    ]) {
      const err = await send().then(() => expect.unreachable('the send succeeded'), (e: unknown) => e as ConnectionError);
      expect(err.retriable).toBe(false);
      expect(err.message).toMatch(/refused the login or access/);
      expect(err.message).not.toContain('Wr0ng-pw');
    }
    // Two sends, one connection attempt each: retry -1 did not loop on a login that cannot succeed.
    expect(attempts).toBe(2);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('fails over to the next host of a multi-host URL', async () => {
    const driver = makeDriver('rabbit://guest:guest@127.0.0.1:1,guest:guest@127.0.0.1:5672/', { retryInterval: 10, retryBackoff: 0 });
    drivers.push(driver);
    const hosts: string[] = [];
    driver.events.on('connected', (i) => hosts.push(i.host));
    await driver.send(new Target({ topic: `${PREFIX}-fo` }), {}, { method: 'm', args: {} }, { retry: 3 });
    expect(hosts).toEqual(['127.0.0.1:5672']);
  });

  it('rejects unknown URL options and bad values at transport creation', async () => {
    await expect(getRpcTransport('rabbit://127.0.0.1/?not_an_option=1')).rejects.toBeInstanceOf(InvalidTransportURL);
    await expect(getRpcTransport('rabbit://127.0.0.1/?rabbit_qos_prefetch_count=many')).rejects.toBeInstanceOf(InvalidArgument);
    await expect(getRpcTransport('rabbit://127.0.0.1/', { driverOptions: { heartbeatTimeout: -5 } })).rejects.toBeInstanceOf(InvalidArgument);
  });

  it('never shows the password in errors or logs', async () => {
    const secret = 'S3cretPassw0rdXYZ';
    const logger = createMemoryLogger();
    const driver = makeDriver(`rabbit://guest:${secret}@127.0.0.1:5672/`, {}, logger);
    drivers.push(driver);
    const err = await driver.send(new Target({ topic: 't' }), {}, { method: 'm', args: {} }, { retry: 0 }).catch((e) => e);
    // A refused login is not retried, so the connection's own error comes back, not "gave up after N attempts".
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as ConnectionError).retriable).toBe(false);
    const texts: string[] = [];
    for (let e: any = err; e; e = e.cause) texts.push(String(e), String(e.message), String(e.stack));
    texts.push(JSON.stringify(logger.records, (_k, v) => (v instanceof Error ? { m: v.message, s: v.stack } : v)));
    texts.push(driver.toString(), String(driver.url));
    for (const t of texts) expect(t).not.toContain(secret);
  });

  it('rejects every method with InvalidState after cleanup; cleanup is idempotent', async () => {
    const driver = makeDriver();
    await driver.cleanup();
    await driver.cleanup();
    await expect(driver.send(new Target({ topic: 't' }), {}, { method: 'm', args: {} })).rejects.toBeInstanceOf(InvalidState);
    await expect(driver.listen(new Target({ topic: 't', server: 's' }))).rejects.toBeInstanceOf(InvalidState);
  });

  it('pending calls reject when the transport is cleaned up', async () => {
    const driver = makeDriver();
    const call = driver.send(new Target({ topic: `${PREFIX}-nobody` }), {}, { method: 'm', args: {} }, { waitForReply: true, timeout: 30_000 }).catch((e: unknown) => e);
    await waitFor(() => driver.replyQueue !== undefined);
    const queue = driver.replyQueue!;
    await new Promise((r) => setTimeout(r, 200));
    await driver.cleanup();
    const err = await call;
    expect(err instanceof MessageDeliveryFailure || err instanceof MessagingTimeout).toBe(true);
    await deleteRabbitObjectsWithPrefix(queue);
  });

  it('recovers after the broker closes all its connections: calls resume, notifications arrive exactly once', async () => {
    const server = makeDriver(RABBIT_URL, { reconnectDelay: 100, retryInterval: 100, retryBackoff: 100 });
    const client = makeDriver(RABBIT_URL, { reconnectDelay: 100, retryInterval: 100, retryBackoff: 100 });
    drivers.push(server, client);
    const topic = `${PREFIX}-rec`;
    const rpc = await server.listen(new Target({ topic, server: 's' }));
    listeners.push(rpc);
    rpc.start(async (msgs) => {
      for (const m of msgs as RpcIncomingMessage[]) void m.reply({ result: (m.request.args as { i: number }).i });
    });
    const ntopic = `${PREFIX}-recn`;
    const nl = await server.listenForNotifications([[new Target({ topic: ntopic }), 'info']], { batchSize: 20, batchTimeout: 10 });
    listeners.push(nl);
    const counts = new Map<number, number>();
    nl.start(async (msgs: IncomingMessage[]) => {
      for (const m of msgs) {
        const i = (m.notification.payload as { i: number }).i;
        counts.set(i, (counts.get(i) ?? 0) + 1);
        await m.acknowledge();
      }
    });
    expect(await client.send(new Target({ topic }), {}, { method: 'm', args: { i: 1 } }, { waitForReply: true, timeout: 5000 })).toBe(1);
    let reconnects = 0;
    client.events.on('reconnected', () => reconnects++);
    server.events.on('reconnected', () => reconnects++);

    const N = 1000;
    const sends: Promise<void>[] = [];
    let outcomes = { ok: 0, timeout: 0, other: 0 };
    const calls: Promise<void>[] = [];
    let closing: Promise<number> | undefined;
    let closed = false;
    for (let i = 0; i < N; i++) {
      sends.push(client.sendNotification(new Target({ topic: `${ntopic}.info` }), {}, notification(i)));
      if (i % 20 === 0) {
        calls.push(
          client.send(new Target({ topic }), {}, { method: 'm', args: { i } }, { waitForReply: true, timeout: 8000 }).then(
            () => void outcomes.ok++,
            (e) => void (e instanceof MessagingTimeout ? outcomes.timeout++ : outcomes.other++),
          ),
        );
      }
      if (i === N / 4) closing = closeOurConnections().finally(() => (closed = true));
      // Spread the middle half over the time rabbitmqctl takes, so the close hits traffic in flight.
      if (i >= N / 4 && i < (3 * N) / 4 && !closed) await new Promise((r) => setTimeout(r, 3));
    }
    expect(await closing).toBeGreaterThan(0);
    await Promise.all(sends); // every notification confirmed (after retries)
    await Promise.all(calls);
    expect(outcomes.other).toBe(0);
    await waitFor(() => reconnects >= 2, { timeoutMs: 20_000, message: 'reconnected events' });
    await waitFor(() => counts.size === N, { timeoutMs: 30_000, message: `all ${N} notifications received` });
    expect([...counts.values()].every((c) => c === 1)).toBe(true);
    // Traffic resumes without restarting anything.
    outcomes = { ok: 0, timeout: 0, other: 0 };
    await waitFor(
      async () => (await client.send(new Target({ topic }), {}, { method: 'm', args: { i: 42 } }, { waitForReply: true, timeout: 2000 }).catch(() => undefined)) === 42,
      { timeoutMs: 20_000, message: 'a call succeeds after reconnect' },
    );
  });
});
