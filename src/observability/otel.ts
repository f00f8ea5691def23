// OpenTelemetry spans and metrics as four transport middlewares (outermost on the transport).
// Imported lazily by instrumentation.ts only when `instrumentation` is set: the only importer of @opentelemetry/api.
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context as otelContext,
  createContextKey,
  defaultTextMapGetter,
  defaultTextMapSetter,
  isSpanContextValid,
  metrics,
  propagation,
  trace,
  type Attributes,
  type Context as OtelContext,
  type Histogram,
  type Link,
  type Meter,
  type MeterProvider,
  type Span,
  type TextMapPropagator,
  type Tracer,
  type TracerProvider,
  type ObservableResult,
} from '@opentelemetry/api';
import { RemoteError } from '../core/errors.js';
import { isPlainObject } from '../core/json-check.js';
import type { Target } from '../core/target.js';
import type { Context } from '../contract/types.js';
import { OTEL_METRICS, type InstrumentationOptions, type ObservedDriver, type ObservedResilience } from './options.js';
import type { ListenerInvocation, ListenerMiddleware, NotifierInvocation, NotifierMiddleware, RpcClientInvocation, RpcClientMiddleware, RpcServerInvocation, RpcServerMiddleware, TransportMiddleware } from '../middleware/middleware.js';
import { NEVER_ABORTS, NotificationResult, wireContextOf, type NotificationHandlerResult } from '../contract/handlers.js';

/** Instrumentation scope name of tidings' tracer and meter. */
const SCOPE = 'tidings';

interface Instruments {
  readonly tracer: Tracer;
  readonly propagator: Pick<TextMapPropagator, 'inject' | 'extract'>;
  readonly operationDuration: Histogram;
  readonly sent: Tally;
  readonly consumed: Tally;
  readonly processDuration: Histogram;
  readonly inFlight: Tally;
  readonly requeues: Tally;
  readonly timeouts: Tally;
}

/**
 * Span name and attributes of one destination and operation, built once and shared by every span
 * and data point; the attributes with an `error.type` are built once per error class.
 */
interface Described {
  readonly name: string;
  readonly attributes: Attributes;
  readonly withError: Map<string, Attributes>;
}

/**
 * A counter kept in plain numbers per attribute set and reported when the meter collects (an
 * observable instrument): a synchronous OpenTelemetry counter hashes its attributes on every
 * `add()`, four times per call, which made metrics most of the instrumentation's cost.
 */
class Tally {
  private readonly counts = new Map<Attributes, number>();

  constructor(meter: Meter, name: string, description: string, upDown = false) {
    const instrument = upDown ? meter.createObservableUpDownCounter(name, { description }) : meter.createObservableCounter(name, { description });
    instrument.addCallback((result: ObservableResult) => {
      for (const [attributes, value] of this.counts) result.observe(value, attributes);
    });
  }

  /** Adds `value` under `attributes` (a frozen object shared by every data point of the series). */
  add(value: number, attributes: Attributes): void {
    this.counts.set(attributes, (this.counts.get(attributes) ?? 0) + value);
  }
}

/**
 * Builds the OpenTelemetry middlewares of one transport (`loadInstrumentation` imports this module).
 * `system` is the `messaging.system` value (`rabbitmq`, `redis`, `kafka`, `memory`...).
 */
export function createOtelMiddleware(options: InstrumentationOptions, system: string, driver?: ObservedDriver, resilience?: ObservedResilience): Required<TransportMiddleware> {
  const tracerProvider = (options.tracerProvider as TracerProvider | undefined) ?? trace.getTracerProvider();
  const meter: Meter = ((options.meterProvider as MeterProvider | undefined) ?? metrics.getMeterProvider()).getMeter(SCOPE);
  const o: Instruments = {
    tracer: tracerProvider.getTracer(SCOPE),
    propagator: (options.propagator as TextMapPropagator | undefined) ?? propagation,
    operationDuration: meter.createHistogram(OTEL_METRICS.operationDuration, { unit: 's', description: 'Duration of a call, cast or notification send' }),
    sent: new Tally(meter, OTEL_METRICS.sentMessages, 'Requests and notifications sent'),
    consumed: new Tally(meter, OTEL_METRICS.consumedMessages, 'Requests and notifications received'),
    processDuration: meter.createHistogram(OTEL_METRICS.processDuration, { unit: 's', description: 'Duration of handling a request or notification' }),
    inFlight: new Tally(meter, OTEL_METRICS.callsInFlight, 'RPC calls waiting for their reply', true),
    requeues: new Tally(meter, OTEL_METRICS.requeues, 'Notifications a handler asked to requeue'),
    timeouts: new Tally(meter, OTEL_METRICS.handlerTimeouts, 'Handlers given up on at their handlerTimeout'),
  };
  if (driver !== undefined) observeDriver(meter, system, driver);
  if (resilience !== undefined) observeResilience(meter, system, resilience);
  return Object.freeze({
    rpcClient: Object.freeze([rpcClientMiddleware(o, system)]),
    rpcServer: Object.freeze([rpcServerMiddleware(o, system)]),
    notifier: Object.freeze([notifierMiddleware(o, system)]),
    listener: Object.freeze([listenerMiddleware(o, system)]),
  });
}

/**
 * What the OpenTelemetry set-up lacks for one trace to span a call: no propagator (neither in
 * `options` nor registered globally: `propagation.fields()` is empty, as the no-op one's are), so the
 * trace context never reaches the other process; or no working context manager (a value set with
 * `context.with()` is not active after an `await` inside it, as with the no-op one), so a span
 * started in a handler is not the child of the span around it. Each missing piece is one sentence.
 */
export async function missingOtelSetup(options: InstrumentationOptions): Promise<string[]> {
  const missing: string[] = [];
  const propagator = (options.propagator as TextMapPropagator | undefined) ?? propagation;
  if (propagator.fields().length === 0) {
    missing.push('no propagator is registered, so the trace context is not sent with calls and notifications: call propagation.setGlobalPropagator(new W3CTraceContextPropagator()) (from @opentelemetry/core), or pass instrumentation: { propagator }');
  }
  const probe = createContextKey('tidings context manager probe');
  const marked = ROOT_CONTEXT.setValue(probe, true);
  const kept = await otelContext.with(marked, async () => {
    await new Promise<void>((resolve) => setImmediate(resolve));
    return otelContext.active().getValue(probe) === true;
  });
  if (!kept) {
    missing.push('no context manager is registered, so spans started in handlers and callbacks get no parent: call context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable()) (from @opentelemetry/context-async-hooks)');
  }
  return missing;
}

function rpcClientMiddleware(o: Instruments, system: string): RpcClientMiddleware {
  const described = new WeakMap<Target, { call: Described; cast: Described }>();
  const describe = (target: Target): { call: Described; cast: Described } => {
    let d = described.get(target);
    if (d === undefined) {
      const destination = target.fanout ? `${target.topic}_fanout` : target.server ? `${target.topic}.${target.server}` : (target.topic ?? '');
      d = { call: operation(system, destination, 'send', 'call'), cast: operation(system, destination, 'send', 'cast') };
      described.set(target, d);
    }
    return d;
  };
  return {
    name: 'opentelemetry',
    wrap(inv: RpcClientInvocation<unknown>, next: () => Promise<unknown>): Promise<unknown> {
      const isCall = inv.kind === 'call';
      const d = isCall ? describe(inv.target).call : describe(inv.target).cast;
      const parent = otelContext.active();
      const span = o.tracer.startSpan(d.name, { kind: isCall ? SpanKind.CLIENT : SpanKind.PRODUCER, attributes: d.attributes }, parent);
      span.setAttribute('rpc.method', inv.method);
      const active = trace.setSpan(parent, span);
      inv.ctx = inject(o, active, inv.ctx);
      if (isCall) o.inFlight.add(1, d.attributes);
      const began = performance.now();
      return otelContext.with(active, next).then(
        (result) => {
          sent(o, d, began, isCall, undefined);
          span.end();
          return result;
        },
        (error: unknown) => {
          sent(o, d, began, isCall, failed(span, error));
          span.end();
          throw error;
        },
      );
    },
  };
}

function rpcServerMiddleware(o: Instruments, system: string): RpcServerMiddleware {
  const described = new WeakMap<Target, Described>();
  return {
    name: 'opentelemetry',
    wrap(inv: RpcServerInvocation<unknown>, next: () => Promise<unknown>): Promise<unknown> {
      let d = described.get(inv.target);
      if (d === undefined) {
        d = operation(system, inv.target.topic ?? '', 'process', 'process');
        described.set(inv.target, d);
      }
      const parent = extract(o, inv.wireContext);
      const span = o.tracer.startSpan(d.name, { kind: inv.expectsReply ? SpanKind.SERVER : SpanKind.CONSUMER, attributes: d.attributes }, parent);
      span.setAttribute('rpc.method', inv.method);
      if (inv.target.server !== undefined) span.setAttribute('messaging.consumer.group.name', inv.target.server);
      if (inv.messageId !== undefined) span.setAttribute('messaging.message.id', inv.messageId);
      if (inv.callId !== undefined) span.setAttribute('messaging.message.conversation_id', inv.callId);
      o.consumed.add(1, d.attributes);
      const began = performance.now();
      const processed = d;
      const unwatch = watchTimeout(o, inv.meta.signal, d.attributes);
      return otelContext.with(trace.setSpan(parent, span), next).then(
        (result) => {
          unwatch?.();
          o.processDuration.record(seconds(began), processed.attributes);
          span.end();
          return result;
        },
        (error: unknown) => {
          unwatch?.();
          o.processDuration.record(seconds(began), withError(processed, failed(span, error)));
          span.end();
          throw error;
        },
      );
    },
  };
}

function notifierMiddleware(o: Instruments, system: string): NotifierMiddleware {
  const described = new WeakMap<readonly string[], Map<string, Described>>();
  const noTopics: readonly string[] = [];
  return {
    name: 'opentelemetry',
    wrap(inv: NotifierInvocation<unknown>, next: () => Promise<void>): Promise<void> {
      const topics = inv.topics ?? noTopics;
      let byPriority = described.get(topics);
      if (byPriority === undefined) described.set(topics, (byPriority = new Map()));
      let d = byPriority.get(inv.priority);
      if (d === undefined) {
        d = operation(system, topics.map((t) => `${t}.${inv.priority}`).join(','), 'send', 'notify');
        byPriority.set(inv.priority, d);
      }
      const parent = otelContext.active();
      const span = o.tracer.startSpan(d.name, { kind: SpanKind.PRODUCER, attributes: d.attributes }, parent);
      span.setAttribute('tidings.notification.event_type', inv.eventType);
      const active = trace.setSpan(parent, span);
      inv.ctx = inject(o, active, inv.ctx);
      const began = performance.now();
      const sending = d;
      return otelContext.with(active, next).then(
        () => {
          sent(o, sending, began, false, undefined);
          span.end();
        },
        (error: unknown) => {
          sent(o, sending, began, false, failed(span, error));
          span.end();
          throw error;
        },
      );
    },
  };
}

function listenerMiddleware(o: Instruments, system: string): ListenerMiddleware {
  const described = new Map<string, Map<string, Described>>();
  return {
    name: 'opentelemetry',
    wrap(inv: ListenerInvocation<unknown>, next: () => Promise<NotificationHandlerResult>): Promise<NotificationHandlerResult> {
      let byEndpoint = described.get(inv.priority);
      if (byEndpoint === undefined) described.set(inv.priority, (byEndpoint = new Map()));
      let d = byEndpoint.get(inv.endpoint);
      if (d === undefined) {
        const base = operation(system, undefined, 'process', 'process');
        d = { name: `process ${inv.endpoint}.${inv.priority}`, attributes: Object.freeze({ ...base.attributes, 'tidings.listener.endpoint': inv.endpoint, 'tidings.notification.priority': inv.priority }), withError: new Map() };
        byEndpoint.set(inv.endpoint, d);
      }
      const items = inv.items;
      let parent: OtelContext = ROOT_CONTEXT;
      let links: Link[] | undefined;
      if (!inv.batch && items.length === 1) {
        parent = extract(o, wireContextOf(items[0].metadata) ?? items[0].ctx);
      } else {
        links = [];
        for (const item of items) {
          const linked = trace.getSpanContext(extract(o, wireContextOf(item.metadata) ?? item.ctx));
          if (linked !== undefined && isSpanContextValid(linked)) links.push({ context: linked });
        }
      }
      const span = o.tracer.startSpan(d.name, { kind: SpanKind.CONSUMER, attributes: d.attributes, links }, parent);
      if (links === undefined) {
        const messageId = items[0].metadata.message_id;
        if (messageId !== undefined) span.setAttribute('messaging.message.id', messageId);
        span.setAttribute('tidings.notification.event_type', items[0].eventType);
      } else {
        span.setAttribute('messaging.batch.message_count', items.length);
      }
      const handled = d;
      o.consumed.add(items.length, handled.attributes);
      const began = performance.now();
      // One signal per message or batch: every item of a batch carries the batch's.
      const unwatch = watchTimeout(o, items[0].metadata.signal, handled.attributes);
      return otelContext.with(trace.setSpan(parent, span), next).then(
        (result) => {
          unwatch?.();
          o.processDuration.record(seconds(began), handled.attributes);
          if (result === NotificationResult.REQUEUE) o.requeues.add(items.length, handled.attributes);
          span.end();
          return result;
        },
        (error: unknown) => {
          unwatch?.();
          o.processDuration.record(seconds(began), withError(handled, failed(span, error)));
          o.requeues.add(items.length, handled.attributes);
          span.end();
          throw error;
        },
      );
    },
  };
}

/**
 * Counts a handler given up on at its `handlerTimeout` (its signal aborts then); nothing is added
 * without one. Returns the undo for a handler that finished in time, so a later handler of the
 * same notification does not count it twice.
 */
function watchTimeout(o: Instruments, signal: AbortSignal | undefined, attributes: Attributes): (() => void) | undefined {
  if (signal === undefined || signal === NEVER_ABORTS || signal.aborted) return undefined;
  const count = (): void => o.timeouts.add(1, attributes);
  signal.addEventListener('abort', count, { once: true });
  return () => signal.removeEventListener('abort', count);
}

/**
 * Redeliveries, dead letters and consumer lag, read off the driver when the meter collects. The
 * driver is held weakly: a transport dropped by its user is not kept alive by its metrics.
 */
function observeDriver(meter: Meter, system: string, driver: ObservedDriver): void {
  const ref = new WeakRef(driver);
  const attributes = (address: string, pool: string | undefined): Attributes => {
    const a: Attributes = { 'messaging.system': system, 'messaging.destination.name': address };
    if (pool !== undefined) a['messaging.consumer.group.name'] = pool;
    return a;
  };
  meter.createObservableCounter(OTEL_METRICS.redeliveries, { description: 'Messages received that the broker had delivered before' }).addCallback((result) => {
    for (const c of ref.deref()?.deliveryStats.snapshot() ?? []) if (c.redeliveries > 0) result.observe(c.redeliveries, attributes(c.address, c.pool));
  });
  meter.createObservableCounter(OTEL_METRICS.deadLetters, { description: 'Messages set aside after maxDeliveries or as malformed' }).addCallback((result) => {
    for (const c of ref.deref()?.deliveryStats.snapshot() ?? []) {
      if (c.deadLettered > 0) result.observe(c.deadLettered, { ...attributes(c.address, c.pool), 'tidings.dead_letter.reason': 'max_deliveries' });
      if (c.malformed > 0) result.observe(c.malformed, { ...attributes(c.address, c.pool), 'tidings.dead_letter.reason': 'malformed' });
    }
  });
  meter.createObservableCounter(OTEL_METRICS.deadLettersDropped, { description: 'Oldest dead letters deleted past dead_letter_max_len' }).addCallback((result) => {
    for (const c of ref.deref()?.deliveryStats.snapshot() ?? []) if (c.deadLettersDropped > 0) result.observe(c.deadLettersDropped, attributes(c.address, c.pool));
  });
  meter.createObservableGauge(OTEL_METRICS.consumerLag, { description: 'Messages a consumer group has not read or committed yet' }).addCallback(async (result) => {
    const lags = (await ref.deref()?.consumerLag().catch(() => [])) ?? [];
    for (const l of lags) result.observe(l.lag, attributes(l.address, l.pool));
  });
}

const CIRCUIT_STATE_VALUE = { closed: 0, 'half-open': 1, open: 2 } as const;

/** The clients' retries, refusals and circuit states, read when the meter collects (nothing is added per call). */
function observeResilience(meter: Meter, system: string, stats: ObservedResilience): void {
  const ref = new WeakRef(stats);
  const attributes = (destination: string): Attributes => ({ 'messaging.system': system, 'messaging.destination.name': destination });
  meter.createObservableCounter(OTEL_METRICS.callRetries, { description: 'RPC calls attempted again after a timeout or delivery failure' }).addCallback((result) => {
    for (const c of ref.deref()?.snapshot() ?? []) if (c.retries > 0) result.observe(c.retries, attributes(c.destination));
  });
  meter.createObservableCounter(OTEL_METRICS.callRejections, { description: 'RPC calls refused without sending by an open circuit or a full bulkhead' }).addCallback((result) => {
    for (const c of ref.deref()?.snapshot() ?? []) {
      if (c.circuitRejections > 0) result.observe(c.circuitRejections, { ...attributes(c.destination), 'tidings.rejection.reason': 'circuit_open' });
      if (c.bulkheadRejections > 0) result.observe(c.bulkheadRejections, { ...attributes(c.destination), 'tidings.rejection.reason': 'bulkhead_full' });
    }
  });
  meter.createObservableGauge(OTEL_METRICS.circuitState, { description: 'Circuit state per destination: 0 closed, 1 half-open, 2 open' }).addCallback((result) => {
    for (const c of ref.deref()?.circuitStates() ?? []) result.observe(CIRCUIT_STATE_VALUE[c.state], attributes(c.destination));
  });
}

/** Span name (`<operation> <destination>`, per the messaging conventions) and attributes, frozen. */
function operation(system: string, destination: string | undefined, type: 'send' | 'process', name: string): Described {
  const attributes: Attributes = { 'messaging.system': system, 'messaging.operation.type': type, 'messaging.operation.name': name };
  if (destination !== undefined) attributes['messaging.destination.name'] = destination;
  return { name: destination ? `${name} ${destination}` : name, attributes: Object.freeze(attributes), withError: new Map() };
}

/** A copy of a plain-object context with the trace context written in; any other context is left as it is. */
function inject(o: Instruments, active: OtelContext, ctx: unknown): any {
  if (!isPlainObject(ctx)) return ctx;
  const carrier: Record<string, unknown> = { ...ctx };
  o.propagator.inject(active, carrier, defaultTextMapSetter);
  return carrier;
}

function extract(o: Instruments, wire: Readonly<Context> | unknown): OtelContext {
  if (!isPlainObject(wire)) return ROOT_CONTEXT;
  return o.propagator.extract(ROOT_CONTEXT, wire, defaultTextMapGetter);
}

function sent(o: Instruments, d: Described, began: number, isCall: boolean, errorType: string | undefined): void {
  const attributes = withError(d, errorType);
  o.operationDuration.record(seconds(began), attributes);
  o.sent.add(1, attributes);
  if (isCall) o.inFlight.add(-1, d.attributes);
}

/** Marks the span failed and returns the `error.type` value: the class name (a RemoteError's remote class). */
function failed(span: Span, error: unknown): string {
  const type = errorType(error);
  if (error instanceof Error) span.recordException(error);
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  return type;
}

function errorType(error: unknown): string {
  if (error instanceof RemoteError) return error.excType;
  if (error instanceof Error) return error.constructor?.name || error.name || 'Error';
  return '_OTHER';
}

/** `d`'s attributes, with `error.type` when there is one (built once per error class, so tallies key on the same object). */
function withError(d: Described, errorType: string | undefined): Attributes {
  if (errorType === undefined) return d.attributes;
  // Error classes come from the wire (remote errors): past a bound, new ones count as `_OTHER`.
  const type = d.withError.has(errorType) || d.withError.size < MAX_ERROR_TYPES ? errorType : '_OTHER';
  let attributes = d.withError.get(type);
  if (attributes === undefined) d.withError.set(type, (attributes = Object.freeze({ ...d.attributes, 'error.type': type })));
  return attributes;
}

/** Error classes remembered per destination and operation. */
const MAX_ERROR_TYPES = 64;

function seconds(began: number): number {
  return (performance.now() - began) / 1000;
}
