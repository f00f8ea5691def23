// Self-test of the Kafka test broker (test/support/kafka-broker.ts) with raw kafkajs, so the
// Kafka driver's tests stand on a broker known to do what they rely on.
import { spawn } from 'node:child_process';
import { Kafka, logLevel, type Consumer, type ConsumerConfig, type EachMessagePayload, type IHeaders, type Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { kafkaMockBinary, startKafkaMock, type KafkaTestBroker } from '../support/kafka-broker.js';

/** Group settings that keep the mock's rebalances short (it waits about sessionTimeout - 1 s). */
const SHORT_GROUP: Omit<ConsumerConfig, 'groupId'> = { sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10_000, maxWaitTimeInMs: 200 };

interface Received {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: string;
  headers: IHeaders;
}

describe('Kafka test broker (librdkafka mock cluster) with kafkajs', () => {
  let broker: KafkaTestBroker;
  let kafka: Kafka;
  const consumers: Consumer[] = [];
  const producers: Producer[] = [];

  const producer = async (idempotent = true): Promise<Producer> => {
    const p = kafka.producer({ idempotent, allowAutoTopicCreation: true });
    producers.push(p);
    await p.connect();
    return p;
  };

  /**
   * A running consumer collecting every message it is given; resolves once it has joined its group.
   * As tidings' kafkajs adapter does, a consumer that crashed without kafkajs restarting it (the
   * mock answers a SyncGroup that lost a race with two members joining at once with
   * INVALID_REQUEST) is run again; its crashes are named if it never joins.
   */
  const consumer = async (groupId: string, topic: string, sink: Received[]): Promise<{ consumer: Consumer; assigned: () => number[] }> => {
    const c = kafka.consumer({ groupId, ...SHORT_GROUP });
    consumers.push(c);
    let assignment: number[] = [];
    let joined = false;
    const crashes: string[] = [];
    const config = {
      eachMessage: async ({ topic: t, partition, message }: EachMessagePayload) => {
        sink.push({ topic: t, partition, offset: message.offset, key: message.key?.toString() ?? null, value: message.value?.toString() ?? '', headers: message.headers ?? {} });
      },
    };
    c.on(c.events.GROUP_JOIN, (e) => {
      assignment = e.payload.memberAssignment[topic] ?? [];
      joined = true;
    });
    c.on(c.events.CRASH, (e) => {
      crashes.push(`${String(e.payload.error)} (kafkajs restarts it: ${e.payload.restart})`);
      if (!e.payload.restart) setTimeout(() => void c.connect().then(() => c.run(config)).catch((err: unknown) => crashes.push(`restart failed: ${String(err)}`)), 1000).unref();
    });
    await c.connect();
    await c.subscribe({ topic, fromBeginning: true });
    await c.run(config);
    // A crash so far is the last error the timeout names.
    await waitFor(
      () => {
        if (!joined && crashes.length > 0) throw new Error(`crashed: ${crashes.join('; ')}`);
        return joined;
      },
      { timeoutMs: 20_000, message: `consumer of ${groupId} joined` },
    );
    return { consumer: c, assigned: () => assignment };
  };

  const values = (sink: Received[]) => sink.map((r) => r.value).sort();
  const range = (from: number, to: number, prefix: string) => Array.from({ length: to - from }, (_, i) => `${prefix}-${String(from + i).padStart(3, '0')}`).sort();

  beforeAll(async () => {
    broker = await startKafkaMock({
      brokers: 3,
      topics: [
        { name: 'tidings-selftest-4p', partitions: 4 },
        { name: 'tidings-selftest-1p', partitions: 1 },
      ],
    });
    kafka = new Kafka({ brokers: broker.brokers, clientId: 'tidings-kafka-selftest', logLevel: logLevel.NOTHING, retry: { retries: 8, initialRetryTime: 100 } });
  });

  afterAll(async () => {
    await Promise.all(consumers.map((c) => c.disconnect().catch(() => undefined)));
    await Promise.all(producers.map((p) => p.disconnect().catch(() => undefined)));
    await broker?.stop();
  });

  it('reports three loopback brokers, a kafka:// URL and a controller that is one of them', async () => {
    expect(broker.brokers).toHaveLength(3);
    for (const b of broker.brokers) expect(b).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(broker.url).toBe(`kafka://${broker.brokers.join(',')}`);
    const admin = kafka.admin();
    await admin.connect();
    try {
      const cluster = await admin.describeCluster();
      expect(cluster.brokers.map((b) => b.nodeId).sort()).toEqual([1, 2, 3]);
      // librdkafka's mock reports ControllerId 0 unless the launcher fixes it.
      expect(cluster.controller).toBe(1);
      const meta = await admin.fetchTopicMetadata({ topics: ['tidings-selftest-4p'] });
      expect(meta.topics[0].partitions).toHaveLength(4);
    } finally {
      await admin.disconnect();
    }
  });

  it('round-trips keys, values and headers through an idempotent producer and a consumer group', async () => {
    const topic = uniqueName('tidings-selftest');
    const p = await producer(true);
    await p.send({
      topic,
      acks: -1,
      messages: [
        { key: 'k1', value: 'v-1', headers: { 'x-one': 'a', 'x-bin': Buffer.from([0, 1, 2, 255]) } },
        { value: 'v-2' },
      ],
    });
    const sink: Received[] = [];
    await consumer(uniqueName('g'), topic, sink);
    await waitFor(() => sink.length === 2, { timeoutMs: 10_000, message: 'both records consumed' });
    const first = sink.find((r) => r.value === 'v-1')!;
    expect(first.key).toBe('k1');
    expect(first.headers['x-one']?.toString()).toBe('a');
    expect(Buffer.compare(first.headers['x-bin'] as Buffer, Buffer.from([0, 1, 2, 255]))).toBe(0);
    const second = sink.find((r) => r.value === 'v-2')!;
    expect(second.key).toBeNull();
    expect(second.headers).toEqual({});
  });

  it('gives every message to each of two consumer groups', async () => {
    const topic = 'tidings-selftest-4p';
    const prefix = uniqueName('m');
    const a: Received[] = [];
    const b: Received[] = [];
    await Promise.all([consumer(uniqueName('ga'), topic, a), consumer(uniqueName('gb'), topic, b)]);
    const p = await producer();
    await p.send({ topic, messages: range(0, 40, prefix).map((value, i) => ({ key: `k${i}`, value })) });
    const mine = (sink: Received[]) => values(sink.filter((r) => r.value.startsWith(prefix)));
    await waitFor(() => mine(a).length === 40 && mine(b).length === 40, { timeoutMs: 10_000, message: 'both groups got 40' });
    expect(mine(a)).toEqual(range(0, 40, prefix));
    expect(mine(b)).toEqual(range(0, 40, prefix));
  });

  it('splits the partitions between two members of one group, each message to one of them', async () => {
    const topic = uniqueName('tidings-selftest');
    const p = await producer();
    // Auto-creation on first produce gives 4 partitions.
    await p.send({ topic, messages: [{ key: 'warm', value: 'warm-up' }] });
    const group = uniqueName('g');
    const a: Received[] = [];
    const b: Received[] = [];
    const ma = await consumer(group, topic, a);
    const mb = await consumer(group, topic, b);
    // The first member's rejoin after the second joined completes the split.
    await waitFor(() => ma.assigned().length > 0 && mb.assigned().length > 0 && ma.assigned().length + mb.assigned().length === 4, {
      timeoutMs: 20_000,
      message: 'both members assigned',
    });
    expect([...ma.assigned(), ...mb.assigned()].sort()).toEqual([0, 1, 2, 3]);
    const prefix = uniqueName('m');
    await p.send({ topic, messages: range(0, 40, prefix).map((value, i) => ({ key: `k${i}`, value })) });
    const mine = (sink: Received[]) => sink.filter((r) => r.value.startsWith(prefix));
    await waitFor(() => mine(a).length + mine(b).length === 40, { timeoutMs: 10_000, message: '40 delivered across the group' });
    expect(values([...mine(a), ...mine(b)])).toEqual(range(0, 40, prefix));
    expect(mine(a).length).toBeGreaterThan(0);
    expect(mine(b).length).toBeGreaterThan(0);
    for (const r of mine(a)) expect(ma.assigned()).toContain(r.partition);
    for (const r of mine(b)) expect(mb.assigned()).toContain(r.partition);
  });

  it('resumes a group from its committed offsets with a new consumer', async () => {
    const topic = 'tidings-selftest-1p';
    const group = uniqueName('g');
    const prefix = uniqueName('m');
    const p = await producer();
    await p.send({ topic, messages: range(0, 10, prefix).map((value) => ({ value })) });
    const first: Received[] = [];
    const c1 = await consumer(group, topic, first);
    const mine = (sink: Received[]) => values(sink.filter((r) => r.value.startsWith(prefix)));
    // The 1-partition topic is shared with no other test of this file, so from the beginning means these 10.
    await waitFor(() => mine(first).length === 10, { timeoutMs: 10_000, message: 'first consumer got 10' });
    await c1.consumer.commitOffsets([{ topic, partition: 0, offset: String(Number(first.at(-1)!.offset) + 1) }]);
    await c1.consumer.disconnect();

    const admin = kafka.admin();
    await admin.connect();
    const committed = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    await admin.disconnect();
    expect(committed[0].partitions[0].offset).toBe(String(Number(first.at(-1)!.offset) + 1));

    await p.send({ topic, messages: range(10, 20, prefix).map((value) => ({ value })) });
    const second: Received[] = [];
    await consumer(group, topic, second);
    await waitFor(() => mine(second).length >= 10, { timeoutMs: 10_000, message: 'second consumer got the next 10' });
    expect(mine(second)).toEqual(range(10, 20, prefix));
  });

  it('comes back on the same ports after restart(), empty, and clients reconnect', async () => {
    const own = await startKafkaMock({ brokers: 1, topics: [{ name: 'tidings-selftest-restart', partitions: 1 }] });
    const client = new Kafka({ brokers: own.brokers, clientId: 'tidings-kafka-restart', logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 100 } });
    const p = client.producer({ idempotent: false });
    try {
      await p.connect();
      await p.send({ topic: 'tidings-selftest-restart', messages: [{ value: 'before' }] });
      const before = own.brokers;
      await own.restart();
      expect(own.brokers).toEqual(before);
      await p.send({ topic: 'tidings-selftest-restart', messages: [{ value: 'after' }] });
      const admin = client.admin();
      await admin.connect();
      const offsets = await admin.fetchTopicOffsets('tidings-selftest-restart');
      await admin.disconnect();
      // Only 'after' is there: the mock keeps nothing across a restart.
      expect(offsets[0].high).toBe('1');
    } finally {
      await p.disconnect().catch(() => undefined);
      await own.stop();
    }
  });

  it('with spreadLeaders leads every new topic round-robin over the brokers (2/1/1 for 4 partitions on 3), where the mock alone draws leaders at random', async () => {
    /** Auto-creates `count` topics on `k` and returns each one's leader per partition. */
    const layouts = async (k: Kafka, count: number): Promise<number[][]> => {
      const p = k.producer({ allowAutoTopicCreation: true });
      const admin = k.admin();
      await Promise.all([p.connect(), admin.connect()]);
      try {
        const out: number[][] = [];
        for (let i = 0; i < count; i++) {
          const topic = uniqueName('tidings-selftest-leaders');
          await p.send({ topic, messages: [{ value: 'x' }] });
          const meta = await admin.fetchTopicMetadata({ topics: [topic] });
          out.push([...meta.topics[0].partitions].sort((a, b) => a.partitionId - b.partitionId).map((x) => x.leader));
        }
        return out;
      } finally {
        await Promise.all([p.disconnect(), admin.disconnect()]);
      }
    };
    const perBroker = (leaders: number[]) => [1, 2, 3].map((id) => leaders.filter((l) => l === id).length).sort();

    const spread = await startKafkaMock({ brokers: 3, spreadLeaders: true, alwaysMock: true });
    try {
      const spreadKafka = new Kafka({ brokers: spread.brokers, clientId: 'tidings-kafka-selftest-spread', logLevel: logLevel.NOTHING, retry: { retries: 8, initialRetryTime: 100 } });
      for (const leaders of await layouts(spreadKafka, 8)) {
        expect(leaders).toHaveLength(4);
        expect(perBroker(leaders)).toEqual([1, 1, 2]);
      }
    } finally {
      await spread.stop();
    }
    // The suite's own mock (random leaders): 12 topics all led 2/1/1 by chance has odds of (36/81)^12, about 1 in 17 000.
    if (!broker.external) expect((await layouts(kafka, 12)).some((leaders) => perBroker(leaders).join() !== '1,1,2')).toBe(true);
  });

  it('exits when its stdin closes (an orphan never outlives its test process) and on SIGTERM', async () => {
    const bin = kafkaMockBinary();
    const viaStdin = spawn(bin, ['--brokers', '1'], { stdio: ['pipe', 'pipe', 'inherit'] });
    await new Promise((resolve) => viaStdin.stdout.once('data', resolve));
    const exitedOnEof = new Promise<number | null>((resolve) => viaStdin.once('exit', (code) => resolve(code)));
    viaStdin.stdin.end();
    expect(await exitedOnEof).toBe(0);

    const viaSignal = spawn(bin, ['--brokers', '1'], { stdio: ['pipe', 'pipe', 'inherit'] });
    await new Promise((resolve) => viaSignal.stdout.once('data', resolve));
    const exitedOnTerm = new Promise<number | null>((resolve) => viaSignal.once('exit', (code) => resolve(code)));
    viaSignal.kill('SIGTERM');
    expect(await exitedOnTerm).toBe(0);
  });
});
