// Interop on quorum queues: Python oslo.messaging 14 and tidings, both given the same URL with
// `rabbit_quorum_queue=true` and oslo 14.0.3's quorum options (oslo's `rabbit_quroum_*`
// spelling, the one Python reads), declare identical queues in either order (no
// PRECONDITION_FAILED) and share them: RPC topic and server queues, pool queues and the
// notifier's `<topic>.<priority>` queue. Quorum makes exchanges durable, so everything runs on
// an exchange of this file instead of the broker's non-durable `openstack`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getNotificationListener,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  InvalidArgument,
  Notifier,
  NotificationResult,
  Target,
  type Transport,
} from '../../src/index.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix, listRabbitQueues, queueArgs } from '../support/rabbit-admin.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { PyClient, PyProcess, requireOsloMessaging, startPy } from './support/python.js';

const PREFIX = uniqueName('t-pyquorum');
const EXCHANGE = `${PREFIX}-x`;
const QUORUM_QUERY = 'rabbit_quorum_queue=true&rabbit_quorum_delivery_limit=5&rabbit_quroum_max_memory_length=100&rabbit_quroum_max_memory_bytes=1048576';
const URL = `${RABBIT_URL}?${QUORUM_QUERY}`;
/** What oslo 14.0.3's `_get_queue_arguments` gives for QUORUM_QUERY. */
const QUORUM_ARGS = { 'x-queue-type': 'quorum', 'x-delivery-limit': 5, 'x-max-in-memory-length': 100, 'x-max-in-memory-bytes': 1_048_576 };
const ORDERS = [['Python', 'tidings'] as const, ['tidings', 'Python'] as const];

/** Every queue named in `names` is a durable quorum queue with exactly oslo's arguments. */
async function expectQuorumQueues(names: readonly string[]): Promise<void> {
  const queues = await listRabbitQueues((n) => names.includes(n));
  for (const name of names) {
    expect(queues.get(name), `queue ${name}`).toMatchObject({ type: 'quorum', durable: true, auto_delete: false });
    expect(queueArgs(queues.get(name)), `arguments of ${name}`).toEqual(QUORUM_ARGS);
  }
}

describe('interop on quorum queues (rabbit_quorum_queue=true on both sides)', () => {
  let rpcTransport: Transport;
  let notifyTransport: Transport;
  let py: PyClient;
  const stops: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    await requireRabbitMQ();
    requireOsloMessaging();
    rpcTransport = await getRpcTransport(URL, { controlExchange: EXCHANGE });
    notifyTransport = await getNotificationTransport(URL, { controlExchange: EXCHANGE });
    py = await startPy(new PyClient(URL, 300, { control_exchange: EXCHANGE }));
  }, 90_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    await py?.stop();
    await rpcTransport?.cleanup();
    await notifyTransport?.cleanup();
    await deleteRabbitObjectsWithPrefix(PREFIX);
  }, 60_000);

  async function startPyServer(topic: string): Promise<void> {
    const server = await startPy(new PyProcess('rpc_server.py', { url: URL, topic, server: 'py', control_exchange: EXCHANGE }));
    stops.push(() => server.stop());
  }

  async function startTsServer(topic: string): Promise<void> {
    const server = getRpcServer(rpcTransport, new Target({ topic, server: 'ts' }), [{ echo: (_ctx: unknown, args: unknown) => ({ server: 'ts', args }) }]);
    stops.push(async () => {
      await server.stop();
      await server.wait();
    });
    await server.start();
  }

  for (const [first, second] of ORDERS) {
    it(`RPC, ${first} declares first: both servers share the quorum topic queue, and calls go both ways`, async () => {
      const topic = `${PREFIX}-rpc-${first}`;
      const start = { Python: () => startPyServer(topic), tidings: () => startTsServer(topic) };
      await start[first]();
      // The second declares the same queue: a different argument would fail its start (406).
      await start[second]();
      await expectQuorumQueues([topic, `${topic}.py`, `${topic}.ts`]);

      const fromPy = await py.call({ topic, server: 'ts' }, {}, 'echo', { n: 1 });
      expect(fromPy).toMatchObject({ ok: true, result: { server: 'ts', args: { n: 1 } } });
      const client = getRpcClient(rpcTransport, { topic }, { timeout: 15_000 });
      expect(await client.prepare({ server: 'py' }).call({}, 'echo', { n: 2 })).toMatchObject({ server: 'py', args: { n: 2 } });
      // Calls to the shared topic queue reach both servers (bounded: RabbitMQ alternates consumers).
      const answeredBy = new Set<string>();
      for (let i = 0; i < 20 && answeredBy.size < 2; i++) {
        const reply = await py.call({ topic }, {}, 'echo', { i });
        expect(reply.ok, JSON.stringify(reply)).toBe(true);
        answeredBy.add((reply as { result: { server: string } }).result.server);
      }
      expect([...answeredBy].sort()).toEqual(['py', 'ts']);
    });
  }

  for (const [first, second] of ORDERS) {
    it(`pooled notifications, ${first} listens first: one quorum pool queue shared by both, every notification handled once`, async () => {
      const topic = `${PREFIX}-n-${first}`;
      const pool = `${PREFIX}-pool-${first}`;
      const tsGot: string[] = [];
      const startTs = async () => {
        const listener = getNotificationListener(notifyTransport, [new Target({ topic })], [{ info: (_c: unknown, _p: string, eventType: string) => (tsGot.push(eventType), NotificationResult.HANDLED) }], { pool });
        stops.push(async () => {
          await listener.stop();
          await listener.wait();
        });
        await listener.start();
      };
      const pyListener = new PyProcess('notify_listener.py', { url: URL, topics: [topic], pool, control_exchange: EXCHANGE });
      stops.push(() => pyListener.stop());
      const start = { Python: () => startPy(pyListener), tidings: startTs };
      await start[first]();
      await start[second]();

      const notifier = new Notifier(notifyTransport, { publisherId: 'ts', driver: 'messagingv2', topics: [topic] });
      const sent: string[] = [];
      for (let i = 0; i < 10; i++) {
        sent.push(`py.${i}`, `ts.${i}`);
        const reply = await py.notify({ driver: 'messagingv2', topics: [topic], publisherId: 'py', priority: 'info', eventType: `py.${i}`, payload: i, ctx: {} });
        expect(reply.ok, JSON.stringify(reply)).toBe(true);
        await notifier.info({}, `ts.${i}`, i);
      }
      const pyGot = () => pyListener.events.filter((e) => e.event === 'notification').map((e) => String(e.event_type));
      await waitFor(() => tsGot.length + pyGot().length >= sent.length, { timeoutMs: 20_000, message: 'the pool handled every notification' });
      expect([...tsGot, ...pyGot()].sort(), 'each notification exactly once across the pool').toEqual([...sent].sort());
      expect(tsGot.length, 'the tidings member got a share').toBeGreaterThan(0);
      expect(pyGot().length, 'the Python member got a share').toBeGreaterThan(0);
      // Both notifiers declared the store-and-forward queue `<topic>.info`, identically.
      await expectQuorumQueues([pool, `${topic}.info`]);
    });
  }

  it('a tidings listener whose delivery limit differs from what Python declared is refused, naming the argument and its oslo option', async () => {
    const topic = `${PREFIX}-mismatch`;
    // Python's notifier declares `<topic>.info` with QUORUM_ARGS (delivery limit 5).
    expect(await py.notify({ driver: 'messagingv2', topics: [topic], publisherId: 'py', priority: 'info', eventType: 'e', payload: 1, ctx: {} })).toMatchObject({ ok: true });
    const other = await getNotificationTransport(URL.replace('rabbit_quorum_delivery_limit=5', 'rabbit_quorum_delivery_limit=6'), { controlExchange: EXCHANGE });
    try {
      const listener = getNotificationListener(other, [new Target({ topic })], [{ info: () => NotificationResult.HANDLED }]);
      const error = await listener.start().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(InvalidArgument);
      expect(String((error as Error).message)).toMatch(/argument x-delivery-limit: .*current is .*5.*align rabbit_quorum_delivery_limit with the other declarer/);
    } finally {
      await other.cleanup();
    }
  });
});
