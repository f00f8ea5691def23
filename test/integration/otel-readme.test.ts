// README's minimal OpenTelemetry set-up, run as written in two processes over RabbitMQ: a client
// process calls a server process whose handler makes a nested call. With the set-up, one trace;
// without its context manager and propagator lines (a tracer provider alone), 5 separate traces.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { requireBuiltPackage } from '../support/examples.js';
import { codeBlocks } from '../support/markdown.js';
import { runProcess } from '../support/process.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));

/** The README block that sets OpenTelemetry up, exactly as printed. */
function readmeSetup(): string {
  const blocks = codeBlocks('README.md').filter((b) => b.code.startsWith('// tracing.ts'));
  expect(blocks, 'one "// tracing.ts" block in README.md').toHaveLength(1);
  return blocks[0]!.code;
}

const SERVER = `import './tracing.js';
import { getRpcClient, getRpcServer, getRpcTransport } from 'tidings';
const { URL, TOPIC } = process.env;
const rpc = await getRpcTransport(URL, { instrumentation: true });
const audit = getRpcClient(rpc, { topic: TOPIC + '-audit' }, { timeout: 20000 });
await getRpcServer(rpc, { topic: TOPIC + '-audit', server: 'a' }, [{ record: () => true }]).start();
await getRpcServer(rpc, { topic: TOPIC, server: 'a' }, [{ add: async (ctx, { a, b }) => { await audit.call(ctx, 'record', {}); return a + b; } }]).start();
console.log('server ready');
process.once('SIGTERM', () => void rpc.close().then(() => process.exit(0)));
`;

const CLIENT = `import './tracing.js';
import { trace } from '@opentelemetry/api';
import { getRpcClient, getRpcTransport } from 'tidings';
const { URL, TOPIC } = process.env;
const rpc = await getRpcTransport(URL, { instrumentation: true });
await trace.getTracer('app').startActiveSpan('checkout', async (span) => {
  console.log('sum', await getRpcClient(rpc, { topic: TOPIC }, { timeout: 20000 }).call({}, 'add', { a: 1, b: 2 }));
  span.end();
});
await rpc.cleanup();
`;

/** `traceId` and `name` of each span the ConsoleSpanExporter printed. */
function spansIn(stdout: string): Array<{ traceId: string; name: string }> {
  return [...stdout.matchAll(/traceId: '([0-9a-f]{32})',[\s\S]*?\n\s*name: '([^']*)'/g)].map((m) => ({ traceId: m[1]!, name: m[2]! }));
}

let work = '';

/** Runs the server, then the client, with `setup` as tracing.ts; returns the spans both printed. */
async function callAcrossProcesses(setup: string): Promise<Array<{ traceId: string; name: string }>> {
  const dir = mkdtempSync(join(work, 'run-'));
  writeFileSync(join(dir, 'tracing.ts'), setup);
  writeFileSync(join(dir, 'server.ts'), SERVER);
  writeFileSync(join(dir, 'client.ts'), CLIENT);
  const env = { ...process.env, URL: RABBIT_URL, TOPIC: uniqueName('t-otel-readme') };
  const server = spawn(process.execPath, [TSX, 'server.ts'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let serverOut = '';
  let serverErr = '';
  server.stdout.setEncoding('utf8').on('data', (d: string) => (serverOut += d));
  server.stderr.setEncoding('utf8').on('data', (d: string) => (serverErr += d));
  try {
    await waitFor(() => serverOut.includes('server ready'), { timeoutMs: 60_000, message: 'the server process ready' }).catch((err: Error) => {
      throw new Error(`${err.message}; its stderr: ${serverErr}`);
    });
    const client = await runProcess(process.execPath, [TSX, 'client.ts'], { cwd: dir, env, timeoutMs: 60_000 });
    expect(client.stderr).toBe('');
    expect(client.code).toBe(0);
    expect(client.stdout).toContain('sum 3');
    // The server's process spans end just after its replies go out.
    await waitFor(() => spansIn(serverOut).length >= 3, { timeoutMs: 20_000, message: 'the server process printing its 3 spans' }).catch((err: Error) => {
      throw new Error(`${err.message}; its stdout: ${serverOut}`);
    });
    return [...spansIn(client.stdout), ...spansIn(serverOut)];
  } finally {
    server.kill('SIGTERM');
  }
}

describe("README's OpenTelemetry set-up, across processes (RabbitMQ)", () => {
  beforeAll(async () => {
    await requireRabbitMQ();
    requireBuiltPackage();
    mkdirSync(join(ROOT, '.tmp'), { recursive: true });
    // Inside the repository: 'tidings' is the package's self-reference and @opentelemetry/* resolve.
    work = mkdtempSync(join(ROOT, '.tmp', 'otel-readme-'));
  });

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('gives one trace for a call with a nested call: checkout, call, process, nested call and process', async () => {
    const spans = await callAcrossProcesses(readmeSetup());
    expect(spans).toHaveLength(5);
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1);
    expect(spans.map((s) => s.name.split(' ')[0]).sort()).toEqual(['call', 'call', 'checkout', 'process', 'process']);
  }, 180_000);

  it('without its context manager and propagator lines, the same call gives 5 separate traces', async () => {
    const providerOnly = readmeSetup()
      .split('\n')
      .filter((line) => !/^(context\.setGlobalContextManager|propagation\.setGlobalPropagator)\(/.test(line))
      .join('\n');
    expect(providerOnly).not.toBe(readmeSetup());
    const spans = await callAcrossProcesses(providerOnly);
    expect(spans).toHaveLength(5);
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(5);
  }, 180_000);
});
