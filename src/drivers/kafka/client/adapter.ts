// The seam between the Kafka driver and a Kafka client library: what the driver needs (produce,
// make topics, run a group consumer, commit) and nothing else. kafkajs.ts and platformatic.ts
// (`?client=platformatic`) implement it; index.ts picks one and imports it on first use.
import type { Logger } from '../../../core/logger.js';
import type { ResolvedKafkaOptions } from '../options.js';

/** A record to produce. */
export interface OutgoingRecord {
  readonly topic: string;
  /** Records with one key go to one partition, in order; none: spread over partitions. */
  readonly key?: string;
  readonly value: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** A consumed record, as the client handed it over. */
export interface IncomingRecord {
  readonly topic: string;
  readonly partition: number;
  /** The offset, as Kafka's int64 in decimal. */
  readonly offset: string;
  readonly key: string | null;
  readonly value: Buffer | null;
  readonly headers: Readonly<Record<string, string>>;
}

/** A position to commit: the offset of the next record to read. */
export interface CommitOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

/** The partitions of each topic a member owns after a rebalance. */
export type Assignment = ReadonlyMap<string, readonly number[]>;

/** How a group consumer is run. */
export interface ConsumerSettings {
  readonly groupId: string;
  readonly topics: readonly string[];
  /**
   * Where a partition without a committed offset starts: its beginning, or (false) its end as
   * of the join, committed before `consume` resolves, so a record produced after that is read.
   */
  readonly fromBeginning: boolean;
  /** Longest one fetch waits for records, ms. @default the `maxWaitTime` option */
  readonly maxWaitTime?: number;
}

/** Where a consumer hands what it gets. */
export interface ConsumerHandlers {
  /**
   * Records of one partition, in offset order. The client fetches that partition again only once
   * the returned promise resolves (the driver's back-pressure); MUST NOT reject.
   */
  onRecords(records: readonly IncomingRecord[]): Promise<void> | void;
  /**
   * A rebalance completed: this member owns `assignment` from now on and the client reads every
   * owned partition again from its committed offset. Called before any record of the new
   * assignment.
   */
  onAssignment(assignment: Assignment): void;
  /**
   * A rebalance began: the member may lose partitions, and every record handed out and not
   * committed may be read by another member. Commit what is settled now; hand out nothing more
   * until `onAssignment`.
   */
  onRebalance(): void;
}

/** A running group consumer. */
export interface KafkaConsumerHandle {
  /** Commits positions for the current group generation; rejects when the group rebalanced meanwhile. */
  commit(offsets: readonly CommitOffset[]): Promise<void>;
  /** Stops fetching (the member stays in the group, so commits still count). */
  pause(): void;
  /** Leaves the group and closes the consumer's connections. Idempotent, never rejects. */
  close(): Promise<void>;
}

/** How a direct reader (no consumer group) is run. */
export interface ReaderSettings {
  readonly topics: readonly string[];
  /** Longest one fetch waits for records, ms. */
  readonly maxWaitTime: number;
}

/** A running direct reader (no consumer group). */
export interface KafkaReaderHandle {
  /** Stops fetching and closes the reader's connections. Idempotent, never rejects. */
  close(): Promise<void>;
}

/** One client library behind the seam. Connects lazily; `close` is idempotent. */
export interface KafkaClientAdapter {
  /** The library's name, e.g. `kafkajs`. */
  readonly name: string;
  /** Produces the records (one request where the client allows); resolves once the broker acknowledged per `acks`. */
  send(records: readonly OutgoingRecord[]): Promise<void>;
  /**
   * Makes sure the topics exist: CreateTopics where the broker has it, else auto-creation
   * through a metadata request (logged at debug).
   */
  ensureTopics(topics: readonly string[]): Promise<void>;
  /**
   * Every record `topic` holds now (up to each partition's high watermark), in offset order per
   * partition, read without committing anything: for tools such as the dead-letter store. A
   * topic that does not exist (or holds nothing) gives none.
   */
  readTopic(topic: string): Promise<IncomingRecord[]>;
  /**
   * How far `groupId` is behind on each of `topics`: the sum over partitions of the high
   * watermark minus the group's committed offset (the low watermark where it committed none).
   * Topics that do not exist are left out.
   */
  groupLag(groupId: string, topics: readonly string[]): Promise<Map<string, number>>;
  /**
   * As `groupLag`, but only the topics on which `groupId` has committed an offset (on any
   * partition): where the group has a position, for pool inspection. Reads only: it MUST NOT
   * create a topic or join the group.
   */
  groupBacklog(groupId: string, topics: readonly string[]): Promise<Map<string, number>>;
  /** Every topic of the cluster (a metadata request for all topics: it creates none). */
  listTopics(): Promise<string[]>;
  /**
   * The offsets `groupId` has committed on `partitions` (topic to partition numbers), by
   * `topic\0partition`; a partition without a committed offset is left out. Numbers, as the
   * listener tracks offsets (see ../offset-tracker.ts).
   */
  committedOffsets(groupId: string, partitions: Assignment): Promise<Map<string, number>>;
  /** Starts a group consumer; resolves once the member joined its group and has an assignment. */
  consume(settings: ConsumerSettings, handlers: ConsumerHandlers): Promise<KafkaConsumerHandle>;
  /**
   * Reads every partition of `topics` directly, without a consumer group: no join, no
   * rebalance, nothing committed (RPC replies and fanout). Each partition is read from its end
   * as of the call: resolves once those positions are known, so a record produced after it
   * resolved is read. `onRecords` gets one partition's records in offset order and MUST NOT
   * throw. The reader uses connections of its own: its long-polling fetches never hold up the
   * producer's requests.
   */
  read(settings: ReaderSettings, onRecords: (records: readonly IncomingRecord[]) => void): Promise<KafkaReaderHandle>;
  /** Closes the producer and admin connections (consumers are closed by their handles). */
  close(): Promise<void>;
}

/** What an adapter module exports. */
export interface KafkaClientModule {
  createClient(options: ResolvedKafkaOptions, logger: Logger, clientId: string): KafkaClientAdapter;
}

/** How the driver keys per-partition state, and `committedOffsets` its result: `topic\0partition`. */
export function partitionKey(topic: string, partition: number): string {
  return `${topic}\0${partition}`;
}

/** Records `groupId` has not committed on one partition: `end - committed`, or `end - start` without a commit. */
export function partitionLag(start: bigint, end: bigint, committed: bigint | undefined): number {
  const from = committed === undefined || committed < 0n ? start : committed;
  return end > from ? Number(end - from) : 0;
}
