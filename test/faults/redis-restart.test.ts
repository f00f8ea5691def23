// Fault on Redis: the server crashes (SIGKILL) and comes back (appendonly yes, appendfsync always)
// in the middle of 5,000 notifications and a stream of calls. Every notification whose send
// resolved is delivered, none twice; calls succeed or time out; every loop has a deadline.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getNotificationListener,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  MessagingTimeout,
  Notifier,
  NotificationResult,
  Target,
  type Transport,
} from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { redisCommand, startRedisServer, type RedisServer } from '../support/redis-servers.js';

const N = 5000;
const SENDERS = 32;
/** Sends resolved before the crash: far enough in that the crash hits sends and calls in flight. */
const CRASH_AFTER = 1500;

/** Rejects with `what` if `p` has not settled within `ms`: a hang fails the test instead of stalling it. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}

describe('fault (redis): the server restarts during 5,000 notifications and a call stream', () => {
  let server: RedisServer;
  const transports: Transport[] = [];

  beforeAll(async () => {
    server = await startRedisServer({ appendonly: true, appendfsync: 'always' });
  });

  afterAll(async () => {
    await Promise.all(transports.map((t) => t.cleanup().catch(() => undefined)));
    await server?.stop();
  }, 60_000);

  it('delivers every acknowledged notification exactly once; calls succeed or time out; nothing hangs', async () => {
    const url = `${server.url}?lease_ms=2000&sweep_interval_ms=200&retry_interval_ms=50&retry_max_ms=500&connect_timeout_ms=1000&block_ms=1000`;
    const topic = uniqueName('t-restart');
    const rpcTopic = uniqueName('t-restart-rpc');
    const notifyT = await getNotificationTransport(url);
    const listenT = await getNotificationTransport(url);
    const rpcT = await getRpcTransport(url);
    transports.push(notifyT, listenT, rpcT);

    const received = new Map<number, number>();
    const listener = getNotificationListener(
      listenT,
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
    await listener.start();
    const rpcServer = getRpcServer(rpcT, new Target({ topic: rpcTopic, server: 's1' }), [{ echo: (_ctx: unknown, args: { n: number }) => args.n }]);
    await rpcServer.start();

    // Sends: SENDERS concurrent loops over one sequence; a send that rejects is recorded, not retried by us.
    const notifier = new Notifier(notifyT, { publisherId: 'faults.restart', driver: 'messagingv2', topics: [topic] });
    const confirmed = new Set<number>();
    const sendErrors: unknown[] = [];
    let next = 0;
    const sending = Promise.all(
      Array.from({ length: SENDERS }, async () => {
        while (next < N) {
          const seq = next++;
          try {
            await notifier.info({}, 'restart.test', { seq });
            confirmed.add(seq);
          } catch (err) {
            sendErrors.push(err);
          }
        }
      }),
    );

    // Calls: one after another until the sends are done (and at least a few after the restart).
    const client = getRpcClient(rpcT, { topic: rpcTopic }, { timeout: 3000 });
    let restarted = false;
    let sendsDone = false;
    const calls = { ok: 0, okAfterRestart: 0, timedOut: 0, other: [] as unknown[] };
    const calling = (async () => {
      const deadline = Date.now() + 120_000;
      for (let n = 0; Date.now() < deadline && !(sendsDone && calls.okAfterRestart >= 5); n++) {
        try {
          expect(await client.call({}, 'echo', { n })).toBe(n);
          calls.ok++;
          if (restarted) calls.okAfterRestart++;
        } catch (err) {
          if (err instanceof MessagingTimeout) calls.timedOut++;
          else calls.other.push(err);
        }
      }
    })();

    await waitFor(() => confirmed.size >= CRASH_AFTER, { timeoutMs: 60_000, message: `${CRASH_AFTER} sends confirmed before the crash (have ${confirmed.size})` });
    const confirmedAtCrash = confirmed.size;
    await server.kill('SIGKILL');
    await server.restart();
    restarted = true;
    const callsAtRestart = calls.ok + calls.timedOut;

    await within(sending, 120_000, 'the 5,000 sends');
    sendsDone = true;
    await within(calling, 130_000, 'the call stream');

    // The crash came in the middle: sends were still in flight.
    expect(confirmedAtCrash).toBeLessThan(N);
    expect(sendErrors).toEqual([]);
    expect(confirmed.size).toBe(N);
    expect(calls.other).toEqual([]);
    expect(calls.okAfterRestart, `calls before the restart ${callsAtRestart}, ok ${calls.ok}, timed out ${calls.timedOut}`).toBeGreaterThanOrEqual(5);

    const missing = () => [...confirmed].filter((s) => !received.has(s));
    await waitFor(() => missing().length === 0, { timeoutMs: 60_000, message: `every confirmed notification delivered (missing ${missing().length}, e.g. ${missing().slice(0, 5).join(',')})` });
    // Settled for good: nothing pending in the group any more (a redelivery would come before this).
    const [stream] = (await redisCommand(server.endpoint, ['KEYS', `*${topic}*:notify:*`])) as string[];
    await waitFor(async () => Number(((await redisCommand(server.endpoint, ['XPENDING', stream, 'default'])) as [number])[0]) === 0, { timeoutMs: 30_000, message: 'nothing pending' });
    const twice = [...received].filter(([, n]) => n > 1).map(([s]) => s);
    expect(twice).toEqual([]);
    expect(received.size).toBe(N);

    await within(listener.stop().then(() => listener.wait()), 30_000, 'stopping the listener');
    await within(rpcServer.stop().then(() => rpcServer.wait()), 30_000, 'stopping the RPC server');
  }, 240_000);
});
