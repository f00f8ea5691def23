// A direct reader on kafkajs (no consumer group): what RPC replies and fanout casts are read with,
// so a call never waits for a group join. kafkajs has no public assign(); the reader drives
// kafkajs's own cluster (metadata, ListOffsets, Fetch) through the Kafka instance's cluster factory.
import type { Kafka } from 'kafkajs';
import { ConnectionError } from '../../../core/errors.js';
import type { Logger } from '../../../core/logger.js';
import { partitionKey, type IncomingRecord, type KafkaReaderHandle, type ReaderSettings } from './adapter.js';
import { toMessagingError } from '../errors.js';
import type { ResolvedKafkaOptions } from '../options.js';

/** The part of kafkajs's (internal, frozen since 2.2.4) Cluster the reader uses. */
interface Cluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  refreshMetadata(): Promise<void>;
  addMultipleTargetTopics(topics: string[]): Promise<void>;
  findTopicPartitionMetadata(topic: string): Array<{ partitionId: number; leader: number }>;
  fetchTopicsOffset(topics: Array<{ topic: string; partitions: Array<{ partition: number }>; fromBeginning: boolean }>): Promise<Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }>>;
  findBroker(node: { nodeId: string }): Promise<{
    fetch(request: {
      replicaId: number;
      isolationLevel: number;
      maxWaitTime: number;
      minBytes: number;
      maxBytes: number;
      topics: Array<{ topic: string; partitions: Array<{ partition: number; fetchOffset: string; maxBytes: number }> }>;
    }): Promise<{ responses: Array<{ topicName: string; partitions: Array<{ partition: number; messages: FetchedMessage[] }> }> }>;
  }>;
}

interface FetchedMessage {
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
  isControlRecord?: boolean;
}

type ClusterFactory = (options: { metadataMaxAge: number; allowAutoTopicCreation: boolean; maxInFlightRequests: null; isolationLevel: number }) => Cluster;

/** READ_UNCOMMITTED: tidings produces without transactions. */
const READ_UNCOMMITTED = 0;

/** kafkajs's private cluster factory on a Kafka instance (a symbol described `private:Kafka:createCluster`). */
function clusterFactoryOf(kafka: Kafka): ClusterFactory {
  const owner = kafka as unknown as Record<symbol, unknown>;
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  const factory = symbol && owner[symbol];
  if (typeof factory !== 'function') throw new ConnectionError('This kafkajs version has no cluster factory the direct reader can use (kafkajs 2.2.x has one)');
  return factory as ClusterFactory;
}

/** Starts a reader on every partition of `topics`, from their ends; resolves once positioned. */
export async function startReader(
  kafka: Kafka,
  settings: ReaderSettings,
  onRecords: (records: readonly IncomingRecord[]) => void,
  options: ResolvedKafkaOptions,
  logger: Logger,
  headersOf: (headers: FetchedMessage['headers']) => Record<string, string>,
): Promise<KafkaReaderHandle> {
  const cluster = clusterFactoryOf(kafka)({ metadataMaxAge: 300_000, allowAutoTopicCreation: true, maxInFlightRequests: null, isolationLevel: READ_UNCOMMITTED });
  const reader = new KafkajsReader(cluster, [...settings.topics], settings.maxWaitTime, onRecords, options, logger, headersOf);
  try {
    await reader.start();
  } catch (err) {
    await reader.close();
    throw toMessagingError(err, `Could not start reading ${settings.topics.join(', ')}`);
  }
  return reader;
}

class KafkajsReader implements KafkaReaderHandle {
  /** Next offset to fetch, by `topic\0partition`. */
  private readonly positions = new Map<string, string>();
  /** One fetch loop per leader broker: a long-polling fetch holds its connection. */
  private readonly loops = new Map<number, Promise<void>>();
  private closed = false;
  private closing?: Promise<void>;

  constructor(
    private readonly cluster: Cluster,
    private readonly topics: string[],
    private readonly maxWaitTime: number,
    private readonly onRecords: (records: readonly IncomingRecord[]) => void,
    private readonly options: ResolvedKafkaOptions,
    private readonly logger: Logger,
    private readonly headersOf: (headers: FetchedMessage['headers']) => Record<string, string>,
  ) {}

  async start(): Promise<void> {
    await this.cluster.connect();
    await this.cluster.addMultipleTargetTopics(this.topics);
    await this.seekToEnd(this.topics.flatMap((topic) => this.cluster.findTopicPartitionMetadata(topic).map((p) => ({ topic, partition: p.partitionId }))));
    this.startLoops();
  }

  close(): Promise<void> {
    this.closed = true;
    this.closing ??= this.cluster.disconnect().catch(() => undefined);
    return this.closing;
  }

  /** Positions the partitions at their current end (the next record produced is read). */
  private async seekToEnd(partitions: Array<{ topic: string; partition: number }>): Promise<void> {
    if (partitions.length === 0) return;
    const byTopic = new Map<string, Array<{ partition: number }>>();
    for (const { topic, partition } of partitions) {
      let list = byTopic.get(topic);
      if (!list) byTopic.set(topic, (list = []));
      list.push({ partition });
    }
    const ends = await this.cluster.fetchTopicsOffset([...byTopic].map(([topic, ps]) => ({ topic, partitions: ps, fromBeginning: false })));
    for (const { topic, partitions: ps } of ends) for (const p of ps) this.positions.set(partitionKey(topic, p.partition), p.offset);
  }

  /** The partitions whose leader is `nodeId`, by topic. */
  private partitionsLedBy(nodeId: number): Map<string, number[]> {
    const out = new Map<string, number[]>();
    for (const topic of this.topics) {
      for (const p of this.cluster.findTopicPartitionMetadata(topic)) {
        if (p.leader !== nodeId || !this.positions.has(partitionKey(topic, p.partitionId))) continue;
        let list = out.get(topic);
        if (!list) out.set(topic, (list = []));
        list.push(p.partitionId);
      }
    }
    return out;
  }

  /** A loop for every leader that has none (after start, or when leadership moved). */
  private startLoops(): void {
    let leaders: Set<number>;
    try {
      leaders = new Set(this.topics.flatMap((topic) => this.cluster.findTopicPartitionMetadata(topic).map((p) => p.leader)));
    } catch (err) {
      // No metadata (the brokers are gone): the loop that failed keeps backing off and retries.
      this.logger.debug('No metadata for a direct reader yet', { err });
      return;
    }
    for (const nodeId of leaders) {
      if (this.loops.has(nodeId) || this.closed) continue;
      const loop = this.runLoop(nodeId).finally(() => this.loops.delete(nodeId));
      this.loops.set(nodeId, loop);
    }
  }

  private async runLoop(nodeId: number): Promise<void> {
    let failures = 0;
    while (!this.closed) {
      try {
        // Throws while the metadata is not loaded (the brokers are gone): backs off like a failed fetch.
        const mine = this.partitionsLedBy(nodeId);
        if (mine.size === 0) return;
        const broker = await this.cluster.findBroker({ nodeId: String(nodeId) });
        const response = await broker.fetch({
          replicaId: -1,
          isolationLevel: READ_UNCOMMITTED,
          maxWaitTime: this.maxWaitTime,
          minBytes: 1,
          maxBytes: this.options.maxFetchBytes * 4,
          topics: [...mine].map(([topic, ps]) => ({ topic, partitions: ps.map((partition) => ({ partition, fetchOffset: this.positions.get(partitionKey(topic, partition))!, maxBytes: this.options.maxFetchBytes })) })),
        });
        failures = 0;
        if (this.closed) return;
        for (const { topicName, partitions } of response.responses) for (const p of partitions) this.deliver(topicName, p.partition, p.messages);
      } catch (err) {
        if (this.closed) return;
        failures++;
        this.logger.debug('Direct Kafka fetch failed; refreshing metadata and fetching again', { nodeId, failures, err });
        await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** Math.min(failures, 6), 5000)));
        if (this.closed) return;
        await this.recover(err);
        this.startLoops();
      }
    }
  }

  /** After a failed fetch: new metadata (leaders move), and partitions out of range start at their end again. */
  private async recover(err: unknown): Promise<void> {
    try {
      await this.cluster.refreshMetadata();
      if ((err as { type?: unknown } | null)?.type === 'OFFSET_OUT_OF_RANGE') {
        const all = this.topics.flatMap((topic) => this.cluster.findTopicPartitionMetadata(topic).map((p) => ({ topic, partition: p.partitionId })));
        await this.seekToEnd(all);
      }
    } catch (e) {
      this.logger.debug('Refreshing metadata for a direct reader failed', { err: e });
    }
  }

  private deliver(topic: string, partition: number, messages: readonly FetchedMessage[]): void {
    const key = partitionKey(topic, partition);
    const from = BigInt(this.positions.get(key) ?? '0');
    const records: IncomingRecord[] = [];
    let next = from;
    for (const m of messages) {
      const offset = BigInt(m.offset);
      // A fetch returns whole record batches: records before the position are skipped.
      if (offset < from) continue;
      next = offset + 1n;
      if (m.isControlRecord) continue;
      records.push({ topic, partition, offset: m.offset, key: m.key ? m.key.toString('utf8') : null, value: m.value, headers: this.headersOf(m.headers) });
    }
    if (next > from) this.positions.set(key, next.toString());
    if (records.length > 0) this.onRecords(records);
  }
}
