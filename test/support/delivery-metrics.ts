// Redeliveries, dead letters and consumer lag as a handler and OpenTelemetry see them, on any
// broker: one notification requeued once (redelivered, counted), one poison notification that a
// driver with `maxDeliveries` dead-letters (counted), and a blocked pool whose lag the broker reports.
import { expect } from 'vitest';
import { getNotificationTransport, type Transport, type TransportOptions } from '../../src/transport.js';
import { Target } from '../../src/core/target.js';
import { Notifier } from '../../src/notify/notifier.js';
import { getNotificationListener } from '../../src/notify/listener.js';
import { NotificationResult, type NotificationMetadata } from '../../src/notify/dispatcher.js';
import { OTEL_METRICS } from '../../src/observability/instrumentation.js';
import { deferred, uniqueName, waitFor } from '../../src/testing/wait.js';
import type { OtelHarness } from './otel.js';

/** Where and what to check. */
export interface DeliveryMetricsRoute {
  /** The broker URL. */
  readonly url: string;
  /** The URL of the lag check's transport (e.g. with a prefetch of 1), when the broker reports lag. */
  readonly lagUrl?: string;
  readonly options?: TransportOptions;
  /** Everything opened here, for the caller's afterEach. */
  readonly transports: Transport[];
  /** The driver's `maxDeliveries` (the URL sets it), when it dead-letters. */
  readonly maxDeliveries?: number;
  /** Multiplies the deadlines. @default 1 */
  readonly timeScale?: number;
}

type Seen = { eventType: string; redelivered: boolean; deliveryCount: number };

export async function assertDeliveryMetrics(o: OtelHarness, route: DeliveryMetricsRoute): Promise<void> {
  const ms = (n: number) => n * (route.timeScale ?? 1);
  const open = async (url: string) => {
    const t = await getNotificationTransport(url, { ...route.options, instrumentation: o.instrumentation });
    route.transports.push(t);
    return t;
  };
  const transport = await open(route.url);
  const topic = uniqueName('tdmetrics');
  const pool = uniqueName('pool');
  const where = { 'messaging.destination.name': `${topic}.info`, 'messaging.consumer.group.name': pool };
  const seen: Seen[] = [];
  const listener = getNotificationListener(
    transport,
    [new Target({ topic })],
    [
      {
        info(_ctx: unknown, _publisher: string | null, eventType: string, _payload: unknown, metadata: NotificationMetadata) {
          seen.push({ eventType, redelivered: metadata.redelivered, deliveryCount: metadata.deliveryCount });
          if (eventType === 'poison' || (eventType === 'again' && !metadata.redelivered)) return NotificationResult.REQUEUE;
          return NotificationResult.HANDLED;
        },
      },
    ],
    { pool, allowRequeue: true },
  );
  await listener.start();
  const notifier = new Notifier(transport, { publisherId: 'dm', driver: 'messagingv2', topics: [topic] });

  await notifier.info({}, 'again', {});
  await waitFor(() => seen.filter((s) => s.eventType === 'again').length === 2, { timeoutMs: ms(15_000), message: 'the requeued notification came again' });
  const [first, second] = seen.filter((s) => s.eventType === 'again');
  expect(first).toMatchObject({ redelivered: false, deliveryCount: 1 });
  expect(second.redelivered).toBe(true);
  expect(second.deliveryCount).toBeGreaterThanOrEqual(2);
  await waitFor(async () => (await o.total(OTEL_METRICS.redeliveries, where)) === 1, { timeoutMs: ms(5_000), message: 'one redelivery counted for the topic and pool' });

  if (route.maxDeliveries !== undefined) {
    await notifier.info({}, 'poison', {});
    const reason = { ...where, 'tidings.dead_letter.reason': 'max_deliveries' };
    await waitFor(async () => (await o.total(OTEL_METRICS.deadLetters, reason)) === 1, { timeoutMs: ms(30_000), message: 'the poison notification dead-lettered and counted' });
    const poison = seen.filter((s) => s.eventType === 'poison');
    expect(poison.map((s) => s.deliveryCount)).toEqual(Array.from({ length: route.maxDeliveries }, (_, i) => i + 1));
    expect(await o.total(OTEL_METRICS.redeliveries, where)).toBe(1 + route.maxDeliveries - 1);
  }
  await listener.stop();
  await listener.wait();

  if (route.lagUrl === undefined) {
    // No lag where the broker does not tell it.
    expect(await o.points(OTEL_METRICS.consumerLag)).toEqual([]);
    return;
  }
  const lagTransport = await open(route.lagUrl);
  const lagTopic = uniqueName('tdmetrics-lag');
  const lagPool = uniqueName('lagpool');
  const gate = deferred<void>();
  let handled = 0;
  const blocked = getNotificationListener(lagTransport, [new Target({ topic: lagTopic })], [{ info: async () => void (await gate.promise, handled++) }], { pool: lagPool, executorSize: 1 });
  await blocked.start();
  const lagNotifier = new Notifier(lagTransport, { publisherId: 'dm', driver: 'messagingv2', topics: [lagTopic] });
  for (let i = 0; i < 5; i++) await lagNotifier.info({}, 'e', { i });
  const lagWhere = { 'messaging.destination.name': `${lagTopic}.info`, 'messaging.consumer.group.name': lagPool };
  await waitFor(async () => (await o.total(OTEL_METRICS.consumerLag, lagWhere)) >= 4, { timeoutMs: ms(15_000), message: 'the blocked pool is at least 4 behind' });
  gate.resolve();
  await waitFor(() => handled === 5, { timeoutMs: ms(15_000), message: 'all five handled' });
  await waitFor(async () => (await o.total(OTEL_METRICS.consumerLag, lagWhere)) === 0, { timeoutMs: ms(15_000), message: 'lag back to 0 once handled' });
  await blocked.stop();
  await blocked.wait();
}
