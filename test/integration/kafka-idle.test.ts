// kafkajs 2.2's idle timer loop, stopped by tidings' kafkajs adapter (src/drivers/kafka/kafkajs-idle-fix.ts),
// on the Kafka test broker (librdkafka's mock cluster, 3 brokers): an idle listener's connections
// arm no timers, and requests that queue (the idempotent producer has one in flight) still go out.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { getNotificationListener, getNotificationTransport, Notifier, Target, type Transport } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { SHORT_GROUP_QUERY, useKafkaMock } from '../support/kafka-raw.js';

interface Queue {
  throttleCheckTimeoutId: unknown;
  scheduleCheckPendingRequests(): void;
}

/** Counts the check timers kafkajs's request queues arm while `counting` is true. */
function countArmedTimers(): { readonly armed: number; counting: boolean } {
  const proto = (createRequire(import.meta.url)('kafkajs/src/network/requestQueue/index.js') as { prototype: Queue }).prototype;
  const schedule = proto.scheduleCheckPendingRequests;
  const counter = { armed: 0, counting: false };
  proto.scheduleCheckPendingRequests = function (this: Queue) {
    const before = this.throttleCheckTimeoutId;
    schedule.call(this);
    if (counter.counting && before == null && this.throttleCheckTimeoutId != null) counter.armed++;
  };
  return counter;
}

describe('kafkajs idle timer loop (librdkafka mock cluster)', () => {
  const kafka = useKafkaMock();

  it('an idle listener arms no timers on its connections; queued produce requests still go out and are consumed', async () => {
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
    // The adapter is loaded (and the fix applied) by now: count from here on.
    const timers = countArmedTimers();
    await notifier.info({}, 'ev', { n: 0 });
    await waitFor(() => seen.length === 1, { timeoutMs: 20_000, message: 'the first notification was consumed' });

    // One idle second: the listener's two consumers fetch (long polls of 200 ms) and heartbeat on
    // several broker connections. kafkajs 2.2.4 unfixed arms a 1 ms check timer on each of them
    // after every check: thousands in a second.
    timers.counting = true;
    await new Promise((r) => setTimeout(r, 1000));
    timers.counting = false;
    expect(timers.armed).toBeLessThan(20);

    // Sends of one turn share a request; those of later turns queue behind the one in flight
    // (idempotent producer): each queued request still goes out, and everything is consumed.
    await Promise.all(Array.from({ length: 60 }, (_, i) => new Promise((r) => setTimeout(r, i % 6)).then(() => notifier.info({}, 'ev', { n: i + 1 }))));
    await waitFor(() => seen.length === 61, { timeoutMs: 20_000, message: 'all 61 notifications consumed' });
    expect(new Set(seen).size).toBe(61);
  });
});
