// OpenTelemetry instrumentation on memory:// with the SDK's in-memory exporters: parent/child spans
// across transports, W3C keys in the context, attributes, error status, metrics, and zero cost when off.
import { afterEach, describe, expect, it } from 'vitest';
import { context, trace } from '@opentelemetry/api';
import { HandlerTimeout, InvalidArgument } from '../../src/core/errors.js';
import { Notifier } from '../../src/notify/notifier.js';
import { getNotificationTransport, getRpcTransport, type Transport } from '../../src/transport.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcServer } from '../../src/rpc/server.js';
import { uniqueName } from '../../src/testing/wait.js';
import { assertNotifyTrace, assertRpcTrace, createOtelHarness, isChildOf, type OtelHarness } from '../support/otel.js';
import { assertDeliveryMetrics } from '../support/delivery-metrics.js';
import { getMemoryBroker } from '../../src/testing/memory.js';
import { Target } from '../../src/core/target.js';
import { getNotificationListener } from '../../src/notify/listener.js';
import { OTEL_METRICS } from '../../src/observability/instrumentation.js';
import { waitFor } from '../../src/testing/wait.js';

const transports: Transport[] = [];
let o: OtelHarness | undefined;
afterEach(async () => {
  await Promise.all(transports.splice(0).map((t) => t.cleanup()));
  await o?.shutdown();
  o = undefined;
});

const route = () => {
  const url = `memory:///${uniqueName('t-otel')}`;
  return { a: url, b: url, systems: ['memory', 'memory'] as const, transports };
};

describe('OpenTelemetry instrumentation (memory://)', () => {
  it('traces client -> server -> nested call across four transports, with attributes, errors and metrics', async () => {
    o = createOtelHarness();
    await assertRpcTrace(o, route());
  });

  it('reports client retries, calls refused by an open circuit or a full bulkhead, and circuit states', async () => {
    o = createOtelHarness();
    const url = `memory:///${uniqueName('t-otel')}`;
    const t = await getRpcTransport(url, { instrumentation: o.instrumentation });
    transports.push(t);
    const topic = uniqueName('topic');
    const client = getRpcClient(t, { topic }, { timeout: 100, retryPolicy: { delayMs: 1, jitter: 0, attempts: 2, idempotentMethods: ['get'] }, circuitBreaker: { maxFailures: 2, halfOpenAfterMs: 60_000 } });
    await expect(client.call({}, 'get', {})).rejects.toThrow(/No reply/);
    await expect(client.call({}, 'get', {})).rejects.toThrow(/circuit/);
    const where = { 'messaging.destination.name': topic };
    expect(await o.total(OTEL_METRICS.callRetries, where)).toBe(1);
    expect(await o.total(OTEL_METRICS.callRejections, { ...where, 'tidings.rejection.reason': 'circuit_open' })).toBe(1);
    expect(await o.points(OTEL_METRICS.circuitState)).toEqual([{ attributes: { 'messaging.system': 'memory', ...where }, value: 2 }]);
    const bulk = getRpcClient(t, { topic }, { timeout: 5000, bulkhead: { maxConcurrent: 1, maxQueue: 0 } });
    const pending = bulk.call({}, 'get', {}).catch(() => undefined);
    await expect(bulk.call({}, 'get', {})).rejects.toThrow(/bulkhead is full/);
    expect(await o.total(OTEL_METRICS.callRejections, { ...where, 'tidings.rejection.reason': 'bulkhead_full' })).toBe(1);
    await t.cleanup();
    await pending;
  });

  it('traces notifier -> listener (parent) and batch listener (links), and counts requeues', async () => {
    o = createOtelHarness();
    await assertNotifyTrace(o, route());
  });

  it('counts a redelivery (the handler sees redelivered and deliveryCount); no lag on memory://', async () => {
    o = createOtelHarness();
    await assertDeliveryMetrics(o, { url: `memory:///${uniqueName('t-otel')}`, transports });
  });

  it('counts a malformed notification as a dead letter with reason malformed, and the listener goes on', async () => {
    o = createOtelHarness();
    const vhost = uniqueName('t-otel');
    const t = await getNotificationTransport(`memory:///${vhost}`, { instrumentation: o.instrumentation });
    transports.push(t);
    const topic = uniqueName('t');
    const got: string[] = [];
    const listener = getNotificationListener(t, [new Target({ topic })], [{ info: (_c: unknown, _p: unknown, eventType: string) => void got.push(eventType) }]);
    await listener.start();
    getMemoryBroker(vhost).publishRaw('openstack', `${topic}.info`, '{"not": "a notification"');
    await waitFor(async () => (await o!.total(OTEL_METRICS.deadLetters, { 'messaging.destination.name': `${topic}.info`, 'tidings.dead_letter.reason': 'malformed' })) === 1, { message: 'malformed counted' });
    await listener.stop();
    await listener.wait();
  });

  it('counts handlers given up on at their handlerTimeout (RPC and listener), and nothing for handlers in time', async () => {
    o = createOtelHarness();
    const url = `memory:///${uniqueName('t-otel')}`;
    const t = await getRpcTransport(url, { instrumentation: o.instrumentation });
    transports.push(t);
    const topic = uniqueName('t');
    const server = getRpcServer(t, { topic, server: 's' }, [{ hang: () => new Promise(() => {}), quick: () => 1 }], { handlerTimeout: 200 });
    await server.start();
    const client = getRpcClient(t, { topic, server: 's' }, { timeout: 30_000 });
    await expect(client.call({}, 'hang')).rejects.toBeInstanceOf(HandlerTimeout);
    await expect(client.call({}, 'hang')).rejects.toBeInstanceOf(HandlerTimeout);
    expect(await client.call({}, 'quick')).toBe(1);
    await server.close();
    const nt = await getNotificationTransport(url, { instrumentation: o.instrumentation });
    transports.push(nt);
    const ntopic = uniqueName('n');
    let calls = 0;
    const listener = getNotificationListener(nt, [new Target({ topic: ntopic })], [{ info: () => (++calls === 1 ? new Promise(() => {}) : undefined) }], { handlerTimeout: 200 });
    await listener.start();
    await new Notifier(nt, { topics: [ntopic], publisherId: 'p' }).info({}, 'ev', {});
    await waitFor(async () => (await o!.total(OTEL_METRICS.handlerTimeouts)) === 3, { timeoutMs: 15_000, message: 'three handler timeouts counted' });
    await listener.close();
    expect(await o.total(OTEL_METRICS.handlerTimeouts, { 'messaging.operation.name': 'process' })).toBe(3);
  });

  it('makes the caller\'s active span the parent of the call span', async () => {
    o = createOtelHarness();
    const url = `memory:///${uniqueName('t-otel')}`;
    const t = await getRpcTransport(url, { instrumentation: o.instrumentation });
    transports.push(t);
    const topic = uniqueName('t');
    const server = getRpcServer(t, { topic, server: 's' }, [{ ping: () => 'pong' }]);
    await server.start();
    const tracer = (o.instrumentation.tracerProvider as { getTracer(n: string): ReturnType<typeof trace.getTracer> }).getTracer('app');
    const outer = tracer.startSpan('request');
    await context.with(trace.setSpan(context.active(), outer), () => getRpcClient(t, { topic, server: 's' }).call({}, 'ping'));
    outer.end();
    await server.stop();
    await server.wait();
    expect(isChildOf(o.span(`call ${topic}.s`), o.span('request'))).toBe(true);
  });

  it('runs outside the transport\'s own middlewares, which see the trace keys', async () => {
    o = createOtelHarness();
    const seen: unknown[] = [];
    const t = await getRpcTransport(`memory:///${uniqueName('t-otel')}`, {
      instrumentation: o.instrumentation,
      middleware: { rpcClient: [{ before: (inv) => void seen.push(inv.ctx) }] },
    });
    transports.push(t);
    expect(t.middleware.rpcClient).toHaveLength(2);
    expect(t.middleware.rpcClient[0].name).toBe('opentelemetry');
    const topic = uniqueName('t');
    const server = getRpcServer(t, { topic, server: 's' }, [{ ping: () => 'pong' }]);
    await server.start();
    await getRpcClient(t, { topic, server: 's' }).call({ a: 1 }, 'ping');
    await server.stop();
    await server.wait();
    expect(seen[0]).toMatchObject({ a: 1, traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/) });
  });

  it('adds nothing without instrumentation (or with false): no middleware, OpenTelemetry not loaded', async () => {
    for (const options of [{}, { instrumentation: false }]) {
      const rpc = await getRpcTransport('memory://', options);
      const events = await getNotificationTransport('memory://', options);
      transports.push(rpc, events);
      for (const t of [rpc, events]) {
        expect(t.middleware).toEqual({ rpcClient: [], rpcServer: [], notifier: [], listener: [] });
      }
    }
  });

  it('uses the global providers with instrumentation: true', async () => {
    const t = await getRpcTransport('memory://', { instrumentation: true });
    transports.push(t);
    expect(t.middleware.rpcServer.map((m) => m.name)).toEqual(['opentelemetry']);
  });

  it('rejects bad instrumentation options naming the field', async () => {
    await expect(getRpcTransport('memory://', { instrumentation: 'yes' as never })).rejects.toThrow(InvalidArgument);
    await expect(getRpcTransport('memory://', { instrumentation: { tracer: {} } as never })).rejects.toThrow(/instrumentation\.tracer/);
    await expect(getRpcTransport('memory://', { instrumentation: { meterProvider: {} } as never })).rejects.toThrow(/instrumentation\.meterProvider.*getMeter/);
  });
});
