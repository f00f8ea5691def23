// `npx tsx bench/cost.ts`: what the optional features cost per call and per notification, each
// off and on: calls/s (16 in flight) and notifications/s (published while one listener consumes,
// timed until consumed), as ratios to "off". Every run is its own process (an OpenTelemetry context
// manager, once enabled, slows every promise of the process; JIT state would leak across modes
// too), rounds alternate the order of the modes and the first round is dropped. With
// --instructions also instructions per operation, counted by valgrind's callgrind (repeatable
// where wall-clock rates are not). `--src <checkout>` measures another checkout's tidings (e.g. the
// commit before the features) in the "off" mode, so "off" can be compared with before.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { context, propagation, trace, type Histogram, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AggregationTemporality, MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { z } from 'zod';
import { countInstructions, ROOT, sayMark, TSX, type Mark } from './callgrind.js';
import { percentile } from './harness.js';
import { PAYLOAD_TEXT, keepInFlight, waitUntil } from './measure.js';

/** Calls and notifications in flight, as in the main bench. */
const WINDOW = 16;

export const MODES = ['off', 'middleware', 'schemas', 'otel-context', 'otel-floor', 'otel'] as const;
export type Mode = (typeof MODES)[number];
export const OPS = ['call', 'notify'] as const;
export type Op = (typeof OPS)[number];

const HELP = `Usage: npx tsx bench/cost.ts [--url <url>] [--count N] [--rounds N] [--modes off,middleware,schemas,otel] [--ops call,notify]
                                  [--instructions] [--src <checkout>]

  off         no middleware, no contract, no instrumentation (the default path)
  middleware  one pass-through middleware (a 'before' hook) on client, server, notifier and listener
  schemas     the call's arguments and result checked by a zod contract on both sides
  otel-context  only OpenTelemetry's AsyncLocalStorage context manager enabled, no instrumentation:
              what any OpenTelemetry set-up costs the process, before tidings does anything
  otel-floor  no instrumentation: a hand-written middleware does only the SDK work OpenTelemetry's
              conventions ask of a call or notification (a span on each side, the W3C context
              injected and extracted, the server span active, one duration histogram per side):
              the floor any instrumentation with this SDK pays
  otel        instrumentation with the OpenTelemetry SDK (batch span processor and a metric reader
              exporting to nowhere, AsyncLocalStorage context manager, W3C propagator)
  --instructions   also count instructions per operation under callgrind (slow: small counts)
  --src <dir>      another checkout of tidings (its src/index.ts) for the 'off' mode`;

/** The tidings API this bench needs: present in every version it may measure (`--src`). */
type Tidings = typeof import('../src/index.js');

/** Exports to nowhere: the SDK's cost without an exporter's. */
const discardSpans: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };
const discardMetrics: PushMetricExporter = {
  export: (_metrics, done) => done({ code: 0 }),
  forceFlush: async () => {},
  shutdown: async () => {},
  selectAggregationTemporality: () => AggregationTemporality.CUMULATIVE,
};

let contextManager: AsyncLocalStorageContextManager | undefined;

/** The process-wide context manager the NodeSDK registers; stays on for the rest of the process. */
function enableContextManager(): void {
  if (contextManager) return;
  contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
}

function otelOptions(): { tracerProvider: BasicTracerProvider; meterProvider: MeterProvider; propagator: W3CTraceContextPropagator } {
  enableContextManager();
  return {
    tracerProvider: new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(discardSpans)] }),
    meterProvider: new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter: discardMetrics, exportIntervalMillis: 60_000 })] }),
    propagator: new W3CTraceContextPropagator(),
  };
}

const passThrough = { before: () => {} };

/**
 * The least SDK work the conventions ask of one operation, written by hand as transport
 * middlewares (`otel-floor`): a span per side, the W3C context injected on send and extracted on
 * receipt, the receiving span active while the handler runs, one duration histogram per side with
 * the same four attributes tidings uses. No counters, no error handling, no caching.
 */
function otelFloor(): Record<string, unknown> {
  const o = otelOptions();
  propagation.setGlobalPropagator(o.propagator);
  const tracer: Tracer = o.tracerProvider.getTracer('floor');
  const meter = o.meterProvider.getMeter('floor');
  const sent: Histogram = meter.createHistogram('floor.send.duration');
  const handled: Histogram = meter.createHistogram('floor.process.duration');
  const attributes = { 'messaging.system': 'x', 'messaging.operation.type': 'send', 'messaging.operation.name': 'call', 'messaging.destination.name': 'topic' };
  const send = {
    async wrap(inv: { ctx: Record<string, unknown> }, next: () => Promise<unknown>) {
      const span = tracer.startSpan('send', { attributes });
      const carrier = { ...inv.ctx };
      propagation.inject(trace.setSpan(context.active(), span), carrier);
      inv.ctx = carrier;
      const began = performance.now();
      const result = await next();
      sent.record(performance.now() - began, attributes);
      span.end();
      return result;
    },
  };
  const receive = {
    async wrap(inv: { wireContext?: unknown; items?: Array<{ ctx: unknown }> }, next: () => Promise<unknown>) {
      const carrier = (inv.wireContext ?? inv.items?.[0]?.ctx ?? {}) as Record<string, unknown>;
      const parent = propagation.extract(context.active(), carrier);
      const span = tracer.startSpan('process', { attributes }, parent);
      const began = performance.now();
      const result = await context.with(trace.setSpan(parent, span), next);
      handled.record(performance.now() - began, attributes);
      span.end();
      return result;
    },
  };
  return { middleware: { rpcClient: [send], rpcServer: [receive], notifier: [send], listener: [receive] } };
}

/** Transport options of a mode: where the middleware and the instrumentation come in. */
function transportOptions(mode: Mode): Record<string, unknown> {
  if (mode === 'middleware') return { middleware: { rpcClient: [passThrough], rpcServer: [passThrough], notifier: [passThrough], listener: [passThrough] } };
  if (mode === 'otel') return { instrumentation: otelOptions() };
  if (mode === 'otel-floor') return otelFloor();
  if (mode === 'otel-context') enableContextManager();
  return {};
}

/** Runs between the warm-up and the measured operations (the callgrind handshake), if given. */
type Warmed = () => Promise<void>;

/** One measured run of `op` in `mode`: `count` operations after a warm-up. */
export async function measure(t: Tidings, url: string, mode: Mode, op: Op, count: number, warmup = Math.min(500, count), warmed: Warmed = async () => {}): Promise<{ ops: number; elapsedMs: number }> {
  const options = transportOptions(mode);
  return op === 'call' ? measureCalls(t, url, mode, options, count, warmup, warmed) : measureNotifications(t, url, options, count, warmup, warmed);
}

async function measureCalls(t: Tidings, url: string, mode: Mode, options: Record<string, unknown>, count: number, warmup: number, warmed: Warmed) {
  const [serverTransport, clientTransport] = await Promise.all([t.getRpcTransport(url, options), t.getRpcTransport(url, options)]);
  const topic = `bench-cost-${randomUUID()}`;
  const args = z.object({ i: z.number().int(), text: z.string() });
  const echo = <A>(_ctx: unknown, a: A): A => a;
  let endpoint: object = { echo };
  let clientOptions: Record<string, unknown> = { timeout: 30_000 };
  if (mode === 'schemas') {
    const contract = t.defineRpcContract({ echo: { args, result: args } });
    endpoint = t.implementContract(contract, { echo });
    clientOptions = { ...clientOptions, contract };
  }
  const server = t.getRpcServer(serverTransport, { topic, server: 'bench' }, [endpoint], { executorSize: 64 });
  await server.start();
  try {
    const client = t.getRpcClient(clientTransport, { topic }, clientOptions);
    const call = (i: number) => client.call({}, 'echo', { i, text: PAYLOAD_TEXT });
    await keepInFlight(warmup, WINDOW, () => true, call);
    await warmed();
    const start = performance.now();
    const ops = await keepInFlight(count, WINDOW, () => true, call);
    return { ops, elapsedMs: performance.now() - start };
  } finally {
    await server.stop();
    await server.wait();
    await Promise.all([serverTransport.cleanup(), clientTransport.cleanup()]);
  }
}

async function measureNotifications(t: Tidings, url: string, options: Record<string, unknown>, count: number, warmup: number, warmed: Warmed) {
  const transport = await t.getNotificationTransport(url, options);
  const topic = `bench-cost-${randomUUID()}`;
  let consumed = 0;
  const listener = t.getNotificationListener(transport, [{ topic }], [{ info: () => void consumed++ }]);
  await listener.start();
  try {
    const notifier = new t.Notifier(transport, { publisherId: 'bench', topics: [topic] });
    const publish = (i: number) => notifier.info({}, 'bench.event', { i, text: PAYLOAD_TEXT });
    await keepInFlight(warmup, WINDOW, () => true, publish);
    await waitUntil(() => consumed >= warmup, 'warm-up consumed');
    await warmed();
    const base = consumed;
    const start = performance.now();
    const ops = await keepInFlight(count, WINDOW, () => true, publish);
    await waitUntil(() => consumed - base >= ops, 'notifications consumed');
    return { ops, elapsedMs: performance.now() - start };
  } finally {
    await listener.stop();
    await listener.wait();
    await transport.cleanup();
  }
}

async function loadTidings(src: string | undefined): Promise<Tidings> {
  if (!src) return import('../src/index.js');
  return (await import(pathToFileURL(`${src.replace(/\/$/, '')}/src/index.ts`).href)) as Tidings;
}

interface OneRun {
  url: string;
  mode: Mode;
  op: Op;
  count: number;
  warmup: number;
  src?: string;
}

/** The command line of a child process measuring one run (see `--one`). */
function childArgs(run: OneRun, v8Flags: readonly string[] = []): string[] {
  const args = [process.execPath, ...v8Flags, '--import', TSX, fileURLToPath(import.meta.url), '--one', `${run.mode}:${run.op}`, '--url', run.url, '--count', String(run.count), '--warmup', String(run.warmup)];
  if (run.src) args.push('--src', run.src);
  return args;
}

/** One run in a fresh process: its operations per second. */
function runInChild(run: OneRun): number {
  const [cmd, ...args] = childArgs(run);
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  const line = (r.stdout ?? '').trim().split('\n').at(-1) ?? '';
  if (r.status !== 0 || !line.startsWith('{')) throw new Error(`bench child failed (${r.status}): ${(r.stderr ?? '').split('\n').slice(-8).join('\n')}`);
  const m = JSON.parse(line) as { ops: number; elapsedMs: number };
  return (m.ops / m.elapsedMs) * 1000;
}

/** Instructions per operation of one run under callgrind, over its measured operations only (see callgrind.ts). */
async function instructionsPerOp(run: OneRun): Promise<number> {
  const { instructions } = await countInstructions([...childArgs(run, ['--single-threaded']), '--handshake'], ROOT);
  return instructions / run.count;
}

/** The lower median (nearest rank). */
const median = (values: readonly number[]) => percentile(values, 50);

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      url: { type: 'string', default: 'memory://' },
      count: { type: 'string' },
      warmup: { type: 'string' },
      rounds: { type: 'string', default: '3' },
      modes: { type: 'string', default: MODES.join(',') },
      ops: { type: 'string', default: OPS.join(',') },
      instructions: { type: 'boolean' },
      src: { type: 'string' },
      one: { type: 'string' },
      handshake: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return console.log(HELP);
  const url = values.url!;
  if (values.one) {
    // A child: one mode and operation, its measurement as one JSON line.
    const t = await loadTidings(values.src);
    const [mode, op] = values.one.split(':') as [Mode, Op];
    const handshake = async (mark: Mark) => {
      if (values.handshake) await sayMark(mark);
    };
    const m = await measure(t, url, mode, op, Number(values.count), Number(values.warmup ?? 0), () => handshake('warm'));
    await handshake('done');
    console.log(JSON.stringify(m));
    return;
  }
  const modes = values.modes!.split(',') as Mode[];
  const ops = values.ops!.split(',') as Op[];
  for (const m of modes) if (!MODES.includes(m)) throw new Error(`unknown mode ${m}; one of ${MODES.join(', ')}`);
  for (const o of ops) if (!OPS.includes(o)) throw new Error(`unknown op ${o}; one of ${OPS.join(', ')}`);
  if (values.src && modes.some((m) => m !== 'off')) throw new Error('--src measures the off mode only: add --modes off');
  const count = Number(values.count ?? 10_000);
  const warmup = Number(values.warmup ?? Math.min(2000, count));
  const rounds = Number(values.rounds);
  const rates = new Map<string, number[]>();
  // Rounds alternate the order of the modes; with more than one, the first is a warm-up and is dropped.
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? modes : [...modes].reverse();
    for (const op of ops) {
      for (const mode of order) {
        const rate = runInChild({ url, mode, op, count, warmup, src: values.src });
        if (r === 0 && rounds > 1) continue;
        const key = `${op}:${mode}`;
        rates.set(key, [...(rates.get(key) ?? []), rate]);
      }
    }
  }
  const report: Record<string, Record<string, { opsPerSec: number; vsOff: number; instructionsPerOp?: number; instructionsVsOff?: number }>> = {};
  for (const op of ops) {
    report[op] = {};
    const off = median(rates.get(`${op}:off`) ?? [NaN]);
    for (const mode of modes) {
      const rate = median(rates.get(`${op}:${mode}`)!);
      report[op][mode] = { opsPerSec: Math.round(rate), vsOff: Math.round((rate / off) * 1000) / 1000 };
    }
    if (values.instructions) {
      for (const mode of modes) report[op][mode].instructionsPerOp = Math.round(await instructionsPerOp({ url, mode, op, count, warmup, src: values.src }));
      const offIns = report[op].off?.instructionsPerOp;
      if (offIns) for (const mode of modes) report[op][mode].instructionsVsOff = Math.round((report[op][mode].instructionsPerOp! / offIns) * 1000) / 1000;
    }
  }
  for (const op of ops) {
    for (const mode of modes) {
      const r = report[op][mode];
      console.log(`${op.padEnd(7)} ${mode.padEnd(11)} ${String(r.opsPerSec).padStart(7)} ops/s  ${r.vsOff.toFixed(3)} of off${r.instructionsPerOp !== undefined ? `  ${r.instructionsPerOp} instructions/op (${r.instructionsVsOff?.toFixed(3)} of off)` : ''}`);
    }
  }
  const { TransportURL } = await import('../src/core/transport-url.js');
  console.log(JSON.stringify({ bench: 'tidings-cost', url: TransportURL.parse(url).toString(), src: values.src ?? null, count, rounds, date: new Date().toISOString(), report }));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main(process.argv.slice(2));
  process.exit(0);
}
