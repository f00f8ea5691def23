// `TransportOptions.instrumentation`: its type, its check, and the lazy import of the
// OpenTelemetry middlewares (otel.ts), so `@opentelemetry/api` is loaded only when asked for.
import { DriverLoadFailure, InvalidArgument } from '../core/errors.js';
import { isPlainObject } from '../core/json-check.js';
import type { Logger } from '../core/logger.js';
import type { TransportMiddleware } from '../middleware/middleware.js';
import type { InstrumentationOptions, ObservedDriver, ObservedResilience } from './options.js';

export * from './options.js';

/** What the OpenTelemetry module builds for one transport. */
export type InstrumentationFactory = (options: InstrumentationOptions, system: string, driver?: ObservedDriver, resilience?: ObservedResilience) => Required<TransportMiddleware>;

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

/** The set-up problems already warned about: each is logged once per process, not once per transport. */
const warned = new Set<string>();

/**
 * Imports the OpenTelemetry module (and with it `@opentelemetry/api`) and builds the middlewares
 * for a transport whose `messaging.system` is `system`; `driver`'s delivery counters and consumer
 * lag, and the clients' retries, refusals and circuit states in `resilience`, are reported as
 * observable instruments. When the set-up cannot give one trace across a call (no propagator, no
 * context manager), warns on `logger`, once per process per problem: spans would otherwise land
 * in separate traces without a word.
 * @throws DriverLoadFailure naming the package to install when `@opentelemetry/api` is missing.
 */
export async function loadInstrumentation(options: InstrumentationOptions, system: string, driver?: ObservedDriver, logger?: Logger, resilience?: ObservedResilience): Promise<Required<TransportMiddleware>> {
  let factory: InstrumentationFactory;
  let missingSetup: (options: InstrumentationOptions) => Promise<string[]>;
  try {
    ({ createOtelMiddleware: factory, missingOtelSetup: missingSetup } = await import('./otel.js'));
  } catch (err) {
    const missing = /Cannot find (?:package|module) '([^']+)'/.exec((err as Error).message)?.[1];
    const hint = missing ? `the package "${missing}" is not installed (npm install @opentelemetry/api)` : (err as Error).message;
    throw new DriverLoadFailure(`Could not load OpenTelemetry for the transport's instrumentation option: ${hint}`, { cause: err });
  }
  const problems = (await missingSetup(options)).filter((p) => !warned.has(p));
  if (problems.length > 0 && logger) {
    for (const p of problems) warned.add(p);
    logger.warn('OpenTelemetry instrumentation is on, but spans of one call will not share a trace', { problems });
  }
  return factory(options, system, driver, resilience);
}
