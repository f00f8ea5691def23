// Raw kafkajs access to the Kafka test broker for tests: what a test publishes around tidings
// (malformed records, oslo-format records) and reads behind its back (retry and dead-letter topics).
import { Kafka, logLevel, type Consumer, type IHeaders, type Producer } from 'kafkajs';
import { afterAll, beforeAll } from 'vitest';
import { silentLogger } from '../../src/core/logger.js';
import { fixKafkajsIdleLoop } from '../../src/drivers/kafka/client/kafkajs-idle-fix.js';
import { waitFor } from '../../src/testing/wait.js';
import { startKafkaMock, type KafkaTestBroker } from './kafka-broker.js';

/** A consumed record with its value and headers as strings. */
export interface RawKafkaRecord {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: string;
  headers: Record<string, string>;
}

/** One kafkajs client per broker list, with a lazily connected producer; `close()` disconnects all. */
export class RawKafka {
  readonly kafka: Kafka;
  private producer?: Promise<Producer>;
  private readonly consumers: Consumer[] = [];

  constructor(brokers: readonly string[]) {
    this.kafka = new Kafka({ brokers: [...brokers], clientId: 'tidings-test-raw', logLevel: logLevel.NOTHING, retry: { retries: 8, initialRetryTime: 100 } });
    // Idle connections of this helper would otherwise spin kafkajs 2.2's 1 ms timer loop on a shared test machine.
    fixKafkajsIdleLoop(this.kafka, silentLogger);
  }

  /** Produces records as given (acks all; to the partition named, else as kafkajs picks). */
  async publish(topic: string, records: Array<{ value: string; key?: string; partition?: number; headers?: IHeaders }>): Promise<void> {
    this.producer ??= (async () => {
      const p = this.kafka.producer({ allowAutoTopicCreation: true });
      await p.connect();
      return p;
    })();
    await (await this.producer).send({ topic, acks: -1, messages: records });
  }

  /** Reads `topic` from the beginning with a fresh group into the returned array. */
  async collect(topic: string, groupId: string): Promise<RawKafkaRecord[]> {
    const out: RawKafkaRecord[] = [];
    const c = this.kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10_000, maxWaitTimeInMs: 200 });
    this.consumers.push(c);
    let joined = false;
    c.on(c.events.GROUP_JOIN, () => (joined = true));
    await c.connect();
    await c.subscribe({ topic, fromBeginning: true });
    await c.run({
      eachMessage: async ({ topic: t, partition, message }) => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(message.headers ?? {})) if (v !== undefined) headers[k] = String(Array.isArray(v) ? v[0] : v);
        out.push({ topic: t, partition, offset: message.offset, key: message.key?.toString() ?? null, value: message.value?.toString() ?? '', headers });
      },
    });
    await waitFor(() => joined, { timeoutMs: 20_000, message: `raw consumer of ${topic} joined` });
    return out;
  }

  /** The offsets `groupId` committed on `topic`, summed over its partitions (a partition without a commit counts 0). */
  async committed(groupId: string, topic: string): Promise<number> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
      return (offsets?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
    } finally {
      await admin.disconnect();
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.consumers.map((c) => c.disconnect().catch(() => undefined)));
    await this.producer?.then((p) => p.disconnect()).catch(() => undefined);
  }
}

export { SHORT_GROUP_QUERY } from './kafka-broker.js';

/** A file's Kafka test broker (3 brokers) and raw client, started before its tests; `closers` run first, in reverse, after them. */
export interface KafkaMockFixture {
  readonly broker: KafkaTestBroker;
  readonly raw: RawKafka;
  readonly closers: Array<() => Promise<unknown>>;
}

/** Starts the mock cluster in beforeAll and stops everything in afterAll. */
export function useKafkaMock(): KafkaMockFixture {
  let broker: KafkaTestBroker | undefined;
  let raw: RawKafka | undefined;
  const closers: Array<() => Promise<unknown>> = [];
  beforeAll(async () => {
    broker = await startKafkaMock({ brokers: 3 });
    raw = new RawKafka(broker.brokers);
  });
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await raw?.close();
    await broker?.stop();
  });
  return {
    get broker() {
      if (!broker) throw new Error('the Kafka test broker is not started yet (use it inside a test)');
      return broker;
    },
    get raw() {
      if (!raw) throw new Error('the Kafka test broker is not started yet (use it inside a test)');
      return raw;
    },
    closers,
  };
}
