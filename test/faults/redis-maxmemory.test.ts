// Fault on Redis: the server at `maxmemory` with `noeviction`. Sends and calls fail at once with a
// MessageDeliveryFailure naming the cause (not retried: within seconds, not a timeout); every notification whose
// send resolved is still delivered; once listeners drain and trim the streams, sends work again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getNotificationListener,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  MessageDeliveryFailure,
  Notifier,
  NotificationResult,
  Target,
  type Transport,
} from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { withDeadline } from '../support/deadline.js';
import { redisCommand, redisInfo, startRedisServer, type RedisServer } from '../support/redis-servers.js';

/** Bodies this large fill a few MB in a few hundred sends. */
const PAD = 'x'.repeat(8 * 1024);

describe('fault (redis): maxmemory reached with noeviction', () => {
  let server: RedisServer;
  const transports: Transport[] = [];

  beforeAll(async () => {
    server = await startRedisServer({ maxmemory: '4mb', maxmemoryPolicy: 'noeviction' });
  });

  afterAll(async () => {
    await Promise.all(transports.map((t) => t.cleanup().catch(() => undefined)));
    await server?.stop();
  }, 60_000);

  it('sends fail with a typed OOM error, nothing acknowledged is lost, and sending recovers once drained', async () => {
    const url = `${server.url}?sweep_interval_ms=100&lease_ms=2000`;
    const topic = uniqueName('t-oom');
    const rpcTopic = uniqueName('t-oom-rpc');
    const t = await getNotificationTransport(url);
    const rpcT = await getRpcTransport(url);
    transports.push(t, rpcT);
    const rpcServer = getRpcServer(rpcT, new Target({ topic: rpcTopic, server: 's1' }), [{ echo: (_ctx: unknown, args: { n: number }) => args.n }]);
    await rpcServer.start();
    const client = getRpcClient(rpcT, { topic: rpcTopic }, { timeout: 10_000 });
    expect(await client.call({}, 'echo', { n: 1 })).toBe(1);

    // Fill Redis with notifications nobody reads yet (the default group keeps them), until a send fails.
    const notifier = new Notifier(t, { publisherId: 'faults.oom', driver: 'messagingv2', topics: [topic] });
    const confirmed: number[] = [];
    let seq = 0;
    const fillUntilRefused = async (): Promise<unknown> => {
      for (const end = seq + 5000; seq < end; seq++) {
        try {
          // Not retried: a refused send fails at once, it does not wait out retries.
          await withDeadline(notifier.info({}, 'oom.test', { seq, pad: PAD }), 10_000, `send ${seq} (retried instead of failing at once?)`);
          confirmed.push(seq);
        } catch (err) {
          seq++;
          return err;
        }
      }
      return undefined;
    };
    const failure = await fillUntilRefused();
    expect(failure, 'a send failed once maxmemory was reached').toBeInstanceOf(MessageDeliveryFailure);
    expect((failure as MessageDeliveryFailure).message).toMatch(/out of memory.*maxmemory/);
    expect((failure as MessageDeliveryFailure).retriable).toBe(false);
    expect(confirmed.length).toBeGreaterThan(10);
    expect(Number((await redisInfo(server.endpoint, 'memory')).used_memory)).toBeGreaterThan(3 * 1024 * 1024);

    // A call fails the same way (a MessageDeliveryFailure, not a MessagingTimeout after 10 s).
    // Used memory hovers at the limit (client buffers come and go), so a write may get through
    // right after a refused one: then fill to the limit again and call again, a bounded number of times.
    let callError: unknown;
    for (let tries = 0; tries < 10; tries++) {
      callError = await client.call({}, 'echo', { n: 2, pad: PAD }).catch((err: unknown) => err);
      if (callError !== 2) break;
      expect(await fillUntilRefused(), 'a send failed again at the limit').toBeInstanceOf(MessageDeliveryFailure);
    }
    expect(callError).toBeInstanceOf(MessageDeliveryFailure);
    expect((callError as Error).message).toMatch(/out of memory/);

    // Reading, acknowledging and trimming need no new memory: every confirmed send is delivered.
    const received = new Map<number, number>();
    const listener = getNotificationListener(
      t,
      [new Target({ topic })],
      [
        {
          info(_ctx: unknown, _pub: string, _type: string, payload: { seq: number }) {
            received.set(payload.seq, (received.get(payload.seq) ?? 0) + 1);
            return NotificationResult.HANDLED;
          },
        },
      ],
      {},
    );
    // The listener starts while Redis refuses every write (the limit well below what is used):
    // its group exists, and Redis refuses XGROUP CREATE at maxmemory even then.
    await redisCommand(server.endpoint, ['CONFIG', 'SET', 'maxmemory', '1mb']);
    try {
      await listener.start();
    } finally {
      await redisCommand(server.endpoint, ['CONFIG', 'SET', 'maxmemory', '4mb']);
    }
    try {
      await waitFor(() => confirmed.every((s) => received.has(s)), { timeoutMs: 30_000, message: `every confirmed notification delivered (${received.size} of ${confirmed.length})` });
      expect([...received.values()].every((n) => n === 1)).toBe(true);
      // The sweep trims what was acknowledged; then sends and calls work again.
      await waitFor(
        async () => {
          try {
            await notifier.info({}, 'oom.test', { seq: -1 });
            return true;
          } catch (err) {
            if (!(err instanceof MessageDeliveryFailure)) throw err;
            return false;
          }
        },
        { timeoutMs: 30_000, message: 'a send succeeds once the streams were trimmed' },
      );
      expect(await client.call({}, 'echo', { n: 3 })).toBe(3);
      await waitFor(() => received.has(-1), { timeoutMs: 10_000, message: 'the send after recovery delivered' });
    } finally {
      await listener.stop();
      await listener.wait();
      await rpcServer.stop();
      await rpcServer.wait();
    }
  }, 120_000);
});
