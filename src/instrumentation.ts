// `TransportOptions.instrumentation`: its type, its check, and the lazy import of the
// OpenTelemetry middlewares (src/otel.ts), so `@opentelemetry/api` is loaded only when asked for.
import { DriverLoadFailure, InvalidArgument } from './errors.js';
import { isPlainObject } from './json-check.js';
import type { BaseDriver } from './driver/base-driver.js';
import type { TransportMiddleware } from './middleware.js';

/** An OpenTelemetry `TracerProvider` (typed structurally, so this package's types do not need `@opentelemetry/api`). */
export interface TracerProviderLike {
  /** Returns the tracer tidings' spans are made with. */
  getTracer(name: string, version?: string, options?: object): unknown;
}

/** An OpenTelemetry `MeterProvider`. */
export interface MeterProviderLike {
  /** Returns the meter tidings' instruments are made with. */
  getMeter(name: string, version?: string, options?: object): unknown;
}

/** An OpenTelemetry `TextMapPropagator` (e.g. `W3CTraceContextPropagator` of `@opentelemetry/core`). */
export interface PropagatorLike {
  /** Writes the trace context of `context` into `carrier` (a copy of the request context). */
  inject(context: unknown, carrier: unknown, setter?: unknown): void;
  /** Reads a trace context from `carrier` (the context as received). */
  extract(context: unknown, carrier: unknown, getter?: unknown): unknown;
  /** The keys it writes. */
  fields(): string[];
}

/** OpenTelemetry settings of a transport (`TransportOptions.instrumentation`). */
export interface InstrumentationOptions {
  /** Where spans go. @default the global provider (`trace.getTracerProvider()` of `@opentelemetry/api`) */
  tracerProvider?: TracerProviderLike;
  /** Where metrics go. @default the global provider (`metrics.getMeterProvider()`) */
  meterProvider?: MeterProviderLike;
  /**
   * Writes the trace context into a request/notification context and reads it back.
   * @default the global propagator (`propagation` of `@opentelemetry/api`; the NodeSDK registers W3C trace context and baggage)
   */
  propagator?: PropagatorLike;
}

/** Metric names: OpenTelemetry messaging semantic conventions where they exist, `tidings.*` otherwise. */
export const OTEL_METRICS = Object.freeze({
  /** Histogram (s): duration of a call, cast or notification send, with `error.type` on failure. */
  operationDuration: 'messaging.client.operation.duration',
  /** Counter: requests and notifications sent (attempted; `error.type` on failure). */
  sentMessages: 'messaging.client.sent.messages',
  /** Counter: requests and notifications a server or listener received. */
  consumedMessages: 'messaging.client.consumed.messages',
  /** Histogram (s): time an RPC server or a listener handler spent on a request/notification (batch). */
  processDuration: 'messaging.process.duration',
  /** UpDownCounter: RPC calls waiting for their reply. */
  callsInFlight: 'tidings.rpc.client.calls_in_flight',
  /** Counter: notifications a handler asked to requeue (returned REQUEUE or threw). */
  requeues: 'tidings.notify.requeue_requests',
  /** Counter: messages received that the broker had delivered before (per destination and consumer group). */
  redeliveries: 'tidings.consumer.redeliveries',
  /** Counter: messages set aside, with `tidings.dead_letter.reason` `max_deliveries` or `malformed`. */
  deadLetters: 'tidings.consumer.dead_letters',
  /** Gauge: messages a consumer group has not read or committed yet, where the broker tells it (Kafka, Redis). */
  consumerLag: 'tidings.consumer.lag',
});

/** What the metrics read off a transport's driver when the meter collects. */
export type ObservedDriver = Pick<BaseDriver, 'deliveryStats' | 'consumerLag'>;

/** What the OpenTelemetry module builds for one transport. */
export type InstrumentationFactory = (options: InstrumentationOptions, system: string, driver?: ObservedDriver) => Required<TransportMiddleware>;

const KEYS: Record<keyof InstrumentationOptions, string> = {
  tracerProvider: 'getTracer',
  meterProvider: 'getMeter',
  propagator: 'inject',
};

/**
 * Checks `TransportOptions.instrumentation`: undefined or false = off (returns undefined; nothing is
 * imported), true = the global providers, or an {@link InstrumentationOptions} object.
 * @throws InvalidArgument for anything else, naming the field.
 */
export function checkInstrumentation(value: unknown): InstrumentationOptions | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return {};
  if (!isPlainObject(value)) throw new InvalidArgument('instrumentation', 'true, false or an object {tracerProvider?, meterProvider?, propagator?}', value);
  for (const [key, v] of Object.entries(value)) {
    const method = KEYS[key as keyof InstrumentationOptions];
    if (method === undefined) throw new InvalidArgument(`instrumentation.${key}`, 'one of tracerProvider, meterProvider, propagator', key);
    if (v === undefined) continue;
    if (v === null || typeof v !== 'object' || typeof (v as Record<string, unknown>)[method] !== 'function') {
      throw new InvalidArgument(`instrumentation.${key}`, `an object with a ${method}() method (from @opentelemetry/api or an SDK)`, v);
    }
  }
  return value as InstrumentationOptions;
}

/**
 * Imports the OpenTelemetry module (and with it `@opentelemetry/api`) and builds the middlewares
 * for a transport whose `messaging.system` is `system`; `driver`'s delivery counters and consumer
 * lag are reported as observable instruments.
 * @throws DriverLoadFailure naming the package to install when `@opentelemetry/api` is missing.
 */
export async function loadInstrumentation(options: InstrumentationOptions, system: string, driver?: ObservedDriver): Promise<Required<TransportMiddleware>> {
  let factory: InstrumentationFactory;
  try {
    factory = (await import('./otel.js')).createOtelMiddleware;
  } catch (err) {
    const missing = /Cannot find (?:package|module) '([^']+)'/.exec((err as Error).message)?.[1];
    const hint = missing ? `the package "${missing}" is not installed (npm install @opentelemetry/api)` : (err as Error).message;
    throw new DriverLoadFailure(`Could not load OpenTelemetry for the transport's instrumentation option: ${hint}`, { cause: err });
  }
  return factory(options, system, driver);
}
