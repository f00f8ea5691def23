// Fault: RabbitMQ blocks the publishing connection (a memory/disk alarm). A frame proxy injects the
// real `connection.blocked` / `connection.unblocked` frames into one connection, because a
// broker-wide alarm would stall the test files that run in parallel on the same broker. The
// proxy also stops reading the connection once it publishes while blocked, as RabbitMQ does.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AmqpDriver, ConnectionEventInfo } from '../../src/drivers/amqp/index.js';
import {
  createMemoryLogger,
  getNotificationListener,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  MessageDeliveryFailure,
  MessagingError,
  MessagingTimeout,
  Notifier,
  NotificationResult,
  Target,
  type MemoryLogger,
  type Transport,
} from '../../src/index.js';
import { AmqpFrameProxy } from '../support/amqp-frame-proxy.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix, deleteRabbitQueues } from '../support/rabbit-admin.js';
import { rabbitmqctlCommand } from '../support/rabbit-tls.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';

const PREFIX = uniqueName('t-blocked');
const EXCHANGE = `${PREFIX}-x`;
/** A user of its own, so that "the password never appears" checks a distinctive string. */
const USER = `${PREFIX}-user`;
const SECRET = `Blk-${randomBytes(12).toString('hex')}`;
const REASON = 'low on memory (tidings test)';
/** How long a blocked publish must stay pending to count as "waiting" (not a speed assertion). */
const PENDING_CHECK_MS = 300;

function rabbitmqctl(args: string[]): Promise<string> {
  const [cmd, ...pre] = rabbitmqctlCommand();
  return new Promise((resolve, reject) => {
    execFile(cmd, [...pre, ...args], { encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`rabbitmqctl ${args[0]} failed (run as root or set TIDINGS_RABBITMQCTL="sudo -n rabbitmqctl"): ${err.message} ${stderr}`));
      else resolve(stdout);
    });
  });
}

/** Tracks whether a promise settled, without awaiting it. */
function track<T>(p: Promise<T>): { settled: () => boolean; promise: Promise<T> } {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  return { settled: () => done, promise: p };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('fault: RabbitMQ blocks the publishing connection (connection.blocked)', () => {
  let proxy: AmqpFrameProxy;
  const transports: Transport[] = [];
  const replyQueues: string[] = [];
  const stoppers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    await requireRabbitMQ();
    await rabbitmqctl(['add_user', USER, SECRET]);
    await rabbitmqctl(['set_permissions', '-p', '/', USER, '.*', '.*', '.*']);
    proxy = await AmqpFrameProxy.start();
  });

  afterEach(async () => {
    // A failed test must not leave a connection blocked for the next one.
    proxy.unblock();
    for (const stop of stoppers.splice(0)) await stop().catch(() => undefined);
    for (const t of transports.splice(0)) {
      const q = (t.driver as AmqpDriver).replyQueue;
      if (q) replyQueues.push(q);
      await t.cleanup();
    }
  });

  afterAll(async () => {
    await proxy?.close();
    await deleteRabbitQueues(replyQueues).catch(() => undefined);
    await deleteRabbitObjectsWithPrefix(PREFIX);
    await rabbitmqctl(['delete_user', USER]).catch(() => undefined);
  }, 60_000);

  /** A transport through the proxy, as the dedicated user; `query` is appended to the URL. */
  async function proxied(kind: 'rpc' | 'notification', logger: MemoryLogger, query = ''): Promise<{ transport: Transport; driver: AmqpDriver }> {
    const url = `rabbit://${USER}:${SECRET}@127.0.0.1:${proxy.port}/${query}`;
    const transport = kind === 'rpc' ? await getRpcTransport(url, { controlExchange: EXCHANGE, logger }) : await getNotificationTransport(url, { controlExchange: EXCHANGE, logger });
    transports.push(transport);
    return { transport, driver: transport.driver as AmqpDriver };
  }

  /** A transport straight to the broker, for listeners and servers that must not be blocked. */
  async function direct(kind: 'rpc' | 'notification'): Promise<Transport> {
    const transport = kind === 'rpc' ? await getRpcTransport(RABBIT_URL, { controlExchange: EXCHANGE }) : await getNotificationTransport(RABBIT_URL, { controlExchange: EXCHANGE });
    transports.push(transport);
    return transport;
  }

  /** Blocks the (single) proxied publisher connection and waits for the driver to report it. */
  async function block(driver: AmqpDriver): Promise<ConnectionEventInfo & { reason: string }> {
    let info: (ConnectionEventInfo & { reason: string }) | undefined;
    driver.events.once('blocked', (i) => (info = i));
    expect(proxy.block(REASON)).toBeGreaterThan(0);
    await waitFor(() => info, { timeoutMs: 5000, message: "the driver's 'blocked' event" });
    expect(driver.blocked).toBe(true);
    return info!;
  }

  async function unblock(driver: AmqpDriver): Promise<void> {
    let seen = false;
    driver.events.once('unblocked', () => (seen = true));
    expect(proxy.unblock()).toBeGreaterThan(0);
    await waitFor(() => seen, { timeoutMs: 5000, message: "the driver's 'unblocked' event" });
    expect(driver.blocked).toBe(false);
  }

  async function echoServer(topic: string): Promise<{ seen: number[] }> {
    const seen: number[] = [];
    const server = getRpcServer(await direct('rpc'), new Target({ topic, server: 's1' }), [
      {
        echo(_ctx: unknown, args: { i: number }) {
          seen.push(args.i);
          return args.i;
        },
      },
    ]);
    await server.start();
    stoppers.push(async () => {
      await server.stop();
      await server.wait();
    });
    return { seen };
  }

  it('emits blocked with the reason, holds a notification until unblocked, then delivers it exactly once', async () => {
    const topic = `${PREFIX}-notify`;
    const deliveries = new Map<number, number>();
    const listener = getNotificationListener(await direct('notification'), [new Target({ topic })], [
      {
        info(_ctx: unknown, _pub: string, _type: string, payload: { seq: number }) {
          deliveries.set(payload.seq, (deliveries.get(payload.seq) ?? 0) + 1);
          return NotificationResult.HANDLED;
        },
      },
    ]);
    await listener.start();
    stoppers.push(async () => {
      await listener.stop();
      await listener.wait();
    });

    const { transport, driver } = await proxied('notification', createMemoryLogger());
    const events: string[] = [];
    driver.events.on('blocked', () => events.push('blocked'));
    driver.events.on('unblocked', () => events.push('unblocked'));
    const notifier = new Notifier(transport, { publisherId: 'faults.blocked', driver: 'messagingv2', topics: [topic] });
    // Connects and declares, so that only the publish itself meets the block.
    await notifier.info({}, 'faults.blocked', { seq: 1 });
    await waitFor(() => deliveries.get(1) === 1, { message: 'the first notification' });

    const [conn] = proxy.openedConnections;
    expect(proxy.openedConnections).toHaveLength(1);
    // amqplib must advertise the capability, or RabbitMQ would never send connection.blocked.
    expect(conn.clientAdvertisedBlocked).toBe(true);

    const info = await block(driver);
    expect(info).toMatchObject({ connection: 'publisher', reason: REASON, host: `127.0.0.1:${proxy.port}` });
    expect(events).toEqual(['blocked']);

    const pending = track(notifier.info({}, 'faults.blocked', { seq: 2 }));
    await sleep(PENDING_CHECK_MS);
    expect(pending.settled()).toBe(false);
    expect(deliveries.has(2)).toBe(false);
    // Honoured by the driver itself: nothing was written while blocked, so the proxy holds nothing.
    expect(conn.publishFramesWhileBlocked).toBe(0);

    await unblock(driver);
    await pending.promise;
    expect(events).toEqual(['blocked', 'unblocked']);
    await waitFor(() => deliveries.get(2) === 1, { message: 'the held notification' });
    // A later notification on the same queue is the barrier: a duplicate of 2 would come before it.
    await notifier.info({}, 'faults.blocked', { seq: 3 });
    await waitFor(() => deliveries.get(3) === 1, { message: 'the barrier notification' });
    expect([...deliveries.entries()].sort(([a], [b]) => a - b)).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
  });

  it('a cast blocked longer than publishTimeout rejects with MessageDeliveryFailure, without the password', async () => {
    const topic = `${PREFIX}-cast`;
    const { seen } = await echoServer(topic);
    const logger = createMemoryLogger();
    // The URL form of the option (oslo-style query name, ms).
    const { transport, driver } = await proxied('rpc', logger, '?publish_timeout_ms=500');
    expect(driver.options.publishTimeout).toBe(500);
    const client = getRpcClient(transport, { topic }, { timeout: 10_000 });
    await client.cast({}, 'echo', { i: 1 });
    await waitFor(() => seen.includes(1), { message: 'the first cast' });

    await block(driver);
    // The connection stays blocked until after this settles: only publishTimeout can end it.
    const err = await client.cast({}, 'echo', { i: 2 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MessageDeliveryFailure);
    expect(err).toBeInstanceOf(MessagingError);
    expect((err as MessageDeliveryFailure).message).toContain(REASON);
    expect(proxy.openedConnections[0].publishFramesWhileBlocked).toBe(0);

    const texts = [String(err), (err as Error).stack ?? '', JSON.stringify(err), String((err as Error).cause ?? ''), JSON.stringify(logger.records, (_k, v: unknown) => (v instanceof Error ? { message: v.message, stack: v.stack } : v))];
    for (const t of texts) expect(t).not.toContain(SECRET);

    await unblock(driver);
    // The failed cast was not published after the unblock: the next one is the barrier.
    await client.cast({}, 'echo', { i: 3 });
    await waitFor(() => seen.includes(3), { message: 'the cast after unblock' });
    expect(seen).toEqual([1, 3]);
  });

  it('a call blocked past its own timeout rejects with MessagingTimeout and is never sent later', async () => {
    const topic = `${PREFIX}-call`;
    const { seen } = await echoServer(topic);
    const { transport, driver } = await proxied('rpc', createMemoryLogger());
    const client = getRpcClient(transport, { topic }, { timeout: 10_000 });
    await expect(client.call({}, 'echo', { i: 1 })).resolves.toBe(1);

    await block(driver);
    // Still blocked when it settles: the call's own timeout ended it, not the unblock.
    await expect(client.call({}, 'echo', { i: 2 }, { timeout: 500 })).rejects.toBeInstanceOf(MessagingTimeout);
    await unblock(driver);

    // The next call on the same queue is the barrier: a late copy of call 2 would arrive first.
    await expect(client.call({}, 'echo', { i: 3 })).resolves.toBe(3);
    expect(seen).toEqual([1, 3]);
  });

  it('recovers after the unblock: held and later calls and casts work on the same transport', async () => {
    const topic = `${PREFIX}-recover`;
    const { seen } = await echoServer(topic);
    const { transport, driver } = await proxied('rpc', createMemoryLogger());
    const client = getRpcClient(transport, { topic }, { timeout: 10_000 });
    await expect(client.call({}, 'echo', { i: 1 })).resolves.toBe(1);

    await block(driver);
    const held = track(client.call({}, 'echo', { i: 2 }));
    await sleep(PENDING_CHECK_MS);
    expect(held.settled()).toBe(false);
    expect(seen).not.toContain(2);
    await unblock(driver);
    await expect(held.promise).resolves.toBe(2);

    for (let i = 3; i < 13; i++) await expect(client.call({}, 'echo', { i })).resolves.toBe(i);
    await Promise.all([13, 14, 15].map((i) => client.cast({}, 'echo', { i })));
    await waitFor(() => [13, 14, 15].every((i) => seen.includes(i)), { message: 'casts after unblock' });
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 15 }, (_, k) => k + 1));

    // A second block/unblock cycle on the same connection behaves the same.
    await block(driver);
    const again = track(client.cast({}, 'echo', { i: 16 }));
    await sleep(PENDING_CHECK_MS);
    expect(again.settled()).toBe(false);
    await unblock(driver);
    await again.promise;
    await waitFor(() => seen.includes(16), { message: 'cast after the second unblock' });
    expect(proxy.openedConnections.every((c) => c.publishFramesWhileBlocked === 0)).toBe(true);
  });
});
