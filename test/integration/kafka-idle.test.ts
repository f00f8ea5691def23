// kafkajs 2.2's idle timer loop, stopped by tidings' kafkajs adapter (src/drivers/kafka/client/kafkajs-idle-fix.ts)
// on its own clients only, on the Kafka test broker (librdkafka's mock cluster, 3 brokers): an idle
// listener's connections arm no timers, requests that queue (the idempotent producer has one in
// flight) still go out, and an application's own kafkajs client in the process is left as kafkajs ships it.
import { createRequire } from 'node:module';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { getNotificationListener, getNotificationTransport, Notifier, Target, type Transport } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { SHORT_GROUP_QUERY, useKafkaMock } from '../support/kafka-raw.js';

interface Queue {
  clientId: string;
  throttleCheckTimeoutId: unknown;
  scheduleCheckPendingRequests(): void;
}

const queuePrototype = (createRequire(import.meta.url)('kafkajs/src/network/requestQueue/index.js') as { prototype: Queue }).prototype;
/** kafkajs's own method, as this file found it before any transport was opened. */
const shippedSchedule = queuePrototype.scheduleCheckPendingRequests;

/** This process's tidings transports' client ids (topology.clientId). */
const TIDINGS_CLIENT = `tidings-${process.pid}-`;

/** Counts the check timers kafkajs's request queues arm while `counting` is true, by client id; `queues` are those seen. */
function countArmedTimers(): { armed(clientPrefix: string): number; counting: boolean; readonly queues: Set<Queue>; restore(): void } {
  const armed = new Map<string, number>();
  const queues = new Set<Queue>();
  const current = queuePrototype.scheduleCheckPendingRequests;
  const counter = {
    counting: false,
    queues,
    armed: (prefix: string) => [...armed].reduce((n, [id, c]) => (id.startsWith(prefix) ? n + c : n), 0),
    restore: () => {
      queuePrototype.scheduleCheckPendingRequests = current;
    },
  };
  queuePrototype.scheduleCheckPendingRequests = function (this: Queue) {
    const before = this.throttleCheckTimeoutId;
    current.call(this);
    queues.add(this);
    if (counter.counting && before == null && this.throttleCheckTimeoutId != null) armed.set(this.clientId, (armed.get(this.clientId) ?? 0) + 1);
  };
  return counter;
}

let counters: Array<{ restore(): void }> = [];
afterEach(() => {
  for (const c of counters) c.restore();
  counters = [];
});

describe('kafkajs idle timer loop (librdkafka mock cluster)', () => {
  const kafka = useKafkaMock();

  /** A tidings transport with a listener on a new topic, torn down with the mock; `seen` collects payload `n`s. */
  async function listening(): Promise<{ seen: number[]; notifier: Notifier }> {
    const url = `${kafka.broker.url}/?${SHORT_GROUP_QUERY}&consumer_group=${uniqueName('g')}`;
    const transport: Transport = await getNotificationTransport(url);
    kafka.closers.push(() => transport.cleanup());
    const topic = uniqueName('t');
    const seen: number[] = [];
    const listener = getNotificationListener(transport, [new Target({ topic })], [{ info: (_c: unknown, _p: unknown, _e: string, payload: { n: number }) => void seen.push(payload.n) }]);
    await listener.start();
    kafka.closers.push(async () => {
      await listener.stop();
      await listener.wait();
    });
    const notifier = new Notifier(transport, { publisherId: 'idle.test', driver: 'messagingv2', topics: [topic] });
    return { seen, notifier };
  }

  it('an idle listener arms no timers on its connections; queued produce requests still go out and are consumed', async () => {
    const { seen, notifier } = await listening();
    // The adapter is loaded (and the fix applied) by now: count from here on.
    const timers = countArmedTimers();
    counters.push(timers);
    await notifier.info({}, 'ev', { n: 0 });
    await waitFor(() => seen.length === 1, { timeoutMs: 20_000, message: 'the first notification was consumed' });

    // One idle second: the listener's two consumers fetch (long polls of 200 ms) and heartbeat on
    // several broker connections. kafkajs 2.2.4 unfixed arms a 1 ms check timer on each of them
    // after every check: thousands in a second.
    timers.counting = true;
    await new Promise((r) => setTimeout(r, 1000));
    timers.counting = false;
    expect(timers.armed(TIDINGS_CLIENT)).toBeLessThan(20);

    // Sends of one turn share a request; those of later turns queue behind the one in flight
    // (idempotent producer): each queued request still goes out, and everything is consumed.
    await Promise.all(Array.from({ length: 60 }, (_, i) => new Promise((r) => setTimeout(r, i % 6)).then(() => notifier.info({}, 'ev', { n: i + 1 }))));
    await waitFor(() => seen.length === 61, { timeoutMs: 20_000, message: 'all 61 notifications consumed' });
    expect(new Set(seen).size).toBe(61);
  });

  it("an application's own kafkajs client in the same process is left as kafkajs ships it", async () => {
    const { seen, notifier } = await listening();
    await notifier.info({}, 'ev', { n: 0 });
    await waitFor(() => seen.length === 1, { timeoutMs: 20_000, message: 'the notification was consumed' });
    // tidings' kafkajs clients are up and quiet; kafkajs's own class is as it shipped.
    expect(queuePrototype.scheduleCheckPendingRequests).toBe(shippedSchedule);

    const timers = countArmedTimers();
    counters.push(timers);
    const appId = uniqueName('app');
    const app = new Kafka({ brokers: kafka.broker.brokers, clientId: appId, logLevel: logLevel.NOTHING, retry: { retries: 8, initialRetryTime: 100 } });
    const producer = app.producer({ allowAutoTopicCreation: true });
    await producer.connect();
    kafka.closers.push(() => producer.disconnect());
    await producer.send({ topic: uniqueName('app-t'), acks: -1, messages: [{ value: 'x' }] });

    // Idle now: the application's connections keep arming kafkajs's 1 ms check (its shipped
    // behaviour), while the idle tidings listener's arm (nearly) none.
    timers.counting = true;
    await waitFor(() => timers.armed(appId) >= 50, { timeoutMs: 20_000, message: "the application's idle kafkajs connections keep arming kafkajs's check timer" });
    timers.counting = false;
    const appQueues = [...timers.queues].filter((q) => q.clientId === appId);
    const tidingsQueues = [...timers.queues].filter((q) => q.clientId.startsWith(TIDINGS_CLIENT));
    expect(appQueues.length).toBeGreaterThan(0);
    // Nothing of tidings' on the application's queues; tidings' own queues carry the fix.
    for (const q of appQueues) expect(Object.hasOwn(q, 'scheduleCheckPendingRequests')).toBe(false);
    for (const q of tidingsQueues) expect(Object.hasOwn(q, 'scheduleCheckPendingRequests')).toBe(true);
  });
});
