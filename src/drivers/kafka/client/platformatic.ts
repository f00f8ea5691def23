// The @platformatic/kafka adapter (`?client=platformatic`): a maintained pure-JS client, loaded
// only when chosen. One producer and admin per transport, one consumer per listener reading a
// MessagesStream from the committed offsets with manual commits.
import {
  Admin,
  Consumer,
  Producer,
  stringSerializers,
  type ClusterMetadata,
  type ExtendedGroupProtocolSubscription,
  type GroupPartitionsAssignments,
  type Message,
  type MessagesStream,
  type SASLOptions,
} from '@platformatic/kafka';
import { NotSupportedError, ConnectionError, type MessagingError } from '../../../core/errors.js';
import type { Logger } from '../../../core/logger.js';
import type { Assignment, CommitOffset, ConsumerHandlers, ConsumerSettings, IncomingRecord, KafkaClientAdapter, KafkaConsumerHandle, KafkaReaderHandle, OutgoingRecord, ReaderSettings } from './adapter.js';
import { partitionKey, partitionLag } from './adapter.js';
import { isUnsupportedApi, toMessagingError } from '../errors.js';
import type { ResolvedKafkaOptions } from '../options.js';
import { readerGroup } from '../topology.js';
import { tlsOptionsOf } from './tls.js';

const ACKS = { all: -1, leader: 1, none: 0 } as const;
/** ListOffsets timestamps meaning "the earliest" and "the next" offset (Kafka's protocol values). */
const EARLIEST = -2n;
const LATEST = -1n;

/** The adapter module's factory (see index.ts). */
export function createClient(options: ResolvedKafkaOptions, logger: Logger, clientId: string): KafkaClientAdapter {
  return new PlatformaticClient(options, logger, clientId);
}

/**
 * Wraps a platformatic error. Its MultipleErrors nest the broker's answers; a broker too old for
 * the API versions platformatic speaks (it needs Kafka 3.5+, e.g. ApiVersions v3, Fetch v12,
 * JoinGroup v6) is named as such instead of being retried as a connection failure.
 */
function platformaticError(err: unknown, what: string): MessagingError {
  const nested = [err, ...(((err as { errors?: unknown[] } | null)?.errors as unknown[] | undefined) ?? [])];
  if (nested.some((e) => /version of API is not supported|UNSUPPORTED_VERSION/i.test(e instanceof Error ? e.message : String(e)))) {
    return new NotSupportedError(`${what}: the broker does not support the Kafka API versions @platformatic/kafka needs (Kafka 3.5 or later); use client=kafkajs with older brokers`, { cause: err });
  }
  return toMessagingError(err, what);
}

/** Like kafkajs.ts's assigner: each topic's partitions only to the members subscribed to it. */
function subscriptionAwareAssigner(_current: string, members: Map<string, ExtendedGroupProtocolSubscription>, topics: Set<string>, metadata: ClusterMetadata): GroupPartitionsAssignments[] {
  const ids = [...members.keys()].sort();
  const plan = new Map<string, GroupPartitionsAssignments>(ids.map((memberId) => [memberId, { memberId, assignments: new Map() }]));
  const all = new Set([...topics, ...[...members.values()].flatMap((m) => m.topics ?? [])]);
  let turn = 0;
  for (const topic of [...all].sort()) {
    const candidates = ids.filter((id) => members.get(id)!.topics?.includes(topic) ?? topics.has(topic));
    const count = metadata.topics.get(topic)?.partitionsCount ?? 0;
    if (candidates.length === 0) continue;
    for (let partition = 0; partition < count; partition++) {
      const owner = plan.get(candidates[turn++ % candidates.length])!;
      let a = owner.assignments.get(topic);
      if (!a) owner.assignments.set(topic, (a = { topic, partitions: [] }));
      a.partitions.push(partition);
    }
  }
  return [...plan.values()];
}

class PlatformaticClient implements KafkaClientAdapter {
  readonly name = 'platformatic';
  private producer?: Producer<string, string, string, string>;
  private admin?: Admin;
  private readonly known = new Set<string>();
  private createTopicsUnsupported = false;
  private readonly base: Record<string, unknown>;

  constructor(
    private readonly options: ResolvedKafkaOptions,
    private readonly logger: Logger,
    private readonly clientId: string,
  ) {
    const base: Record<string, unknown> = {
      bootstrapBrokers: [...options.brokers],
      connectTimeout: options.connectTimeout,
      requestTimeout: options.requestTimeout,
      timeout: options.requestTimeout,
      retries: 8,
      retryDelay: 250,
      autocreateTopics: true,
    };
    const tls = tlsOptionsOf(options);
    if (tls) base.tls = tls;
    if (options.securityProtocol.startsWith('SASL')) {
      // A provider, not the string: the password never shows when the client is logged or inspected.
      const password = options.password ?? '';
      base.sasl = { mechanism: options.saslMechanism, username: options.username ?? '', password: () => password } satisfies SASLOptions;
    }
    this.base = Object.freeze(base);
  }

  async send(records: readonly OutgoingRecord[]): Promise<void> {
    const producer = this.getProducer();
    try {
      await producer.send({
        messages: records.map((r) => ({ topic: r.topic, key: r.key, value: r.value, headers: r.headers ? new Map(Object.entries(r.headers)) : undefined })),
        acks: ACKS[this.options.acks],
      });
    } catch (err) {
      throw platformaticError(err, `Could not produce ${records.length} record(s) to ${[...new Set(records.map((r) => r.topic))].join(', ')}`);
    }
  }

  async ensureTopics(topics: readonly string[]): Promise<void> {
    const missing = topics.filter((t) => !this.known.has(t));
    if (missing.length === 0) return;
    const admin = this.getAdmin();
    try {
      const existing = new Set(await admin.listTopics());
      const absent = missing.filter((t) => !existing.has(t));
      if (absent.length > 0 && !this.createTopicsUnsupported) {
        try {
          await admin.createTopics({ topics: absent, partitions: -1, replicas: -1 });
        } catch (err) {
          if (!isUnsupportedApi(err) && !/TOPIC_ALREADY_EXISTS|already exists/i.test(String((err as Error).message))) throw err;
          if (isUnsupportedApi(err)) {
            this.createTopicsUnsupported = true;
            this.logger.debug('The broker has no CreateTopics; topics are auto-created on first use', { topics: absent });
          }
        }
      }
      // A metadata request with auto-creation allowed creates what CreateTopics could not.
      await admin.metadata({ topics: [...missing], autocreateTopics: true });
    } catch (err) {
      throw platformaticError(err, `Could not create the topics ${missing.join(', ')}`);
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
    try {
      return await this.getAdmin().listTopics();
    } catch (err) {
      throw platformaticError(err, 'Could not list the topics');
    }
  }

  /** groupLag, or with `committedOnly` only the topics where the group committed an offset. */
  private async offsetsBehind(groupId: string, topics: readonly string[], committedOnly: boolean): Promise<Map<string, number>> {
    const admin = this.getAdmin();
    const lag = new Map<string, number>();
    try {
      const existing = new Set(await admin.listTopics());
      const present = topics.filter((t) => existing.has(t));
      if (present.length === 0) return lag;
      const meta = await admin.metadata({ topics: present });
      const request = (timestamp: bigint) => ({
        topics: present.map((name) => ({ name, partitions: Array.from({ length: meta.topics.get(name)?.partitionsCount ?? 0 }, (_, partitionIndex) => ({ partitionIndex, timestamp })) })),
      });
      const [low, high, [group]] = await Promise.all([admin.listOffsets(request(EARLIEST)), admin.listOffsets(request(LATEST)), admin.listConsumerGroupOffsets({ groups: [{ groupId, topics: present.map((name) => ({ name, partitionIndexes: [...Array(meta.topics.get(name)?.partitionsCount ?? 0).keys()] })) }] })]);
      for (const topic of present) {
        const starts = new Map(low.find((t) => t.name === topic)?.partitions.map((p) => [p.partitionIndex, p.offset]));
        const positions = new Map(group?.topics.find((t) => t.name === topic)?.partitions.map((p) => [p.partitionIndex, p.committedOffset]));
        if (committedOnly && ![...positions.values()].some((o) => o >= 0n)) continue;
        let sum = 0;
        for (const p of high.find((t) => t.name === topic)?.partitions ?? []) sum += partitionLag(starts.get(p.partitionIndex) ?? 0n, p.offset, positions.get(p.partitionIndex));
        lag.set(topic, sum);
      }
    } catch (err) {
      throw platformaticError(err, `Could not read the offsets of group ${groupId}`);
    }
    return lag;
  }

  async committedOffsets(groupId: string, partitions: Assignment): Promise<Map<string, number>> {
    const admin = this.getAdmin();
    const out = new Map<string, number>();
    try {
      const [group] = await admin.listConsumerGroupOffsets({ groups: [{ groupId, topics: [...partitions].map(([name, indexes]) => ({ name, partitionIndexes: [...indexes] })) }] });
      for (const t of group?.topics ?? []) for (const p of t.partitions) if (p.committedOffset >= 0n) out.set(partitionKey(t.name, p.partitionIndex), Number(p.committedOffset));
    } catch (err) {
      throw platformaticError(err, `Could not read the committed offsets of group ${groupId}`);
    }
    return out;
  }

  async readTopic(topic: string): Promise<IncomingRecord[]> {
    const admin = this.getAdmin();
    const consumer = this.newConsumer(readerGroup());
    let ends: Map<number, bigint>;
    try {
      if (!(await admin.listTopics()).includes(topic)) return [];
      const [low, high] = await Promise.all([consumer.listOffsets({ topics: [topic], timestamp: EARLIEST }), consumer.listOffsets({ topics: [topic], timestamp: LATEST })]);
      const lows = low.get(topic) ?? [];
      ends = new Map((high.get(topic) ?? []).flatMap((end, partition) => (end > (lows[partition] ?? 0n) ? [[partition, end] as const] : [])));
    } catch (err) {
      await closeConsumer(consumer);
      throw platformaticError(err, `Could not read the offsets of ${topic}`);
    }
    if (ends.size === 0) {
      await closeConsumer(consumer);
      return [];
    }
    const out: IncomingRecord[] = [];
    const remaining = new Set(ends.keys());
    let timer: NodeJS.Timeout | undefined;
    let stream: MessagesStream<Buffer, Buffer, Buffer, Buffer> | undefined;
    try {
      // A throwaway group that never commits, from the earliest offset.
      stream = await consumer.consume({ topics: [topic], mode: 'earliest', autocommit: false, maxWaitTime: 100 });
      const deadline = this.options.connectTimeout + this.options.rebalanceTimeout;
      await new Promise<void>((resolve, reject) => {
        timer = setTimeout(() => reject(new ConnectionError(`Reading ${topic} did not finish within ${deadline} ms`)), deadline);
        stream!.on('error', reject);
        stream!.on('data', (m: Message<Buffer, Buffer, Buffer, Buffer>) => {
          const end = ends.get(m.partition);
          if (end === undefined) return;
          if (m.offset < end) out.push(recordOf(m));
          if (m.offset + 1n >= end) {
            remaining.delete(m.partition);
            if (remaining.size === 0) resolve();
          }
        });
      });
    } catch (err) {
      throw platformaticError(err, `Could not read ${topic}`);
    } finally {
      clearTimeout(timer);
      await stream?.close().catch(() => undefined);
      await closeConsumer(consumer);
    }
    return out.sort((a, b) => a.partition - b.partition || (BigInt(a.offset) < BigInt(b.offset) ? -1 : 1));
  }

  async consume(settings: ConsumerSettings, handlers: ConsumerHandlers): Promise<KafkaConsumerHandle> {
    const consumer = this.newConsumer(settings.groupId);
    const handle = new PlatformaticConsumer(consumer);
    let joined!: () => void;
    const firstJoin = new Promise<void>((resolve) => (joined = resolve));
    consumer.on('consumer:group:join', (e) => {
      const assignment = new Map<string, readonly number[]>((e.assignments ?? []).map((a) => [a.topic, [...a.partitions]]));
      handlers.onAssignment(assignment as Assignment);
      joined();
    });
    consumer.on('consumer:group:rebalance', () => handlers.onRebalance());
    let timer: NodeJS.Timeout | undefined;
    try {
      const o = this.options;
      const stream = await consumer.consume({
        topics: [...settings.topics],
        mode: 'committed',
        fallbackMode: settings.fromBeginning ? 'earliest' : 'latest',
        autocommit: false,
        maxWaitTime: o.maxWaitTime,
        maxBytesPerPartition: o.maxFetchBytes,
        sessionTimeout: o.sessionTimeout,
        heartbeatInterval: o.heartbeatInterval,
        rebalanceTimeout: o.rebalanceTimeout,
        partitionAssigner: subscriptionAwareAssigner,
      });
      handle.stream = stream;
      stream.on('error', (err: Error) => this.logger.warn('Kafka consumer stream failed', { group: settings.groupId, err }));
      // One record at a time keeps partition order; the driver's back-pressure pauses the stream.
      stream.on('data', (m: Message<Buffer, Buffer, Buffer, Buffer>) => {
        const accepted = handlers.onRecords([recordOf(m)]);
        if (accepted) {
          stream.pause();
          void accepted.then(() => {
            if (!handle.paused) stream.resume();
          });
        }
      });
      const deadline = o.connectTimeout + o.sessionTimeout + o.rebalanceTimeout;
      await Promise.race([
        firstJoin,
        new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new ConnectionError(`The consumer did not join the group ${settings.groupId} within ${deadline} ms`)), deadline))),
      ]);
    } catch (err) {
      await handle.close();
      throw platformaticError(err, `Could not join the consumer group ${settings.groupId}`);
    } finally {
      clearTimeout(timer);
    }
    return handle;
  }

  /**
   * platformatic reads only as a group member (its low-level fetch needs topic ids and leaders
   * by hand): a throwaway group that never commits, from the end. Unlike the kafkajs reader this
   * pays one group join per reader (once per transport for RPC replies, once per fanout server).
   */
  async read(settings: ReaderSettings, onRecords: (records: readonly IncomingRecord[]) => void): Promise<KafkaReaderHandle> {
    const consumer = this.newConsumer(readerGroup());
    const handle = new PlatformaticConsumer(consumer);
    let timer: NodeJS.Timeout | undefined;
    // Positions are known once the stream assigned the offsets of its assignment: the first
    // 'offsets' after the join (registered before the stream's own join handler, which refreshes).
    // A join before consume() returned the stream: its construction set the offsets.
    let stream: MessagesStream<Buffer, Buffer, Buffer, Buffer> | undefined;
    let joinedEarly = false;
    let positionedNow!: () => void;
    const positioned = new Promise<void>((resolve) => {
      positionedNow = resolve;
      consumer.once('consumer:group:join', () => (stream ? stream.once('offsets', () => resolve()) : (joinedEarly = true)));
    });
    try {
      stream = await consumer.consume({ topics: [...settings.topics], mode: 'latest', autocommit: false, maxWaitTime: settings.maxWaitTime });
      if (joinedEarly) positionedNow();
      handle.stream = stream;
      stream.on('error', (err: Error) => this.logger.warn('Kafka reader stream failed', { topics: settings.topics, err }));
      stream.on('data', (m: Message<Buffer, Buffer, Buffer, Buffer>) => onRecords([recordOf(m)]));
      const deadline = this.options.connectTimeout + this.options.sessionTimeout + this.options.rebalanceTimeout;
      await Promise.race([positioned, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new ConnectionError(`The reader of ${settings.topics.join(', ')} did not start within ${deadline} ms`)), deadline)))]);
    } catch (err) {
      await handle.close();
      throw platformaticError(err, `Could not read ${settings.topics.join(', ')}`);
    } finally {
      clearTimeout(timer);
    }
    return handle;
  }

  async close(): Promise<void> {
    const producer = this.producer;
    const admin = this.admin;
    this.producer = undefined;
    this.admin = undefined;
    await Promise.all([producer?.close().catch(() => undefined), admin?.close().catch(() => undefined)]);
  }

  private newConsumer(groupId: string): Consumer<Buffer, Buffer, Buffer, Buffer> {
    return new Consumer({ ...this.base, clientId: this.clientId, groupId } as ConstructorParameters<typeof Consumer<Buffer, Buffer, Buffer, Buffer>>[0]);
  }

  private getProducer(): Producer<string, string, string, string> {
    // platformatic connects on first use; an idempotent producer needs acks all.
    this.producer ??= new Producer({
      ...this.base,
      clientId: this.clientId,
      serializers: stringSerializers,
      idempotent: this.options.idempotent && this.options.acks === 'all',
      compression: this.options.compression,
    } as ConstructorParameters<typeof Producer<string, string, string, string>>[0]);
    return this.producer;
  }

  private getAdmin(): Admin {
    this.admin ??= new Admin({ ...this.base, clientId: this.clientId } as ConstructorParameters<typeof Admin>[0]);
    return this.admin;
  }
}

class PlatformaticConsumer implements KafkaConsumerHandle {
  stream?: MessagesStream<Buffer, Buffer, Buffer, Buffer>;
  paused = false;
  private closing?: Promise<void>;

  constructor(private readonly consumer: Consumer<Buffer, Buffer, Buffer, Buffer>) {}

  pause(): void {
    this.paused = true;
    this.stream?.pause();
  }

  async commit(offsets: readonly CommitOffset[]): Promise<void> {
    try {
      // leaderEpoch -1: unknown (the broker does not check it).
      await this.consumer.commit({ offsets: offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: BigInt(o.offset), leaderEpoch: -1 })) });
    } catch (err) {
      throw platformaticError(err, 'Could not commit offsets');
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.stream?.close().catch(() => undefined);
      await closeConsumer(this.consumer);
    })();
    return this.closing;
  }
}

function recordOf(m: Message<Buffer, Buffer, Buffer, Buffer>): IncomingRecord {
  const headers: Record<string, string> = {};
  for (const [k, v] of m.headers ?? []) {
    const key = k.toString('utf8');
    if (key !== '__proto__') headers[key] = v.toString('utf8');
  }
  return { topic: m.topic, partition: m.partition, offset: m.offset.toString(), key: m.key && m.key.length > 0 ? m.key.toString('utf8') : null, value: m.value ?? null, headers };
}

/** Leaves the group (force: without waiting for in-flight fetches) and closes; never rejects. */
function closeConsumer(consumer: Consumer<Buffer, Buffer, Buffer, Buffer>): Promise<void> {
  return new Promise<void>((resolve) => consumer.close(true, () => resolve()));
}
