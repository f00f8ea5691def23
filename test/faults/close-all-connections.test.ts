// Fault: the broker closes every client connection of this process (as `rabbitmqctl
// close_all_connections` does) in the middle of 5,000 confirmed notifications and a stream of
// calls. Every confirmed notification reaches the listener exactly once, calls succeed or fail
// with MessagingTimeout, and traffic resumes in the same process.
//
// The test command runs test/faults after every other file, one file at a time, with
// TIDINGS_FAULTS_CLOSE_ALL=1 (vitest.config.ts): the literal `rabbitmqctl close_all_connections`.
// Without it (a developer running this file beside others) only this process's connections are
// closed, so test files running in parallel on the same broker are not disturbed.
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
  createMemoryLogger,
  type Transport,
  type TransportOptions,
} from '../../src/index.js';
import { deleteQueues, notificationQueues, rpcQueues } from '../interop/support/amqp-admin.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { closeAllRabbitConnections, closeMyRabbitConnections } from './support/broker-faults.js';

const TOTAL = 5000;
const IN_FLIGHT = 100;
/** Sends are paced so that the run (about 10 s) outlasts rabbitmqctl's ~1 s start-up: faults land mid-stream. */
const SENDS_PER_SECOND = 500;
const FAULT_AT = [1500, 3500];
// Reconnect quickly; the defaults (1 s + 2 s backoff) are oslo's and only slow the test down.
const FAST_RECONNECT: TransportOptions = { driverOptions: { retryInterval: 200, retryBackoff: 200, intervalMax: 1000, reconnectDelay: 100 } };

async function injectFault(): Promise<number> {
  if (process.env.TIDINGS_FAULTS_CLOSE_ALL === '1') {
    await closeAllRabbitConnections('tidings fault test');
    return -1;
  }
  return closeMyRabbitConnections('tidings fault test');
}

describe('fault: broker closes all client connections under load', () => {
  const topic = uniqueName('t-closeall-n');
  const rpcTopic = uniqueName('t-closeall-r');
  const transports: Transport[] = [];

  beforeAll(async () => {
    await requireRabbitMQ();
  });

  afterAll(async () => {
    for (const t of transports) await t.cleanup();
    await deleteQueues([...notificationQueues([topic]), ...rpcQueues(rpcTopic, ['s1'])]);
  }, 60_000);

  it('every confirmed notification arrives exactly once, calls succeed or time out, traffic resumes', async () => {
    const logger = createMemoryLogger();
    const open = async (kind: 'rpc' | 'notification') => {
      const options = { ...FAST_RECONNECT, logger };
      const t = kind === 'rpc' ? await getRpcTransport(RABBIT_URL, options) : await getNotificationTransport(RABBIT_URL, options);
      transports.push(t);
      return t;
    };
    const [listenT, notifyT, serverT, clientT] = [await open('notification'), await open('notification'), await open('rpc'), await open('rpc')];

    // The listener: counts deliveries per sequence number as the endpoint sees them.
    const deliveries = new Map<number, number>();
    const listener = getNotificationListener(listenT, [new Target({ topic })], [
      {
        info(_ctx: unknown, _pub: string, _type: string, payload: { seq: number }) {
          deliveries.set(payload.seq, (deliveries.get(payload.seq) ?? 0) + 1);
          return NotificationResult.HANDLED;
        },
      },
    ]);
    await listener.start();
    const server = getRpcServer(serverT, new Target({ topic: rpcTopic, server: 's1' }), [{ echo: (_ctx: unknown, args: { i: number }) => args.i }]);
    await server.start();

    try {
      const notifier = new Notifier(notifyT, { publisherId: 'faults.closeall', driver: 'messagingv2', topics: [topic] });
      const confirmed = new Set<number>();
      const rejected = new Map<number, unknown>();
      /** Per fault: connections closed (-1 = close_all) and how many sends were confirmed when it landed. */
      const faults: Array<{ closed?: number; confirmedAtClose?: number }> = [];
      let faultChain: Promise<void> = Promise.resolve();

      // A stream of calls until the notifications are through, two at a time.
      let sending = true;
      const callOutcomes: Array<{ ok: boolean; error?: unknown }> = [];
      const client = getRpcClient(clientT, { topic: rpcTopic }, { timeout: 4000 });
      const callLoop = async (lane: number) => {
        for (let i = 0; sending && i < 100_000; i++) {
          try {
            const r = await client.call({ lane }, 'echo', { i });
            expect(r).toBe(i);
            callOutcomes.push({ ok: true });
          } catch (error) {
            callOutcomes.push({ ok: false, error });
          }
        }
      };
      const calls = [callLoop(0), callLoop(1)];

      // 5,000 notifications with a bounded window; faults injected at fixed confirmed counts.
      let next = 0;
      const startedAt = Date.now();
      const sendOne = async (): Promise<void> => {
        while (next < TOTAL) {
          const seq = next++;
          const due = startedAt + (seq * 1000) / SENDS_PER_SECOND - Date.now();
          if (due > 0) await new Promise((r) => setTimeout(r, due));
          try {
            await notifier.info({ request_id: `req-${seq}` }, 'faults.closeall', { seq });
            confirmed.add(seq);
          } catch (error) {
            rejected.set(seq, error);
          }
          const threshold = FAULT_AT[faults.length];
          if (threshold !== undefined && confirmed.size >= threshold) {
            const fault: (typeof faults)[number] = {};
            faults.push(fault);
            faultChain = faultChain.then(async () => {
              fault.closed = await injectFault();
              fault.confirmedAtClose = confirmed.size;
            });
          }
        }
      };
      const deadline = Date.now() + 150_000;
      await Promise.race([
        Promise.all(Array.from({ length: IN_FLIGHT }, sendOne)),
        new Promise((_, reject) => setTimeout(() => reject(new Error(`notifications still unsettled after 150 s: confirmed ${confirmed.size}, rejected ${rejected.size}`)), deadline - Date.now())),
      ]);
      await faultChain;
      sending = false;
      await Promise.all(calls);

      const timeouts = callOutcomes.filter((o) => !o.ok).length;
      // One line of figures for whoever reads the test log.
      console.info(
        `close-all: faults ${JSON.stringify(faults)}; notifications confirmed ${confirmed.size}, rejected ${rejected.size}; calls ok ${callOutcomes.length - timeouts}, failed ${timeouts}; ` +
          `duplicates dropped by the driver ${logger.records.filter((r) => /duplicate/i.test(r.msg)).length}`,
      );
      expect(faults).toHaveLength(FAULT_AT.length);
      for (const f of faults) {
        if (f.closed !== -1) expect(f.closed, 'connections closed by the broker per fault').toBeGreaterThanOrEqual(4);
        expect(f.confirmedAtClose, 'the fault landed while notifications were still being sent').toBeLessThan(TOTAL - 200);
      }
      expect(confirmed.size + rejected.size).toBe(TOTAL);

      await waitFor(() => [...confirmed].every((s) => deliveries.has(s)), {
        timeoutMs: 90_000,
        intervalMs: 200,
        message: `every confirmed notification delivered (missing ${[...confirmed].filter((s) => !deliveries.has(s)).length} of ${confirmed.size})`,
      });
      const duplicates = [...deliveries].filter(([, n]) => n > 1);
      expect(duplicates, 'notifications delivered more than once to the endpoint').toEqual([]);
      const unexpected = [...deliveries.keys()].filter((s) => !confirmed.has(s) && !rejected.has(s));
      expect(unexpected).toEqual([]);

      const badCalls = callOutcomes.filter((o) => !o.ok && !(o.error instanceof MessagingTimeout));
      expect(badCalls.map((o) => String(o.error)), 'calls fail only with MessagingTimeout').toEqual([]);
      expect(callOutcomes.filter((o) => o.ok).length, 'calls succeeded during the run').toBeGreaterThan(0);

      // Traffic resumes in this process: a fresh call and a fresh notification go through.
      await expect(client.call({}, 'echo', { i: -1 })).resolves.toBe(-1);
      await notifier.info({}, 'faults.closeall', { seq: TOTAL });
      await waitFor(() => deliveries.get(TOTAL) === 1, { timeoutMs: 15_000, message: 'a notification after the faults arrived' });
    } finally {
      await server.stop();
      await server.wait();
      await listener.stop();
      await listener.wait();
    }
  }, 300_000);
});
