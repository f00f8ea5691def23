// OpenTelemetry settings of a transport and the metric names, apart from the loader
// (instrumentation.ts) and the middlewares it loads (otel.ts), which both read them.
import type { BaseDriver } from '../contract/base-driver.js';
import type { ResilienceStats } from '../contract/resilience-stats.js';

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
  /** Counter: handlers (batches) given up on at the server's or listener's `handlerTimeout`. */
  handlerTimeouts: 'tidings.handler.timeouts',
  /** Counter: messages received that the broker had delivered before (per destination and consumer group). */
  redeliveries: 'tidings.consumer.redeliveries',
  /** Counter: messages set aside, with `tidings.dead_letter.reason` `max_deliveries` or `malformed`. */
  deadLetters: 'tidings.consumer.dead_letters',
  /** Counter: the oldest dead letters deleted to keep within `dead_letter_max_len` (Redis, Kafka). */
  deadLettersDropped: 'tidings.consumer.dead_letters_dropped',
  /** Gauge: messages a consumer group has not read or committed yet, where the broker tells it (Kafka, Redis). */
  consumerLag: 'tidings.consumer.lag',
  /** Counter: RPC calls attempted again after a timeout or delivery failure (`retryPolicy`), per destination. */
  callRetries: 'tidings.rpc.client.retries',
  /** Counter: RPC calls refused without sending, with `tidings.rejection.reason` `circuit_open` or `bulkhead_full`. */
  callRejections: 'tidings.rpc.client.rejections',
  /** Gauge: the circuit state per destination, 0 closed, 1 half-open, 2 open (`circuitBreaker`). */
  circuitState: 'tidings.rpc.client.circuit_state',
});

/** What the metrics read off a transport's driver when the meter collects. */
export type ObservedDriver = Pick<BaseDriver, 'deliveryStats' | 'consumerLag'>;

/** What the metrics read off a transport's resilience counts when the meter collects. */
export type ObservedResilience = Pick<ResilienceStats, 'snapshot' | 'circuitStates'>;
