// handlerTimeout on a real RabbitMQ: stuck RPC handlers no longer use up the server's executor
// (their callers get a HandlerTimeout at the deadline), and a stuck notification is requeued
// through the broker and handled on its next delivery.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HandlerTimeout } from '../../src/core/errors.js';
import { Target } from '../../src/core/target.js';
import { getNotificationTransport, getRpcTransport, type Transport } from '../../src/transport.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcServer, type RpcHandlerTimeoutInfo } from '../../src/rpc/server.js';
import type { RpcMeta } from '../../src/rpc/endpoint.js';
import { Notifier } from '../../src/notify/notifier.js';
import { getNotificationListener } from '../../src/notify/listener.js';
import type { NotificationMetadata } from '../../src/notify/dispatcher.js';
import { deferred, uniqueName, waitFor, type Deferred } from '../../src/testing/wait.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';

const PREFIX = uniqueName('t-htimeout');
const URL = `${RABBIT_URL}?shutdown_timeout_ms=100`;

describe('handlerTimeout (RabbitMQ)', () => {
  const transports: Transport[] = [];
  const stuck: Array<Deferred<void>> = [];

  beforeAll(requireRabbitMQ);

  afterEach(async () => {
    // The abandoned handlers finish now; their late outcomes are dropped.
    for (const d of stuck.splice(0)) d.resolve();
    await Promise.all(transports.splice(0).map((t) => t.cleanup()));
  });

  afterAll(() => deleteRabbitObjectsWithPrefix(PREFIX));

  async function open(kind: 'rpc' | 'notification'): Promise<Transport> {
    const t = await (kind === 'rpc' ? getRpcTransport : getNotificationTransport)(URL, { controlExchange: `${PREFIX}-x` });
    transports.push(t);
    return t;
  }

  function hang(): Promise<void> {
    const d = deferred();
    stuck.push(d);
    return d.promise;
  }

  it('answers 10 stuck calls in a row with HandlerTimeout on 2 slots, then answers a normal call', async () => {
    const t = await open('rpc');
    const topic = `${PREFIX}-rpc`;
    const signals: AbortSignal[] = [];
    const server = getRpcServer(
      t,
      { topic, server: 's' },
      [{ stuck: (_c: unknown, _a: unknown, meta: RpcMeta) => (signals.push(meta.signal), hang()), echo: (_c: unknown, args: { v: string }) => args.v }],
      { executorSize: 2, handlerTimeout: 200 },
    );
    const timeouts: RpcHandlerTimeoutInfo[] = [];
    server.events.on('handlerTimeout', (info) => timeouts.push(info));
    await server.start();
    const client = getRpcClient(t, { topic }, { timeout: 30_000 });
    for (let i = 0; i < 10; i++) {
      const began = Date.now();
      await expect(client.call({}, 'stuck', {})).rejects.toBeInstanceOf(HandlerTimeout);
      expect(Date.now() - began).toBeLessThan(15_000);
    }
    expect(await client.call({}, 'echo', { v: 'still serving' })).toBe('still serving');
    expect(signals.every((s) => s.aborted)).toBe(true);
    expect(timeouts).toHaveLength(10);
    await server.close({ deadlineMs: 10_000 });
  });

  it('requeues a stuck notification through the broker; its next delivery is handled', async () => {
    const t = await open('notification');
    const topic = `${PREFIX}-notify`;
    const deliveries: NotificationMetadata[] = [];
    const handled: number[] = [];
    const listener = getNotificationListener(
      t,
      [new Target({ topic })],
      [
        {
          info(_ctx: unknown, _p: string | null, _e: string, payload: { id: number }, metadata: NotificationMetadata) {
            deliveries.push(metadata);
            if (deliveries.length === 1) return hang();
            handled.push(payload.id);
            return undefined;
          },
        },
      ],
      { allowRequeue: true, executorSize: 1, handlerTimeout: 300 },
    );
    let timedOut = 0;
    listener.events.on('handlerTimeout', (e) => (timedOut += e.requeued ? 1 : 0));
    await listener.start();
    await new Notifier(t, { topics: [topic], publisherId: 'p' }).info({}, 'compute.stuck', { id: 42 });
    await waitFor(() => handled.length > 0, { timeoutMs: 20_000, message: 'the requeued notification handled on redelivery' });
    expect(handled).toEqual([42]);
    expect(timedOut).toBe(1);
    expect(deliveries[0].signal.aborted).toBe(true);
    expect(deliveries[1].redelivered).toBe(true);
    await listener.close({ deadlineMs: 10_000 });
  });
});
