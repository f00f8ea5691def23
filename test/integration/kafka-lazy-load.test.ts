// Which broker client libraries a process loads: each case runs tidings' sources in a child Node
// process (tsx) whose module.register() resolve hook logs every module resolved, so a static
// import of kafkajs (or of any driver's library) anywhere on the path of an unrelated transport shows.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '../../src/testing/wait.js';
import { SHORT_GROUP_QUERY, startKafkaMock, type KafkaTestBroker } from '../support/kafka-broker.js';
import { runProcess } from '../support/process.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SRC = new URL('../../src/', import.meta.url).href;

/** The broker client libraries a driver may load. */
const LIBRARIES = ['kafkajs', '@platformatic/kafka', 'amqplib', 'ioredis'];
/** What only tidings/nestjs loads (optional peers): never `tidings` itself. */
const NESTJS = ['@nestjs/common', '@nestjs/core', '@nestjs/microservices', 'rxjs', 'reflect-metadata'];

// Runs in the hooks thread: appends each resolution to the log file synchronously, so the log is
// complete when the child exits.
const HOOK = `
import { appendFileSync } from 'node:fs';
let log;
export function initialize(data) { log = data.log; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(log, JSON.stringify({ specifier, url: result.url }) + '\\n');
  return result;
}`;

// The child (ESM, run with tsx so the TypeScript sources load): registers the hook before the first
// import of tidings, runs one case, prints its outcome and the CommonJS modules in require.cache
// (a require() bypasses ESM resolve hooks) as its last line.
const CHILD = `
import { register, createRequire } from 'node:module';
const [log, src, scenario, url] = process.argv.slice(1);
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(HOOK)}), { data: { log } });
const { getNotificationListener, getNotificationTransport, Notifier, Target } = await import(src + 'index.ts');
const { waitFor } = await import(src + 'testing/wait.ts');
const topic = 't-' + process.pid + '-' + Date.now();
const transport = await getNotificationTransport(url);
let outcome;
if (scenario === 'refused') {
  outcome = await new Notifier(transport, { publisherId: 'p', driver: 'messagingv2', topics: [topic] }).info({}, 'ev', { id: 1 }).then(() => 'sent', (err) => err.name);
} else {
  const got = [];
  const listener = getNotificationListener(transport, [new Target({ topic })], [{ info: (_c, _p, _e, payload) => void got.push(payload.id) }]);
  await listener.start();
  await new Notifier(transport, { publisherId: 'p', driver: 'messagingv2', topics: [topic] }).info({}, 'ev', { id: 1 });
  await waitFor(() => got.length === 1, { timeoutMs: 20000, message: 'the notification came back' });
  await listener.stop();
  await listener.wait();
  outcome = 'received ' + got.join(',');
}
await transport.cleanup();
console.log(JSON.stringify({ outcome, required: Object.keys(createRequire(src + 'index.ts').cache) }));
`;

interface Loaded {
  /** What the case ended with: `received 1`, or the name of the error the send was refused with. */
  outcome: string;
  /** Packages under node_modules that were resolved or required. */
  packages: Set<string>;
  /** The bare specifiers (packages and their subpaths) the hook saw resolved, for failure messages. */
  specifiers: string[];
  /** The resolved URLs. */
  urls: string[];
}

/** The package of each `node_modules/<name>/` or `node_modules/@scope/<name>/` in a path or URL. */
function packagesIn(location: string): string[] {
  return [...location.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)\//g)].map((m) => m[1]);
}

/** Runs one case in a child process and reports what it loaded. */
async function runCase(scenario: 'roundtrip' | 'refused', url: string): Promise<Loaded> {
  const dir = mkdtempSync(join(tmpdir(), 'tidings-lazy-'));
  try {
    const log = join(dir, 'resolved.jsonl');
    const r = await runProcess(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD, log, SRC, scenario, url], { cwd: ROOT, timeoutMs: 60_000 });
    const last = r.stdout.trim().split('\n').at(-1) ?? '';
    if (r.code !== 0 || !last.startsWith('{')) throw new Error(`the child (${scenario} on ${url}) failed with code ${r.code}: ${r.stderr.slice(-2000)} ${r.stdout.slice(-500)}`);
    const { outcome, required } = JSON.parse(last) as { outcome: string; required: string[] };
    const resolved = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { specifier: string; url: string });
    const urls = resolved.map((e) => e.url);
    return { outcome, packages: new Set([...urls, ...required].flatMap(packagesIn)), specifiers: [...new Set(resolved.map((e) => e.specifier).filter((sp) => !/^(\.|\/|[a-z]+:)/.test(sp)))], urls };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('Kafka client libraries are loaded only when used', () => {
  let broker: KafkaTestBroker | undefined;
  beforeAll(async () => {
    broker = await startKafkaMock({ brokers: 1 });
  });
  afterAll(async () => {
    await broker?.stop();
  });
  const kafkaUrl = (query = '') => `${broker!.url}/?${SHORT_GROUP_QUERY}&consumer_group=${uniqueName('g')}${query}`;
  const loadedLibraries = (l: Loaded) => LIBRARIES.filter((p) => l.packages.has(p));

  it('a memory:// transport sending and receiving a notification loads none of the broker libraries, nor NestJS', async () => {
    const loaded = await runCase('roundtrip', 'memory:///lazy');
    expect(loaded.outcome).toBe('received 1');
    // The hook was in place before tidings was imported, and saw the memory driver loaded.
    expect(loaded.urls).toContain(`${SRC}index.ts`);
    expect(loaded.urls).toContain(`${SRC}drivers/memory/index.ts`);
    expect(loadedLibraries(loaded), `packages imported: ${loaded.specifiers.join(' ')}`).toEqual([]);
    expect(NESTJS.filter((p) => loaded.packages.has(p)), `packages imported: ${loaded.specifiers.join(' ')}`).toEqual([]);
  });

  it('a kafka:// transport with the default client loads kafkajs, and never @platformatic/kafka (nor amqplib, ioredis)', async () => {
    const loaded = await runCase('roundtrip', kafkaUrl());
    expect(loaded.outcome).toBe('received 1');
    expect(loaded.specifiers).toContain('kafkajs');
    expect(loadedLibraries(loaded), `packages imported: ${loaded.specifiers.join(' ')}`).toEqual(['kafkajs']);
  });

  it('a kafka:// transport with client=platformatic loads @platformatic/kafka, and never kafkajs (refused on the mock at first use)', async () => {
    const loaded = await runCase('refused', kafkaUrl('&client=platformatic'));
    // @platformatic/kafka needs Kafka 3.5+ APIs the mock lacks (see test/support/kafka-conformance.ts): the send was refused after loading it.
    expect(loaded.outcome).toBe('NotSupportedError');
    expect(loaded.specifiers).toContain('@platformatic/kafka');
    expect(loadedLibraries(loaded), `packages imported: ${loaded.specifiers.join(' ')}`).toEqual(['@platformatic/kafka']);
  });
});
