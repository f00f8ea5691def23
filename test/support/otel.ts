// OpenTelemetry SDK set-up for tests: an in-memory span exporter, a metric reader collected on
// demand, the AsyncLocalStorage context manager, and helpers to find spans and data points.
import { expect } from 'vitest';
import { SpanKind, SpanStatusCode, context, type Attributes } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { AggregationTemporality, MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics';
import type { InstrumentationOptions } from '../../src/observability/instrumentation.js';
import { getNotificationTransport, getRpcTransport, type Transport, type TransportOptions } from '../../src/transport.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcServer } from '../../src/rpc/server.js';
import { Notifier } from '../../src/notify/notifier.js';
import { getBatchNotificationListener, getNotificationListener } from '../../src/notify/listener.js';
import { NotificationResult } from '../../src/notify/dispatcher.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';

/** A reader that exports only when the test calls `collect()`. */
class ManualReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** One test's OpenTelemetry: pass `instrumentation` to the transports, then read `spans()` and `points()`. */
export interface OtelHarness {
  readonly instrumentation: InstrumentationOptions;
  /** Finished spans so far. */
  spans(): ReadableSpan[];
  /** The finished span named `name` (and matching `where`); throws when there is none. */
  span(name: string, where?: (s: ReadableSpan) => boolean): ReadableSpan;
  /** Data points of metric `name` now (sums as numbers, histograms as their count). */
  points(name: string): Promise<Array<{ attributes: Attributes; value: number }>>;
  /** Sum of the data points of `name` whose attributes include `match`. */
  total(name: string, match?: Attributes): Promise<number>;
  shutdown(): Promise<void>;
}

let contextManager: AsyncLocalStorageContextManager | undefined;

/** Registers the AsyncLocalStorage context manager once (global) and builds fresh providers. */
export function createOtelHarness(): OtelHarness {
  if (!contextManager) {
    contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
  }
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const reader = new ManualReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const points = async (name: string) => {
    const { resourceMetrics } = await reader.collect();
    const found: Array<{ attributes: Attributes; value: number }> = [];
    for (const scope of resourceMetrics.scopeMetrics) {
      for (const metric of scope.metrics) {
        if (metric.descriptor.name !== name) continue;
        for (const p of metric.dataPoints as DataPoint<number | Histogram>[]) {
          found.push({ attributes: p.attributes, value: typeof p.value === 'number' ? p.value : p.value.count });
        }
      }
    }
    return found;
  };
  return {
    instrumentation: { tracerProvider, meterProvider, propagator: new W3CTraceContextPropagator() },
    spans: () => exporter.getFinishedSpans(),
    span(name, where = () => true) {
      const found = exporter.getFinishedSpans().find((s) => s.name === name && where(s));
      if (!found) throw new Error(`no span ${JSON.stringify(name)}; finished: ${exporter.getFinishedSpans().map((s) => s.name).join(', ')}`);
      return found;
    },
    points,
    async total(name, match = {}) {
      let sum = 0;
      for (const p of await points(name)) if (Object.entries(match).every(([k, v]) => p.attributes[k] === v)) sum += p.value;
      return sum;
    },
    async shutdown() {
      await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
    },
  };
}

/** True when `child`'s parent is `parent` (same trace, parent span id). */
export function isChildOf(child: ReadableSpan, parent: ReadableSpan): boolean {
  const p = child.parentSpanContext;
  return p !== undefined && p.traceId === parent.spanContext().traceId && p.spanId === parent.spanContext().spanId;
}

/** Where a scenario's transports go: `a` for the caller and first server, `b` for the nested hop (another transport, maybe another driver). */
export interface OtelRoute {
  readonly a: string;
  readonly b: string;
  /** `messaging.system` expected on `a` and `b`. */
  readonly systems: readonly [string, string];
  /** Extra transport options (e.g. `controlExchange` for cleanup). */
  readonly options?: TransportOptions;
  /** Transports opened, for the caller to clean up. */
  readonly transports: Transport[];
}

/**
 * client (transport 1, a) -> server (transport 2, a) whose endpoint calls -> server (transport 4, b)
 * through a client on transport 3 (b): asserts one trace, parent/child links, attributes and the
 * `traceparent` context key the endpoints see.
 */
export async function assertRpcTrace(o: OtelHarness, route: OtelRoute): Promise<void> {
  const open = async (url: string) => {
    const t = await getRpcTransport(url, { ...route.options, instrumentation: o.instrumentation });
    route.transports.push(t);
    return t;
  };
  const [callerT, outerT, nestedClientT, innerT] = [await open(route.a), await open(route.a), await open(route.b), await open(route.b)];
  const outerTopic = uniqueName('t-otel-outer');
  const innerTopic = uniqueName('t-otel-inner');
  const seen: Record<string, unknown>[] = [];
  const inner = getRpcClient(nestedClientT, { topic: innerTopic, server: 's2' });
  const outerServer = getRpcServer(outerT, { topic: outerTopic, server: 's1' }, [
    {
      async outer(ctx: Record<string, unknown>, args: { x: number }) {
        seen.push(ctx);
        // a fresh context: the trace still follows, from the active span
        return (await inner.call({ user_id: 'u' }, 'inner', { x: args.x })) as number;
      },
    },
  ]);
  const innerServer = getRpcServer(innerT, { topic: innerTopic, server: 's2' }, [
    {
      inner(ctx: Record<string, unknown>, args: { x: number }) {
        seen.push(ctx);
        if (args.x < 0) throw new RangeError('negative');
        return args.x * 2;
      },
    },
  ]);
  await outerServer.start();
  await innerServer.start();
  try {
    const client = getRpcClient(callerT, { topic: outerTopic, server: 's1' }, { timeout: 20_000 });
    expect(await client.call({ request_id: 'req-1' }, 'outer', { x: 21 })).toBe(42);
    await waitFor(() => o.spans().length >= 4, { timeoutMs: 10_000 });

    const call = o.span(`call ${outerTopic}.s1`);
    const served = o.span(`process ${outerTopic}`);
    const nestedCall = o.span(`call ${innerTopic}.s2`);
    const nestedServed = o.span(`process ${innerTopic}`);
    expect(call.kind).toBe(SpanKind.CLIENT);
    expect(served.kind).toBe(SpanKind.SERVER);
    expect(call.parentSpanContext).toBeUndefined();
    expect(isChildOf(served, call)).toBe(true);
    expect(isChildOf(nestedCall, served)).toBe(true);
    expect(isChildOf(nestedServed, nestedCall)).toBe(true);
    expect(call.attributes).toMatchObject({
      'messaging.system': route.systems[0],
      'messaging.destination.name': `${outerTopic}.s1`,
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'call',
      'rpc.method': 'outer',
    });
    expect(served.attributes).toMatchObject({ 'messaging.system': route.systems[0], 'messaging.destination.name': outerTopic, 'messaging.operation.type': 'process', 'rpc.method': 'outer', 'messaging.consumer.group.name': 's1' });
    expect(served.attributes['messaging.message.id']).toEqual(expect.any(String));
    expect(served.attributes['messaging.message.conversation_id']).toEqual(expect.any(String));
    expect(nestedServed.attributes['messaging.system']).toBe(route.systems[1]);
    // the W3C key the endpoints see, as `_context_traceparent` on the oslo wire
    expect(seen[0]).toMatchObject({ request_id: 'req-1', traceparent: `00-${call.spanContext().traceId}-${call.spanContext().spanId}-01` });
    expect(seen[1]).toMatchObject({ user_id: 'u', traceparent: `00-${call.spanContext().traceId}-${nestedCall.spanContext().spanId}-01` });

    // a failure: both sides ERROR, error.type the class (the remote one on the client)
    await expect(inner.call({}, 'inner', { x: -1 })).rejects.toThrow(/negative/);
    await waitFor(() => o.spans().some((s) => s.name === `process ${innerTopic}` && s.status.code === SpanStatusCode.ERROR), { timeoutMs: 10_000 });
    const failedServe = o.span(`process ${innerTopic}`, (s) => s.status.code === SpanStatusCode.ERROR);
    const failedCall = o.span(`call ${innerTopic}.s2`, (s) => s.status.code === SpanStatusCode.ERROR);
    expect(failedServe.attributes['error.type']).toBe('RangeError');
    expect(failedCall.attributes['error.type']).toBe('RangeError');
    expect(failedServe.events.some((e) => e.name === 'exception')).toBe(true);
    expect(await o.total('messaging.client.operation.duration', { 'messaging.operation.name': 'call', 'error.type': 'RangeError' })).toBe(1);
    expect(await o.total('messaging.process.duration', { 'messaging.destination.name': innerTopic, 'error.type': 'RangeError' })).toBe(1);
    expect(await o.total('messaging.client.sent.messages', { 'messaging.destination.name': `${outerTopic}.s1` })).toBe(1);
    expect(await o.total('messaging.client.consumed.messages', { 'messaging.destination.name': innerTopic })).toBe(2);
    expect(await o.total('tidings.rpc.client.calls_in_flight')).toBe(0);

    // a cast: PRODUCER -> CONSUMER
    await client.cast({}, 'outer', { x: 1 });
    const castServed = await waitFor(() => o.spans().find((s) => s.name === `process ${outerTopic}` && s.kind === SpanKind.CONSUMER), { timeoutMs: 10_000 });
    const cast = o.span(`cast ${outerTopic}.s1`);
    expect(cast.kind).toBe(SpanKind.PRODUCER);
    expect(isChildOf(castServed, cast)).toBe(true);
    expect(castServed.attributes['messaging.message.conversation_id']).toBeUndefined();
  } finally {
    await Promise.all([outerServer, innerServer].map(async (s) => {
      await s.stop();
      await s.wait();
    }));
  }
}

/**
 * Notifier (transport 1, a) -> plain listener (transport 2, b): the CONSUMER span is the PRODUCER
 * span's child; a batch listener's span links to each message's producer span; REQUEUE is counted.
 */
export async function assertNotifyTrace(o: OtelHarness, route: OtelRoute): Promise<void> {
  const open = async (url: string) => {
    const t = await getNotificationTransport(url, { ...route.options, instrumentation: o.instrumentation });
    route.transports.push(t);
    return t;
  };
  const [sendT, plainT, batchT] = [await open(route.a), await open(route.b), await open(route.b)];
  const topic = uniqueName('t-otel-n');
  const batchTopic = uniqueName('t-otel-b');
  const got: Record<string, unknown>[] = [];
  let requeueOnce = true;
  const plain = getNotificationListener(plainT, [{ topic }], [
    {
      info: (ctx: Record<string, unknown>) => {
        got.push(ctx);
      },
      warn: () => {
        if (!requeueOnce) return undefined;
        requeueOnce = false;
        return NotificationResult.REQUEUE;
      },
    },
  ], { allowRequeue: true });
  let batched = 0;
  const batch = getBatchNotificationListener(batchT, [{ topic: batchTopic }], [{ info: (items: unknown[]) => void (batched += items.length) }], { batchSize: 2, batchTimeout: 200 });
  await plain.start();
  await batch.start();
  try {
    const notifier = new Notifier(sendT, { topics: [topic], publisherId: 'otel.test' });
    await notifier.info({ user_id: 'u' }, 'thing.create', { k: 1 });
    await waitFor(() => o.spans().some((s) => s.kind === SpanKind.CONSUMER && s.name.endsWith('.info')), { timeoutMs: 10_000 });
    const produced = o.span(`notify ${topic}.info`);
    const consumed = o.spans().find((s) => s.kind === SpanKind.CONSUMER && s.name.endsWith('.info'))!;
    expect(produced.kind).toBe(SpanKind.PRODUCER);
    expect(produced.attributes).toMatchObject({ 'messaging.system': route.systems[0], 'messaging.destination.name': `${topic}.info`, 'messaging.operation.name': 'notify', 'tidings.notification.event_type': 'thing.create' });
    expect(isChildOf(consumed, produced)).toBe(true);
    expect(consumed.attributes).toMatchObject({ 'messaging.system': route.systems[1], 'messaging.operation.type': 'process', 'tidings.notification.event_type': 'thing.create', 'tidings.notification.priority': 'info' });
    expect(consumed.attributes['messaging.message.id']).toEqual(expect.any(String));
    expect(got[0]).toMatchObject({ user_id: 'u', traceparent: expect.stringContaining(produced.spanContext().traceId) });

    await notifier.warn({}, 'thing.warn', {});
    await waitFor(async () => (await o.total('tidings.notify.requeue_requests')) === 1, { timeoutMs: 10_000 });
    await waitFor(async () => (await o.total('messaging.client.consumed.messages', { 'tidings.notification.priority': 'warn' })) === 2, { timeoutMs: 10_000 });

    const batchNotifier = new Notifier(sendT, { topics: [batchTopic] });
    await batchNotifier.info({}, 'a', 1);
    await batchNotifier.info({}, 'b', 2);
    await waitFor(() => batched === 2, { timeoutMs: 10_000 });
    const producers = o.spans().filter((s) => s.name === `notify ${batchTopic}.info`);
    const batchSpans = await waitFor(() => {
      const spans = o.spans().filter((s) => s.kind === SpanKind.CONSUMER && s.attributes['messaging.batch.message_count'] !== undefined);
      return spans.reduce((n, s) => n + s.links.length, 0) === 2 ? spans : undefined;
    }, { timeoutMs: 10_000 });
    const linked = batchSpans.flatMap((s) => s.links.map((l) => l.context.spanId));
    expect(linked.sort()).toEqual(producers.map((p) => p.spanContext().spanId).sort());
    expect(await o.total('messaging.client.sent.messages', { 'messaging.destination.name': `${batchTopic}.info` })).toBe(2);
  } finally {
    await Promise.all([plain, batch].map(async (l) => {
      await l.stop();
      await l.wait();
    }));
  }
}
