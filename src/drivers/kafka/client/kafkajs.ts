// The kafkajs adapter (the default client): one Kafka instance per transport, a lazy idempotent
// producer and admin, and one kafkajs consumer per listener with eachBatch and manual commits.
// Its Kafka instance's connections do not run kafkajs 2.2's idle timer loop (kafkajs-idle-fix.ts).
import {
  AssignerProtocol,
  CompressionTypes,
  Kafka,
  logLevel,
  type Admin,
  type Batch,
  type Consumer,
  type ConsumerRunConfig,
  type KafkaConfig,
  type PartitionAssigner,
  type Producer,
  type SASLOptions,
} from 'kafkajs';
import { ConnectionError, InvalidArgument } from '../../../core/errors.js';
import type { Logger } from '../../../core/logger.js';
import type { Assignment, ConsumerHandlers, ConsumerSettings, IncomingRecord, KafkaClientAdapter, KafkaConsumerHandle, KafkaReaderHandle, OutgoingRecord, CommitOffset, ReaderSettings } from './adapter.js';
import { partitionKey, partitionLag } from './adapter.js';
import { isUnsupportedApi, toMessagingError } from '../errors.js';
import { fixKafkajsIdleLoop } from './kafkajs-idle-fix.js';
import { coverConsumerStop } from './kafkajs-stop-fix.js';
import { startReader } from './kafkajs-reader.js';
import { tlsOptionsOf } from './tls.js';
import type { ResolvedKafkaOptions } from '../options.js';
import { PARTITION_ASSIGNER, readerGroup } from '../topology.js';

const ACKS = { all: -1, leader: 1, none: 0 } as const;

/** The adapter module's factory (see index.ts). */
export function createClient(options: ResolvedKafkaOptions, logger: Logger, clientId: string): KafkaClientAdapter {
  return new KafkajsClient(options, logger, clientId);
}

/**
 * kafkajs's own assigners hand a member partitions of topics it never subscribed to when the
 * members of one group subscribe to different topics (oslo's shared `oslo_messaging_consumer`
 * group does exactly that), and then drop them: those partitions are read by nobody. This one
 * spreads each topic's partitions round-robin over the members subscribed to it only (and
 * assigns the topics only other members subscribed to, which kafkajs's leader leaves out).
 */
const subscriptionAwareAssigner: PartitionAssigner = ({ cluster }) => ({
  name: PARTITION_ASSIGNER,
  version: 0,
  async assign({ members, topics: leaderTopics }) {
    const subscribed = new Map<string, Set<string>>();
    for (const m of members) subscribed.set(m.memberId, new Set(AssignerProtocol.MemberMetadata.decode(m.memberMetadata)?.topics ?? leaderTopics));
    // kafkajs passes the leader's own subscriptions only; the group's are the union of its members'.
    const topics = [...new Set([...subscribed.values()].flatMap((t) => [...t]))];
    await cluster.addMultipleTargetTopics(topics);
    const ids = members.map((m) => m.memberId).sort();
    const plan = new Map<string, Record<string, number[]>>(ids.map((id) => [id, {}]));
    let turn = 0;
    for (const topic of [...topics].sort()) {
      const candidates = ids.filter((id) => subscribed.get(id)!.has(topic));
      if (candidates.length === 0) continue;
      const partitions = cluster.findTopicPartitionMetadata(topic).map((p) => p.partitionId).sort((a, b) => a - b);
      for (const partition of partitions) {
        const owner = plan.get(candidates[turn++ % candidates.length])!;
        (owner[topic] ??= []).push(partition);
      }
    }
    return ids.map((memberId) => ({ memberId, memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment: plan.get(memberId)!, userData: Buffer.alloc(0) }) }));
  },
  protocol({ topics }) {
    return { name: PARTITION_ASSIGNER, metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.alloc(0) }) };
  },
});

class KafkajsClient implements KafkaClientAdapter {
  readonly name = 'kafkajs';
  private readonly kafka: Kafka;
  private producer?: Promise<Producer>;
  private admin?: Promise<Admin>;
  private readonly known = new Set<string>();
  private createTopicsUnsupported = false;
  private readonly compression: CompressionTypes;
  private readonly idempotent: boolean;

  constructor(
    private readonly options: ResolvedKafkaOptions,
    private readonly logger: Logger,
    clientId: string,
  ) {
    // kafkajs ships gzip only; the other codecs need a codec package registered by the application.
    if (options.compression !== 'none' && options.compression !== 'gzip') {
      throw new InvalidArgument('compression', '"none" or "gzip" with client=kafkajs (or client=platformatic for snappy, lz4, zstd)', options.compression);
    }
    this.compression = options.compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None;
    this.idempotent = options.idempotent && options.acks === 'all';
    const config: KafkaConfig = {
      clientId,
      brokers: [...options.brokers],
      connectionTimeout: options.connectTimeout,
      requestTimeout: options.requestTimeout,
      retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 5000 },
      logLevel: logLevel.WARN,
      // kafkajs logs rebalances and reconnects as errors; they are expected here.
      logCreator: () => (entry) => this.logger.debug('kafkajs', { namespace: entry.namespace, message: entry.log.message, level: entry.level }),
    };
    const tls = tlsOptionsOf(options);
    if (tls) config.ssl = tls;
    if (options.securityProtocol.startsWith('SASL')) {
      const mechanism = options.saslMechanism.toLowerCase() as 'plain' | 'scram-sha-256' | 'scram-sha-512';
      config.sasl = { mechanism, username: options.username ?? '', password: options.password ?? '' } as SASLOptions;
    }
    this.kafka = new Kafka(config);
    fixKafkajsIdleLoop(this.kafka, logger);
  }

  async send(records: readonly OutgoingRecord[]): Promise<void> {
    const producer = await this.getProducer();
    const byTopic = new Map<string, { key?: string; value: string; headers?: Record<string, string> }[]>();
    for (const r of records) {
      let list = byTopic.get(r.topic);
      if (!list) byTopic.set(r.topic, (list = []));
      list.push({ key: r.key, value: r.value, headers: r.headers as Record<string, string> | undefined });
    }
    try {
      await producer.sendBatch({ acks: ACKS[this.options.acks], compression: this.compression, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) });
    } catch (err) {
      throw toMessagingError(err, `Could not produce ${records.length} record(s) to ${[...byTopic.keys()].join(', ')}`);
    }
  }

  async ensureTopics(topics: readonly string[]): Promise<void> {
    const missing = topics.filter((t) => !this.known.has(t));
    if (missing.length === 0) return;
    const admin = await this.getAdmin();
    try {
      if (!this.createTopicsUnsupported) {
        try {
          await admin.createTopics({ topics: missing.map((topic) => ({ topic })), waitForLeaders: true });
        } catch (err) {
          if (!isUnsupportedApi(err)) throw err;
          this.createTopicsUnsupported = true;
          this.logger.debug('The broker has no CreateTopics; topics are auto-created on first use', { topics: missing });
        }
      }
      // A metadata request with auto-creation allowed creates what CreateTopics could not.
      await admin.fetchTopicMetadata({ topics: [...missing] });
    } catch (err) {
      throw toMessagingError(err, `Could not create the topics ${missing.join(', ')}`);
    }
    for (const t of missing) this.known.add(t);
  }

  groupLag(groupId: string, topics: readonly string[]): Promise<Map<string, number>> {
    return this.offsetsBehind(groupId, topics, false);
  }

  groupBacklog(groupId: string, topics: readonly string[]): Promise<Map<string, number>> {
    return this.offsetsBehind(groupId, topics, true);
  }

  async listTopics(): Promise<string[]> {
    const admin = await this.getAdmin();
    try {
      return await admin.listTopics();
    } catch (err) {
      throw toMessagingError(err, 'Could not list the topics');
    }
  }

  /** groupLag, or with `committedOnly` only the topics where the group committed an offset. */
  private async offsetsBehind(groupId: string, topics: readonly string[], committedOnly: boolean): Promise<Map<string, number>> {
    const admin = await this.getAdmin();
    const lag = new Map<string, number>();
    try {
      const existing = new Set(await admin.listTopics());
      const present = topics.filter((t) => existing.has(t));
      if (present.length === 0) return lag;
      const committed = await admin.fetchOffsets({ groupId, topics: present });
      for (const topic of present) {
        const positions = new Map(committed.find((c) => c.topic === topic)?.partitions.map((p) => [p.partition, BigInt(p.offset)]));
        if (committedOnly && ![...positions.values()].some((o) => o >= 0n)) continue;
        let sum = 0;
        for (const o of await admin.fetchTopicOffsets(topic)) sum += partitionLag(BigInt(o.low), BigInt(o.high), positions.get(o.partition));
        lag.set(topic, sum);
      }
    } catch (err) {
      throw toMessagingError(err, `Could not read the offsets of group ${groupId}`);
    }
    return lag;
  }

  async committedOffsets(groupId: string, partitions: Assignment): Promise<Map<string, number>> {
    const admin = await this.getAdmin();
    const out = new Map<string, number>();
    try {
      for (const { topic, partitions: committed } of await admin.fetchOffsets({ groupId, topics: [...partitions.keys()] })) {
        const wanted = new Set(partitions.get(topic));
        for (const p of committed) {
          const offset = Number(p.offset);
          if (wanted.has(p.partition) && offset >= 0) out.set(partitionKey(topic, p.partition), offset);
        }
      }
    } catch (err) {
      throw toMessagingError(err, `Could not read the committed offsets of group ${groupId}`);
    }
    return out;
  }

  async readTopic(topic: string): Promise<IncomingRecord[]> {
    const admin = await this.getAdmin();
    let ends: Map<number, bigint>;
    try {
      const existing = await admin.listTopics();
      if (!existing.includes(topic)) return [];
      const offsets = await admin.fetchTopicOffsets(topic);
      ends = new Map(offsets.filter((o) => BigInt(o.high) > BigInt(o.low)).map((o) => [o.partition, BigInt(o.high)]));
    } catch (err) {
      throw toMessagingError(err, `Could not read the offsets of ${topic}`);
    }
    if (ends.size === 0) return [];
    // kafkajs reads only as a group member: a throwaway group that never commits (Kafka drops
    // a group without offsets once it is empty).
    const consumer = this.kafka.consumer({ groupId: readerGroup(), maxWaitTimeInMs: 100, maxBytesPerPartition: this.options.maxFetchBytes });
    const out: IncomingRecord[] = [];
    const remaining = new Set(ends.keys());
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    let timer: NodeJS.Timeout | undefined;
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [topic], fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          const end = ends.get(batch.partition);
          if (end === undefined) return;
          for (const r of recordsOf(batch)) if (BigInt(r.offset) < end) out.push(r);
          if (BigInt(batch.lastOffset()) + 1n >= end) {
            remaining.delete(batch.partition);
            if (remaining.size === 0) done();
          }
        },
      });
      const deadline = this.options.connectTimeout + this.options.rebalanceTimeout;
      await Promise.race([finished, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new ConnectionError(`Reading ${topic} did not finish within ${deadline} ms`)), deadline)))]);
    } catch (err) {
      throw toMessagingError(err, `Could not read ${topic}`);
    } finally {
      clearTimeout(timer);
      await consumer.disconnect().catch(() => undefined);
    }
    return out.sort((a, b) => a.partition - b.partition || (BigInt(a.offset) < BigInt(b.offset) ? -1 : 1));
  }

  async consume(settings: ConsumerSettings, handlers: ConsumerHandlers): Promise<KafkaConsumerHandle> {
    const o = this.options;
    coverConsumerStop(settings.groupId, this.logger);
    const consumer = this.kafka.consumer({
      groupId: settings.groupId,
      sessionTimeout: o.sessionTimeout,
      heartbeatInterval: o.heartbeatInterval,
      rebalanceTimeout: o.rebalanceTimeout,
      maxWaitTimeInMs: settings.maxWaitTime ?? o.maxWaitTime,
      maxBytesPerPartition: o.maxFetchBytes,
      allowAutoTopicCreation: true,
      partitionAssigners: [subscriptionAwareAssigner],
      retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 5000 },
    });
    let joined!: () => void;
    const firstJoin = new Promise<void>((resolve) => (joined = resolve));
    let assigned: Record<string, number[]> = {};
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      assigned = e.payload.memberAssignment;
      const assignment: Map<string, readonly number[]> = new Map(Object.entries(e.payload.memberAssignment));
      handlers.onAssignment(assignment as Assignment);
      joined();
    });
    consumer.on(consumer.events.REBALANCING, () => handlers.onRebalance());
    const handle = new KafkajsConsumer(consumer, settings.topics, o.shutdownTimeout, this.logger);
    // kafkajs restarts a consumer after retriable errors only; after any other (the mock answers
    // a SyncGroup that lost a race with INVALID_REQUEST) it leaves it stopped and the listener
    // would read nothing ever again. Run it again, as a fresh member, until closed.
    consumer.on(consumer.events.CRASH, (e) => {
      this.logger.warn('Kafka consumer crashed', { group: settings.groupId, err: e.payload.error, kafkajsRestarts: e.payload.restart });
      if (e.payload.restart || handle.closed) return;
      handlers.onRebalance();
      setTimeout(() => {
        if (handle.closed) return;
        consumer
          .connect()
          .then(() => consumer.run(runConfig))
          .catch((err: unknown) => this.logger.error('Could not restart the Kafka consumer; the listener reads nothing more', { group: settings.groupId, err }));
      }, 1000).unref();
    });
    const runConfig: ConsumerRunConfig = {
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: 8,
        eachBatch: async ({ batch, heartbeat, resolveOffset }) => {
          if (batch.messages.length === 0) return;
          const records = recordsOf(batch);
          const accepted = handlers.onRecords(records);
          if (accepted) await withHeartbeats(accepted, heartbeat, o.heartbeatInterval);
          // Only moves kafkajs's fetch position (autoCommit is off): commits are the listener's.
          resolveOffset(batch.messages[batch.messages.length - 1].offset);
        },
    };
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [...settings.topics], fromBeginning: settings.fromBeginning });
      await consumer.run(runConfig);
      let timer: NodeJS.Timeout | undefined;
      const deadline = o.connectTimeout + o.sessionTimeout + o.rebalanceTimeout;
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ConnectionError(`The consumer did not join the group ${settings.groupId} within ${deadline} ms`)), deadline);
      });
      try {
        await Promise.race([firstJoin, timedOut]);
      } finally {
        clearTimeout(timer);
      }
      if (!settings.fromBeginning) await this.startAtEnd(consumer, settings.groupId, assigned);
    } catch (err) {
      await handle.close();
      throw toMessagingError(err, `Could not join the consumer group ${settings.groupId}`);
    }
    return handle;
  }

  /**
   * kafkajs resolves `latest` only at its first fetch, after the join was announced: a record
   * produced in between would be skipped. Partitions of the assignment without a committed
   * offset are positioned at their end now and that position is committed, so every record
   * produced after consume() resolved is read (by this member or a later owner).
   */
  private async startAtEnd(consumer: Consumer, groupId: string, assignment: Record<string, number[]>): Promise<void> {
    const admin = await this.getAdmin();
    const offsets: CommitOffset[] = [];
    for (const [topic, partitions] of Object.entries(assignment)) {
      if (partitions.length === 0) continue;
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      const missing = partitions.filter((p) => {
        const c = committed?.partitions.find((x) => x.partition === p);
        return c === undefined || Number(c.offset) < 0;
      });
      if (missing.length === 0) continue;
      const ends = await admin.fetchTopicOffsets(topic);
      for (const partition of missing) {
        const end = ends.find((e) => e.partition === partition)?.offset;
        if (end === undefined) continue;
        consumer.seek({ topic, partition, offset: end });
        offsets.push({ topic, partition, offset: end });
      }
    }
    if (offsets.length === 0) return;
    try {
      await consumer.commitOffsets(offsets);
    } catch (err) {
      this.logger.debug('Could not commit the start positions (the group is rebalancing); this member still starts there', { groupId, err });
    }
  }

  read(settings: ReaderSettings, onRecords: (records: readonly IncomingRecord[]) => void): Promise<KafkaReaderHandle> {
    return startReader(this.kafka, settings, onRecords, this.options, this.logger, headersOf);
  }

  async close(): Promise<void> {
    const producer = this.producer;
    const admin = this.admin;
    this.producer = undefined;
    this.admin = undefined;
    const closing = Promise.all([producer?.then((p) => p.disconnect()), admin?.then((a) => a.disconnect())]);
    await withDeadline(closing, this.options.shutdownTimeout, () => this.logger.warn('The Kafka producer did not disconnect in time (brokers unreachable?)', { timeoutMs: this.options.shutdownTimeout }));
  }

  private getProducer(): Promise<Producer> {
    this.producer ??= (async () => {
      const producer = this.kafka.producer({ idempotent: this.idempotent, allowAutoTopicCreation: true, maxInFlightRequests: this.idempotent ? 1 : undefined });
      await producer.connect();
      return producer;
    })().catch((err: unknown) => {
      this.producer = undefined;
      throw toMessagingError(err, 'Could not connect the Kafka producer');
    });
    return this.producer;
  }

  private getAdmin(): Promise<Admin> {
    this.admin ??= (async () => {
      const admin = this.kafka.admin();
      await admin.connect();
      return admin;
    })().catch((err: unknown) => {
      this.admin = undefined;
      throw toMessagingError(err, 'Could not connect to the Kafka cluster');
    });
    return this.admin;
  }
}

class KafkajsConsumer implements KafkaConsumerHandle {
  private closing?: Promise<void>;
  /** True once close() was called. */
  get closed(): boolean {
    return this.closing !== undefined;
  }
  constructor(
    private readonly consumer: Consumer,
    private readonly topics: readonly string[],
    /** Longest close() waits for kafkajs's disconnect (leaving the group retries while the brokers are gone). */
    private readonly closeTimeoutMs: number,
    private readonly logger: Logger,
  ) {}

  pause(): void {
    try {
      this.consumer.pause(this.topics.map((topic) => ({ topic })));
    } catch {
      // not running yet or already stopped: nothing to pause
    }
  }

  async commit(offsets: readonly CommitOffset[]): Promise<void> {
    try {
      await this.consumer.commitOffsets(offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset })));
    } catch (err) {
      throw toMessagingError(err, 'Could not commit offsets');
    }
  }

  close(): Promise<void> {
    this.closing ??= withDeadline(this.consumer.disconnect(), this.closeTimeoutMs, () =>
      this.logger.warn('The Kafka consumer did not disconnect in time (brokers unreachable?); left to finish in the background', { timeoutMs: this.closeTimeoutMs }),
    );
    return this.closing;
  }
}

/** Waits for `work` (never rejects) at most `ms`; past it, calls `onLate` and resolves, leaving `work` running. */
export function withDeadline(work: Promise<unknown>, ms: number, onLate: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      onLate();
      resolve();
    }, ms);
    timer.unref();
  });
  return Promise.race([work.then(() => undefined, () => undefined), late]).finally(() => clearTimeout(timer));
}

/** What kafkajs's heartbeat throws when the group is rebalancing (kafkajs's own `isRebalancing`). */
const REBALANCE_ERRORS = new Set(['REBALANCE_IN_PROGRESS', 'NOT_COORDINATOR_FOR_GROUP', 'ILLEGAL_GENERATION']);

/**
 * Waits for the driver's promise (back-pressure, a handover or a requeue backoff), heartbeating so
 * the group keeps the member. A heartbeat that says the group is rebalancing is thrown out of
 * eachBatch, so kafkajs rejoins now instead of when the wait ends (the other members wait for
 * this one); the listener, told of the rebalance, leaves what it still holds to the new owner.
 */
export async function withHeartbeats(done: Promise<void>, heartbeat: () => Promise<void>, intervalMs: number): Promise<void> {
  let finished = false;
  void done.finally(() => (finished = true));
  while (!finished) {
    await Promise.race([done, new Promise((r) => setTimeout(r, intervalMs))]);
    if (finished) return;
    try {
      await heartbeat();
    } catch (err) {
      if (REBALANCE_ERRORS.has((err as { type?: unknown }).type as string)) throw err;
    }
  }
}

/** A kafkajs batch as the seam's records. */
function recordsOf(batch: Batch): IncomingRecord[] {
  return batch.messages.map((m) => ({
    topic: batch.topic,
    partition: batch.partition,
    offset: m.offset,
    key: m.key ? m.key.toString('utf8') : null,
    value: m.value,
    headers: headersOf(m.headers),
  }));
}

/** The headers of a record that has none (most): one shared, frozen object instead of a new one per record. */
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

function headersOf(headers: Record<string, Buffer | string | (Buffer | string)[] | undefined> | undefined): Readonly<Record<string, string>> {
  let out: Record<string, string> | undefined;
  for (const k in headers) {
    const v = headers[k];
    if (v === undefined || k === '__proto__') continue;
    const one = Array.isArray(v) ? v[v.length - 1] : v;
    (out ??= {})[k] = typeof one === 'string' ? one : one.toString('utf8');
  }
  return out ?? NO_HEADERS;
}
