// The runs of `npm run bench:scale` (bench/scale.ts), each measured in a process of its own so
// its memory figures start clean: N topics each with a server and a pooled listener (`topics`),
// a long run of notifications or calls sampled for growth (`soak`), and a backlog drained (`backlog`).
import {
  NotificationResult,
  Notifier,
  Target,
  TransportURL,
  getNotificationListener,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  type NotificationListener,
  type RpcClient,
  type RpcServer,
  type Transport,
} from '../src/index.js';
import { CONCURRENCY, Gate, PAYLOAD_TEXT, PUBLISH_WINDOW, keepInFlight, waitUntil } from './measure.js';
import { percentile } from './harness.js';
import { activeResources, brokerObjects, collectionSizes, countSocketWrites, memorySample, redisCommandCounts, round, type BrokerObjects, type MemorySample } from './scale-probes.js';

/** What every run is given: where to connect, the prefix every name of the run holds, and its sizes. */
export interface RunSpec {
  /** Credentials included: for connecting only, never printed. */
  url: string;
  prefix: string;
  /** Topics (`topics`), notifications or calls (`soak`), backlog messages (`backlog`). */
  size: number;
  /** `topics`: calls timed with every server alive. */
  calls: number;
  /** `topics`: how long the idle process is watched, ms. */
  idleMs: number;
}

const CALL_TIMEOUT_MS = 60_000;

// --- topics -------------------------------------------------------------------------------

/** One size of the `topics` mode. Per-item figures are the change divided by the topics. */
export interface TopicsRow {
  topics: number;
  /** Time to start every RPC server at once, then every pooled listener at once, ms. */
  serversStartMs: number;
  listenersStartMs: number;
  /** RSS and JS heap (after a full collection) added per server and per listener, KB. */
  rssKbPerServer: number;
  heapKbPerServer: number;
  rssKbPerListener: number;
  heapKbPerListener: number;
  /** Broker-side objects of the run (queues, keys, topics, groups) per server+listener pair. */
  brokerPerPair: Record<string, number>;
  /** Node's active timers and handles per pair, alive while idle. */
  timersPerPair: number;
  handlesPerPair: number;
  /** CPU of the idle process, % of one core, and its socket writes per second while idle. */
  idleCpuPct: number;
  idleWritesPerSec: number;
  /** Redis only: commands the server ran per second while the process idled (INFO commandstats; every client of the server). */
  idleBrokerCmdsPerSec?: number;
  /** Redis only: the same per command (`xreadgroup`, `evalsha`, ...), the commands scripts run included, most first. */
  idleBrokerCmdsByName?: Record<string, number>;
  /** Calls/s with every server alive, CONCURRENCY in flight, topic i mod N; latency p50/p99 ms. */
  callsPerSec: number;
  callP50Ms: number;
  callP99Ms: number;
  /** Time to stop and wait for every server and listener, ms. */
  stopMs: number;
  /** This process's CPU (user + system) while they stopped, ms: the rest of stopMs is waiting for the broker. */
  stopCpuMs?: number;
}

const per = (delta: number, n: number, digits = 1) => round(delta / n, digits);
const kbPer = (after: number, before: number, n: number) => per((after - before) * 1024, n);
const sumOf = (r: Record<string, number>, pick: (type: string) => boolean) => Object.entries(r).reduce((s, [t, n]) => (pick(t) ? s + n : s), 0);
const isTimer = (type: string) => type === 'Timeout' || type === 'Immediate';

export async function runTopics(spec: RunSpec): Promise<TopicsRow> {
  const n = spec.size;
  const url = TransportURL.parse(spec.url);
  const writes = countSocketWrites();
  const topic = (i: number) => `${spec.prefix}-t${i}`;
  const serverTransport = await getRpcTransport(spec.url);
  const notifyTransport = await getNotificationTransport(spec.url);
  const clientTransport = await getRpcTransport(spec.url);
  const servers: RpcServer[] = [];
  const listeners: NotificationListener[] = [];
  let stopped = false;
  try {
    const objects0 = await brokerObjects(url, spec.url, spec.prefix);
    const resources0 = activeResources();
    const mem0 = memorySample();
    for (let i = 0; i < n; i++) servers.push(getRpcServer(serverTransport, new Target({ topic: topic(i), server: 'scale' }), [{ echo: (_c: unknown, args: unknown) => args }], {}));
    let t = performance.now();
    await Promise.all(servers.map((s) => s.start()));
    const serversStartMs = performance.now() - t;
    const mem1 = memorySample();
    for (let i = 0; i < n; i++) {
      listeners.push(getNotificationListener(notifyTransport, [new Target({ topic: topic(i) })], [{ info: () => NotificationResult.HANDLED }], { pool: `${spec.prefix}-p${i}` }));
    }
    t = performance.now();
    await Promise.all(listeners.map((l) => l.start()));
    const listenersStartMs = performance.now() - t;
    const mem2 = memorySample();
    const objects1 = await brokerObjects(url, spec.url, spec.prefix);

    // Idle: after a second to settle (joins, first fetches), what the process does with nothing to do.
    await sleep(1000);
    const resources = activeResources();
    const cpu0 = process.cpuUsage();
    const writes0 = writes();
    const cmds0 = url.driver === 'redis' ? await redisCommandCounts(spec.url) : {};
    const idle0 = performance.now();
    await sleep(spec.idleMs);
    const idleMs = performance.now() - idle0;
    const cpu = process.cpuUsage(cpu0);
    const idleWrites = writes() - writes0;
    // The INFOs themselves are left out by name; the probe's connection adds a command or two.
    const cmds1 = url.driver === 'redis' ? await redisCommandCounts(spec.url) : undefined;
    const idleCmds = cmds1 && Object.fromEntries(Object.entries(cmds1).map(([k, v]) => [k, round(((v - (cmds0[k] ?? 0)) / idleMs) * 1000, 1)] as const).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]));
    const cmds = idleCmds && Object.values(idleCmds).reduce((a, b) => a + b, 0);

    // Every server answers once (untimed), then calls are spread over all of them.
    const clients = Array.from({ length: n }, (_, i) => getRpcClient(clientTransport, { topic: topic(i), server: 'scale' }, { timeout: CALL_TIMEOUT_MS }));
    const call = (c: RpcClient, i: number) => c.call({}, 'echo', { i, text: PAYLOAD_TEXT });
    await keepInFlight(n, CONCURRENCY, () => true, (i) => call(clients[i], i));
    const latencies: number[] = [];
    t = performance.now();
    await keepInFlight(spec.calls, CONCURRENCY, () => true, async (i) => {
      const t0 = performance.now();
      await call(clients[i % n], i);
      latencies.push(performance.now() - t0);
    });
    const callsMs = performance.now() - t;

    t = performance.now();
    const stopCpu0 = process.cpuUsage();
    stopped = true;
    await stopAll(servers, listeners);
    const stopMs = performance.now() - t;
    const stopCpu = process.cpuUsage(stopCpu0);
    return {
      topics: n,
      serversStartMs: round(serversStartMs, 1),
      listenersStartMs: round(listenersStartMs, 1),
      rssKbPerServer: kbPer(mem1.rssMb, mem0.rssMb, n),
      heapKbPerServer: kbPer(mem1.heapMb, mem0.heapMb, n),
      rssKbPerListener: kbPer(mem2.rssMb, mem1.rssMb, n),
      heapKbPerListener: kbPer(mem2.heapMb, mem1.heapMb, n),
      brokerPerPair: Object.fromEntries(Object.entries(objects1).map(([k, v]) => [k, per(v - (objects0[k] ?? 0), n, 2)])),
      timersPerPair: per(sumOf(resources, isTimer) - sumOf(resources0, isTimer), n, 2),
      handlesPerPair: per(sumOf(resources, (x) => !isTimer(x)) - sumOf(resources0, (x) => !isTimer(x)), n, 2),
      idleCpuPct: round(((cpu.user + cpu.system) / 1000 / idleMs) * 100, 2),
      idleWritesPerSec: round((idleWrites / idleMs) * 1000, 1),
      ...(cmds !== undefined ? { idleBrokerCmdsPerSec: round(cmds, 1), idleBrokerCmdsByName: idleCmds } : {}),
      callsPerSec: Math.round((spec.calls / callsMs) * 1000),
      callP50Ms: round(percentile(latencies, 50), 3),
      callP99Ms: round(percentile(latencies, 99), 3),
      stopMs: round(stopMs, 1),
      stopCpuMs: round((stopCpu.user + stopCpu.system) / 1000, 1),
    };
  } finally {
    // After a failure: stop what started, leaving the failure to be reported (a transport's cleanup closes the rest).
    if (!stopped) await Promise.allSettled([...servers, ...listeners].map((x) => x.stop()));
    await Promise.all([serverTransport.cleanup(), notifyTransport.cleanup(), clientTransport.cleanup()]);
  }
}

async function stopAll(servers: readonly RpcServer[], listeners: readonly NotificationListener[]): Promise<void> {
  await Promise.all([...servers.map((s) => s.stop()), ...listeners.map((l) => l.stop())]);
  await Promise.all([...servers.map((s) => s.wait()), ...listeners.map((l) => l.wait())]);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// --- soak ---------------------------------------------------------------------------------

/** One sample of a soak run, taken after `done` operations completed. */
export interface SoakSample extends MemorySample {
  done: number;
  timers: number;
  handles: number;
  /** Calls waiting for a reply on every transport of the run (BaseDriver's pending-reply maps). */
  pendingReplies: number;
}

export interface SoakResult {
  kind: 'notifications' | 'calls';
  count: number;
  elapsedMs: number;
  perSec: number;
  samples: SoakSample[];
  /** The sample the warm-up ends at (the first at or past 10% of the run). */
  warmIndex: number;
  /** Highest RSS and heap of the run's last quarter against the highest of the quarter after the warm-up (10-35%), %. */
  rssGrowthPct: number;
  heapGrowthPct: number;
  /** Active timers and handles at the end less at the warm-up's end. */
  timersGrowth: number;
  handlesGrowth: number;
  /**
   * Maps, sets and arrays reachable from the run's transports, servers and listeners whose
   * highest size in the last quarter passed their highest in the quarter after the warm-up by
   * more than COLLECTION_SLACK entries and 10% (path: [early highest, late highest]).
   */
  grownCollections: Record<string, [number, number]>;
  /** Collections watched (paths). */
  watchedCollections: number;
}

/** Samples taken over a soak run. */
const SAMPLES = 40;
/** Notifications published ahead of those consumed at most, so the broker holds no growing backlog. */
const AHEAD = 2_000;
/** A collection "grew" when it ended above its warm-up size by more than this many entries and 10%. */
const COLLECTION_SLACK = 32;

export async function runSoak(spec: RunSpec, kind: 'notifications' | 'calls'): Promise<SoakResult> {
  return kind === 'calls' ? soakCalls(spec) : soakNotifications(spec);
}

/**
 * Takes samples of a run of `count` operations: memory, timers, handles, pending replies, and the
 * sizes of the collections reachable from `roots`, of which it keeps only each path's highest in
 * the quarter after the warm-up (10-35% of the run) and in the last quarter, and the latest
 * (keeping every sample's would grow the heap it measures).
 */
function sampler(count: number, roots: () => Record<string, unknown>, transports: readonly Transport[]) {
  const samples: SoakSample[] = [];
  const collections: { early: Record<string, number>; late: Record<string, number>; last?: Record<string, number> } = { early: {}, late: {} };
  const pending = () => transports.reduce((s, t) => s + pendingCalls(t), 0);
  const keepMax = (into: Record<string, number>, sizes: Record<string, number>) => {
    for (const [path, n] of Object.entries(sizes)) into[path] = Math.max(into[path] ?? 0, n);
  };
  return {
    samples,
    collections,
    take(done: number) {
      const r = activeResources();
      samples.push({ done, ...memorySample(), timers: sumOf(r, isTimer), handles: sumOf(r, (x) => !isTimer(x)), pendingReplies: pending() });
      const sizes = collectionSizes(roots());
      if (done >= count / 10 && done <= count * 0.35) keepMax(collections.early, sizes);
      if (done >= count * 0.75) keepMax(collections.late, sizes);
      collections.last = sizes;
    },
  };
}

/** BaseDriver's map of calls waiting for replies (private: the bench reads it by name). */
function pendingCalls(t: Transport): number {
  const replies = (t.driver as unknown as { pendingReplies?: { size?: number } }).pendingReplies;
  return typeof replies?.size === 'number' ? replies.size : 0;
}

function verdict(kind: SoakResult['kind'], count: number, elapsedMs: number, s: ReturnType<typeof sampler>): SoakResult {
  const { samples, collections } = s;
  const warmIndex = Math.max(0, samples.findIndex((x) => x.done >= count / 10));
  const warm = samples[warmIndex];
  const last = samples[samples.length - 1];
  // Samples swing with what is in flight at the moment they are taken: compare the highest of
  // the run's last quarter with the highest of the quarter right after the warm-up.
  const early = samples.filter((x) => x.done >= count / 10 && x.done <= count * 0.35);
  const late = samples.filter((x) => x.done >= count * 0.75);
  const growth = (pick: (x: SoakSample) => number) => {
    const from = Math.max(...(early.length ? early : [warm]).map(pick));
    return round(((Math.max(...(late.length ? late : [last]).map(pick)) - from) / from) * 100, 1);
  };
  const grownCollections: Record<string, [number, number]> = {};
  for (const [path, size] of Object.entries(collections.late)) {
    const before = collections.early[path] ?? 0;
    if (size - before > COLLECTION_SLACK && size > before * 1.1) grownCollections[path] = [before, size];
  }
  return {
    kind,
    count,
    elapsedMs: round(elapsedMs, 0),
    perSec: Math.round((count / elapsedMs) * 1000),
    samples,
    warmIndex,
    rssGrowthPct: growth((x) => x.rssMb),
    heapGrowthPct: growth((x) => x.heapMb),
    timersGrowth: last.timers - warm.timers,
    handlesGrowth: last.handles - warm.handles,
    grownCollections,
    watchedCollections: Object.keys(collections.last ?? {}).length,
  };
}

async function soakCalls(spec: RunSpec): Promise<SoakResult> {
  const serverTransport = await getRpcTransport(spec.url);
  const clientTransport = await getRpcTransport(spec.url);
  const topic = `${spec.prefix}-soak`;
  const server = getRpcServer(serverTransport, new Target({ topic, server: 'scale' }), [{ echo: (_c: unknown, args: unknown) => args }], {});
  await server.start();
  const client = getRpcClient(clientTransport, { topic }, { timeout: CALL_TIMEOUT_MS });
  const s = sampler(spec.size, () => ({ serverTransport: serverTransport.driver, clientTransport: clientTransport.driver, server, client }), [serverTransport, clientTransport]);
  const every = Math.max(1, Math.floor(spec.size / SAMPLES));
  try {
    let done = 0;
    const t0 = performance.now();
    await keepInFlight(spec.size, CONCURRENCY, () => true, async (i) => {
      await client.call({}, 'echo', { i, text: PAYLOAD_TEXT });
      if (++done % every === 0) s.take(done);
    });
    const elapsed = performance.now() - t0;
    return verdict('calls', spec.size, elapsed, s);
  } finally {
    await server.stop();
    await server.wait();
    await Promise.all([serverTransport.cleanup(), clientTransport.cleanup()]);
  }
}

/**
 * Notifications through a pooled listener, published while it consumes and never more than
 * AHEAD ahead of it. On a broker that keeps notifications for absent listeners (every one but
 * Kafka, whose log is retention-bound anyway), the notifier's own default `<topic>.info` queue
 * fills too: a plain listener drains it beside the pool, so no backlog grows anywhere.
 */
async function soakNotifications(spec: RunSpec): Promise<SoakResult> {
  const transport = await getNotificationTransport(spec.url);
  const topic = `${spec.prefix}-soak`;
  const notifier = new Notifier(transport, { publisherId: 'scale', driver: 'messagingv2', topics: [topic] });
  let consumed = 0;
  let waiting: Array<() => void> = [];
  // Sampled as the listener consumes (the publisher may be up to AHEAD in front).
  const s = sampler(spec.size, () => ({ transport: transport.driver, listener, sink, notifier }), [transport]);
  const every = Math.max(1, Math.floor(spec.size / SAMPLES));
  const listener = getNotificationListener(transport, [new Target({ topic })], [{
    info: () => {
      if (++consumed % every === 0) s.take(consumed);
      if (waiting.length > 0) {
        const wake = waiting;
        waiting = [];
        for (const w of wake) w();
      }
      return NotificationResult.HANDLED;
    },
  }], { pool: `${spec.prefix}-pool` });
  const sink = transport.driver.capabilities.durableNotifications && TransportURL.parse(spec.url).driver !== 'kafka'
    ? getNotificationListener(transport, [new Target({ topic })], [{ info: () => NotificationResult.HANDLED }])
    : undefined;
  await Promise.all([listener.start(), sink?.start()]);
  try {
    const t0 = performance.now();
    await keepInFlight(spec.size, PUBLISH_WINDOW, () => true, async (i) => {
      while (i - consumed > AHEAD) await new Promise<void>((r) => waiting.push(r));
      await notifier.info({}, 'scale.event', { i, text: PAYLOAD_TEXT });
    });
    await waitUntil(() => consumed >= spec.size, 'soak notifications consumed', 600_000);
    const elapsed = performance.now() - t0;
    return verdict('notifications', spec.size, elapsed, s);
  } finally {
    await Promise.all([listener.stop(), sink?.stop()]);
    await Promise.all([listener.wait(), sink?.wait()]);
    await transport.cleanup();
  }
}

// --- backlog ------------------------------------------------------------------------------

export interface BacklogResult {
  messages: number;
  /** Kafka: the backlog topic's partitions (created so the mock keeps every record). */
  partitions?: number;
  /** Publishing the backlog while the listener's handler waited at a gate, ms. */
  publishMs: number;
  /** From the gate opening until the last notification was handled, ms, and the rate. */
  drainMs: number;
  drainPerSec: number;
  /** RSS and heap (after a collection) before publishing and with the backlog published, MB. */
  before: MemorySample;
  loaded: MemorySample;
  /** Highest RSS and heap seen while draining (every 10 ms, no collection), MB. */
  peakRssMb: number;
  peakHeapMb: number;
  /** After the drain, after a collection, MB. */
  after: MemorySample;
  /** Broker-side objects of the run once drained. */
  brokerObjects: BrokerObjects;
}

/**
 * A backlog of `size` notifications drained by one listener on the topic's shared queue: its
 * handler waits at a gate while they are published (so the broker holds them, or for a consumer
 * with a prefetch window, all but that window), then the gate opens and the drain is timed.
 */
/** The topic of a backlog run. */
export const backlogTopic = (prefix: string) => `${prefix}-backlog`;

/**
 * Partitions of a Kafka backlog run's `<topic>.info`, created before the run: librdkafka's mock
 * keeps at most 5 MB of records per partition and drops the oldest beyond it (rdkafka_mock.c
 * `max_size`), and auto-creates topics with 4, which hold about 30,000 of these notifications.
 * 6,000 per partition stay under it.
 */
export const kafkaBacklogPartitions = (messages: number) => Math.max(4, Math.ceil(messages / 6_000));

/**
 * Kafka backlog notifications published at once. The mock answers a fetch with one produced record
 * batch per partition (bench/README.md, Kafka sections), and the driver puts the records sent in
 * one event-loop turn into one produce request: 16 in flight over 17 partitions would leave about
 * one record per batch, and the drain would time the mock's fetches, not the listener.
 */
const KAFKA_BACKLOG_WINDOW = 1_024;

export async function runBacklog(spec: RunSpec): Promise<BacklogResult> {
  const url = TransportURL.parse(spec.url);
  const transport = await getNotificationTransport(spec.url);
  const topic = backlogTopic(spec.prefix);
  // Created by the parent (bench/scale.ts) with this many partitions.
  const partitions = url.driver === 'kafka' ? kafkaBacklogPartitions(spec.size) : undefined;
  const notifier = new Notifier(transport, { publisherId: 'scale', driver: 'messagingv2', topics: [topic] });
  const gate = new Gate();
  let consumed = 0;
  const handled = () => {
    consumed++;
    return NotificationResult.HANDLED;
  };
  const listener = getNotificationListener(transport, [new Target({ topic })], [{ info: () => (gate.isOpen ? handled() : gate.wait().then(handled)) }]);
  await listener.start();
  try {
    // One notification through first, so the listener is known to be reading (a Kafka group has joined).
    await notifier.info({}, 'scale.event', { i: -1, text: PAYLOAD_TEXT });
    await waitUntil(() => consumed >= 1, 'first notification', 120_000);
    consumed = 0;
    gate.close();
    const before = memorySample();
    let t = performance.now();
    await keepInFlight(spec.size, partitions !== undefined ? KAFKA_BACKLOG_WINDOW : PUBLISH_WINDOW, () => true, (i) => notifier.info({}, 'scale.event', { i, text: PAYLOAD_TEXT }));
    const publishMs = performance.now() - t;
    const loaded = memorySample();
    let peakRss = 0;
    let peakHeap = 0;
    const watch = () => {
      const m = process.memoryUsage();
      peakRss = Math.max(peakRss, m.rss);
      peakHeap = Math.max(peakHeap, m.heapUsed);
    };
    const timer = setInterval(watch, 10);
    t = performance.now();
    gate.open();
    await waitUntil(() => consumed >= spec.size, 'backlog drained', 600_000);
    const drainMs = performance.now() - t;
    clearInterval(timer);
    watch();
    const MB = 1024 * 1024;
    return {
      messages: spec.size,
      ...(partitions !== undefined ? { partitions } : {}),
      publishMs: round(publishMs, 0),
      drainMs: round(drainMs, 0),
      drainPerSec: Math.round((spec.size / drainMs) * 1000),
      before,
      loaded,
      peakRssMb: round(peakRss / MB, 1),
      peakHeapMb: round(peakHeap / MB, 1),
      after: memorySample(),
      brokerObjects: await brokerObjects(url, spec.url, spec.prefix),
    };
  } finally {
    gate.open();
    await listener.stop();
    await listener.wait();
    await transport.cleanup();
  }
}
