// The warning when `instrumentation` is on but the OpenTelemetry set-up cannot give one trace per
// call: no propagator, or no (async) context manager. Once per process, and never when set up.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { context, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { Logger, LogFields } from '../../src/core/logger.js';
import type { Transport } from '../../src/transport.js';
import { uniqueName } from '../../src/testing/wait.js';

interface Captured {
  logger: Logger;
  warnings: Array<{ msg: string; fields?: LogFields }>;
}

function capture(): Captured {
  const warnings: Captured['warnings'] = [];
  const logger: Logger = { debug: () => {}, info: () => {}, error: () => {}, warn: (msg, fields) => void warnings.push({ msg, fields }), child: () => logger };
  return { logger, warnings };
}

const transports: Transport[] = [];

/** tidings loaded afresh (its once-per-process memory empty), as in a new process. */
async function freshTidings(): Promise<typeof import('../../src/transport.js')> {
  vi.resetModules();
  return import('../../src/transport.js');
}

afterEach(async () => {
  await Promise.all(transports.splice(0).map((t) => t.cleanup()));
  context.disable();
  propagation.disable();
});

describe('OpenTelemetry set-up check', () => {
  it('warns once, naming the propagator and the context manager, when neither is registered', async () => {
    const { getNotificationTransport, getRpcTransport } = await freshTidings();
    const { logger, warnings } = capture();
    const url = `memory:///${uniqueName('t-otel')}`;
    transports.push(await getRpcTransport(url, { instrumentation: true, logger }));
    transports.push(await getNotificationTransport(url, { instrumentation: true, logger }));
    transports.push(await getRpcTransport(url, { instrumentation: true, logger }));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toBe('OpenTelemetry instrumentation is on, but spans of one call will not share a trace');
    const problems = warnings[0]!.fields!.problems as string[];
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^no propagator is registered.*propagation\.setGlobalPropagator\(new W3CTraceContextPropagator\(\)\)/);
    expect(problems[1]).toMatch(/^no context manager is registered.*context\.setGlobalContextManager\(new AsyncLocalStorageContextManager\(\)\.enable\(\)\)/);
  });

  it('warns about the context manager alone when the propagator is passed in the options', async () => {
    const { getRpcTransport } = await freshTidings();
    const { logger, warnings } = capture();
    transports.push(await getRpcTransport(`memory:///${uniqueName('t-otel')}`, { instrumentation: { propagator: new W3CTraceContextPropagator() }, logger }));
    expect(warnings.map((w) => (w.fields!.problems as string[]).map((p) => p.split(',')[0]))).toEqual([['no context manager is registered']]);
  });

  it('warns about the propagator alone when only the context manager is registered', async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    const { getRpcTransport } = await freshTidings();
    const { logger, warnings } = capture();
    transports.push(await getRpcTransport(`memory:///${uniqueName('t-otel')}`, { instrumentation: true, logger }));
    expect(warnings.map((w) => (w.fields!.problems as string[]).map((p) => p.split(',')[0]))).toEqual([['no propagator is registered']]);
  });

  it('says nothing when both are registered globally, or without instrumentation', async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const { getNotificationTransport, getRpcTransport } = await freshTidings();
    const { logger, warnings } = capture();
    const url = `memory:///${uniqueName('t-otel')}`;
    transports.push(await getRpcTransport(url, { instrumentation: true, logger }));
    transports.push(await getNotificationTransport(url, { instrumentation: true, logger }));
    context.disable();
    propagation.disable();
    transports.push(await getRpcTransport(url, { logger }));
    expect(warnings).toEqual([]);
  });
});
