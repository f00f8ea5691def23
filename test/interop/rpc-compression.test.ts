// Interop: kombu_compression=gzip between Python oslo.messaging 14 and tidings over RabbitMQ.
// Python compresses with kombu (zlib body, `compression: application/x-gzip` header); each side
// reads the other's compressed requests, replies and notifications. Fails, never skips.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getNotificationListener,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  NotificationResult,
  Target,
  type Context,
  type Transport,
} from '../../src/index.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { deleteQueues, notificationQueues, rpcQueues } from './support/amqp-admin.js';
import { PyClient, PyProcess, requireOsloMessaging, startPy } from './support/python.js';

const GZIP = { kombu_compression: 'gzip' };
const gzipUrl = `${RABBIT_URL}${RABBIT_URL.includes('?') ? '&' : '?'}kombu_compression=gzip`;
const BIG = 'compressible '.repeat(500);

class Echo {
  constructor(private readonly server: string) {}
  echo(ctx: Context, args: Record<string, unknown>) {
    return { args, server: this.server };
  }
}

describe('interop: kombu_compression=gzip, Python oslo.messaging <-> tidings', () => {
  const topic = uniqueName('t-pygz');
  const notifyTopic = uniqueName('t-pygzn');
  const transports: Transport[] = [];
  const stoppers: Array<{ stop(): Promise<void>; wait(): Promise<void> }> = [];
  const got: Array<{ eventType: string; payload: unknown }> = [];
  let pyClient: PyClient;
  let pyServer: PyProcess;
  let zipped: Transport;

  beforeAll(async () => {
    await requireRabbitMQ();
    requireOsloMessaging();
    const plain = await getRpcTransport(RABBIT_URL);
    zipped = await getRpcTransport(gzipUrl);
    const notifications = await getNotificationTransport(RABBIT_URL);
    transports.push(plain, zipped, notifications);
    // A tidings server without the option and one with it; a Python server and client with it.
    for (const [transport, server] of [[plain, 'ts-plain'], [zipped, 'ts-gzip']] as const) {
      const s = getRpcServer(transport, new Target({ topic, server }), [new Echo(server)]);
      await s.start();
      stoppers.push(s);
    }
    const listener = getNotificationListener(notifications, [new Target({ topic: notifyTopic })], [
      { info: (_ctx: Context, _publisher: string, eventType: string, payload: unknown) => (got.push({ eventType, payload }), NotificationResult.HANDLED) },
    ]);
    await listener.start();
    stoppers.push(listener);
    pyServer = new PyProcess('rpc_server.py', { url: RABBIT_URL, topic, server: 'py-gzip', rabbit: GZIP });
    pyClient = new PyClient(RABBIT_URL, 300, { rabbit: GZIP });
    await Promise.all([startPy(pyServer), startPy(pyClient)]);
  }, 90_000);

  afterAll(async () => {
    await pyClient?.stop();
    await pyServer?.stop();
    for (const s of stoppers) {
      await s.stop();
      await s.wait();
    }
    for (const t of transports) await t.cleanup();
    await deleteQueues([...rpcQueues(topic, ['ts-plain', 'ts-gzip', 'py-gzip']), ...notificationQueues([notifyTopic])]);
  }, 60_000);

  it('Python calls tidings servers with compressed requests; both read it, the compressed reply reaches Python', async () => {
    for (const server of ['ts-plain', 'ts-gzip']) {
      const reply = await pyClient.call({ topic, server }, {}, 'echo', { big: BIG });
      expect(reply).toMatchObject({ ok: true, result: { args: { big: BIG }, server } });
    }
  });

  it('tidings calls a Python server with a compressed request; Python\'s compressed reply is read', async () => {
    const client = getRpcClient(zipped, { topic, server: 'py-gzip' }, { timeout: 15_000 });
    const result = (await client.call({}, 'echo', { big: BIG })) as { args: unknown; server: string };
    expect(result).toMatchObject({ args: { big: BIG }, server: 'py-gzip' });
  });

  it('a compressed Python notification reaches a tidings listener', async () => {
    const eventType = uniqueName('gz.event');
    const reply = await pyClient.notify({ driver: 'messagingv2', topics: [notifyTopic], publisherId: 'py', priority: 'info', eventType, payload: { big: BIG }, ctx: {} });
    expect(reply).toMatchObject({ ok: true });
    await waitFor(() => got.some((g) => g.eventType === eventType), { timeoutMs: 15_000, message: 'the compressed Python notification handled by tidings' });
    expect(got.find((g) => g.eventType === eventType)?.payload).toEqual({ big: BIG });
  });
});
