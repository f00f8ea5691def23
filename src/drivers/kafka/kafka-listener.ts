// A notification listener on one consumer group, an InboundPushSource as memory's and AMQP's:
// records of `<topic>.<priority>` go through the shared inbound pipeline to the listener; offsets are committed once handled (batched, never past
// a record still being handled). A delivery's generation is the group generation (one per
// rebalance) it was read in. The group's retry topics are read by a second consumer of the same
// kind in a group of their own (`retryGroup`): they are empty nearly always, and in the main
// consumer every fetch of a busy topic would carry their partitions too.
//
// Handover: a partition this consumer did not own in the last generation may come from a member
// whose last commits the broker refused while the group rebalanced (librdkafka's mock refuses
// commits during a rebalance; kafkajs rejoins without waiting for a listener's commits, so a real
// broker can refuse a late one too). That member commits them again once the new assignment is
// known (`carried`), at the moment this one reads its start positions. So records of a newly owned
// partition are held for HANDOVER_GRACE_MS, the group's committed offsets are read again, and
// what lies below them (handled by the previous owner) is committed past, not run twice.
import { requeueReason } from '../../contract/dead-letters.js';
import type { ConsumerLag, DeliveryStats } from '../../contract/delivery-stats.js';
import { InboundPushSource } from '../../contract/inbound.js';
import type { IncomingMessage } from '../../contract/incoming-message.js';
import type { NotificationMessage, ReplySender } from '../../contract/messages.js';
import type { ListenerSink } from '../../contract/push-listener.js';
import type { Logger } from '../../core/logger.js';
import { partitionKey, type Assignment, type IncomingRecord, type KafkaClientAdapter, type KafkaConsumerHandle } from './client/index.js';
import type { KafkaConnection } from './connection.js';
import { KafkaDeadLetters } from './dead-letters.js';
import { PartitionOffsets } from './offset-tracker.js';
import type { ResolvedKafkaOptions } from './options.js';
import { delayUntil, parseRetryHeaders, type ParsedRetryHeaders, type RetryHeaderRules } from './retry-headers.js';
import { deadLetterOrigin, deadLetterTopic, HEADERS, retryGroup, retryTopic } from './topology.js';

/** How long records of a newly owned partition wait for the previous owner's late commits (see the file comment). */
export const HANDOVER_GRACE_MS = 500;

/** What the listener hands the inbound pipeline as the delivery handle (`unwrap()` returns it). */
export interface KafkaDelivery {
  readonly record: IncomingRecord;
  /** Deliveries of this notification so far, this one included (1 for a first delivery). */
  readonly deliveries: number;
  /** The topic the notification was first published to (the record's own, unless it is a retry). */
  readonly originalTopic: string;
}

/** A delivery with where its offset is tracked: settling it looks nothing up. */
interface TrackedDelivery extends KafkaDelivery {
  /** The record's offset, parsed once. */
  readonly offset: number;
  /** Its partition's offsets in the generation it was read in. */
  readonly offsets: PartitionOffsets;
}

export class KafkaNotificationListener extends InboundPushSource<IncomingMessage, TrackedDelivery> {
  /** The notification pipeline (the base makes one for kind `notification`). */
  private readonly inbound = this.notifications!;
  private consumer?: KafkaConsumerHandle;
  private generation = 0;
  /** Offsets of the current generation by `topic\0partition`. */
  private partitions = new Map<string, PartitionOffsets>();
  private stopped = false;
  /** Between a rebalance's start and the next assignment: records are not handed out. */
  private rebalancing = false;
  private cleaning?: Promise<void>;
  private commitTimer?: NodeJS.Timeout;
  private committing?: Promise<void>;
  private commitAgain = false;
  private roomWaiters: Array<() => void> = [];
  /** Waits (the handover grace, a requeue backoff) that end early on stop and rebalance. */
  private readonly sleepers = new Set<() => void>();
  /** Positions settled in an earlier generation and not known to be committed, by `topic\0partition`. */
  private carried = new Map<string, number>();
  /** Partitions of the current assignment, by `topic\0partition`. */
  private owned = new Set<string>();
  /** Partitions newly owned in this generation whose records wait until `ready` (see the file comment). */
  private handover?: { readonly generation: number; readonly keys: Set<string>; readonly ready: Promise<void> };
  /** Committed offsets read after the handover: records below were handled by the previous owner. */
  private handedOver = new Map<string, number>();
  /** Dead-letter topics being trimmed to `dead_letter_max_len`; `again` once more arrived meanwhile. */
  private readonly trims = new Map<string, { again: boolean }>();
  private readonly deadLetters: KafkaDeadLetters;
  /** Retry topic of each `<topic>.<priority>` topic of the listener. */
  private readonly retryTopics: Map<string, string>;
  /** The topic each topic this consumer reads stands for: itself, or (a retry topic) the one it retries. */
  private readonly origins: ReadonlyMap<string, string>;
  /** `parseRetryHeaders`' rules per topic read, from `origins` (built once, not per record). */
  private readonly retryRules: ReadonlyMap<string, RetryHeaderRules>;
  /** The topics this consumer reads: the listener's, or (the retry reader) their retry topics. */
  private readonly reads: readonly string[];
  /** The Kafka consumer group of this consumer: `group`, or (the retry reader) `retryGroup(group)`. */
  private readonly groupId: string;
  /** The consumer of the retry topics, which hands its records to the same sink (the listener's own reader only). */
  private readonly retries?: KafkaNotificationListener;

  constructor(
    private readonly conn: KafkaConnection,
    /** `<topic>.<priority>` topics. */
    private readonly topics: readonly string[],
    /** The consumer group: the pool, else the `consumerGroup` option. */
    readonly group: string,
    private readonly options: ResolvedKafkaOptions,
    private readonly logger: Logger,
    /** The driver's reply sender: the pipeline wants one, a notification never replies. */
    replies: ReplySender,
    private readonly stats?: DeliveryStats,
    /** `retries`: the retry reader of a listener (made by the listener itself). */
    role: 'listener' | 'retries' = 'listener',
  ) {
    super('notification', { logger, dedupWindow: options.dedupWindow, replies, stats, pool: group, maxMessageBytes: options.maxMessageBytes });
    this.retryTopics = new Map(topics.map((t) => [t, retryTopic(t, group)]));
    this.deadLetters = new KafkaDeadLetters({ vhost: options.vhost, conn, logger });
    if (role === 'listener') {
      this.reads = topics;
      this.origins = new Map(topics.map((t) => [t, t]));
      this.groupId = group;
      this.retries = new KafkaNotificationListener(conn, topics, group, options, logger.child({ retries: true }), replies, stats, 'retries');
    } else {
      this.reads = [...this.retryTopics.values()];
      this.origins = new Map([...this.retryTopics].map(([t, retry]) => [retry, t]));
      this.groupId = retryGroup(group);
    }
    this.retryRules = new Map([...this.origins].map(([topic, originalTopic]) => [topic, { originalTopic, requeueBackoff: options.requeueBackoff }]));
  }

  override attach(sink: ListenerSink<IncomingMessage>): void {
    super.attach(sink);
    this.retries?.attach(sink);
  }

  /** Makes the topics (or has them auto-created) and joins the groups (the listener's and its retry reader's); resolves once assigned. */
  async subscribe(): Promise<void> {
    await Promise.all([this.join(), this.retries?.subscribe()]);
  }

  private async join(): Promise<void> {
    const client: KafkaClientAdapter = await this.conn.getClient();
    await client.ensureTopics(this.reads);
    // A requeued record must never be skipped: the retry reader starts at the beginning of what it has not committed.
    const fromBeginning = this.retries === undefined || this.options.offsetReset === 'earliest';
    this.consumer = await client.consume(
      { groupId: this.groupId, topics: this.reads, fromBeginning },
      { onRecords: (records) => this.onRecords(records), onAssignment: (assignment) => this.onAssignment(assignment), onRebalance: () => this.onRebalance() },
    );
    if (this.stopped) await this.consumer.close();
    this.logger.debug('Kafka listener joined its group', { group: this.groupId, topics: this.reads });
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.consumer?.pause();
    this.wakeRoomWaiters();
    this.wakeSleepers();
    await this.retries?.stop();
  }

  cleanup(): Promise<void> {
    this.cleaning ??= Promise.all([this.doCleanup(), this.retries?.cleanup()]).then(() => undefined);
    return this.cleaning;
  }

  private async doCleanup(): Promise<void> {
    await this.stop();
    // Running handlers settle on this group membership: give them shutdownTimeout, then commit.
    await this.inbound.whenSettled(this.options.shutdownTimeout);
    clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    await this.committing;
    await this.flushCommits();
    await this.consumer?.close();
  }

  ack(delivery: TrackedDelivery, generation: number): boolean {
    return this.settle(delivery, generation);
  }

  requeue(delivery: TrackedDelivery, generation: number, reason?: unknown): void {
    // Requeueing re-publishes (a retry topic, or the dead letters) and commits past the original,
    // so one message never blocks its partition; the original stays uncommitted until the copy is stored.
    const { record } = delivery;
    const value = record.value?.toString('utf8') ?? '';
    const dead = delivery.deliveries >= this.options.maxDeliveries;
    const topic = dead ? deadLetterTopic(delivery.originalTopic) : (this.retryTopics.get(delivery.originalTopic) ?? retryTopic(delivery.originalTopic, this.group));
    const headers: Record<string, string> = { [HEADERS.deliveries]: String(delivery.deliveries), [HEADERS.originalTopic]: delivery.originalTopic };
    if (!dead && this.options.requeueBackoff > 0) headers[HEADERS.notBefore] = String(Date.now() + this.options.requeueBackoff);
    if (dead) {
      headers[HEADERS.group] = this.group;
      headers[HEADERS.error] = requeueReason(reason, `requeued ${delivery.deliveries} times (maxDeliveries ${this.options.maxDeliveries})`);
      headers[HEADERS.deadAt] = new Date().toISOString();
      headers[HEADERS.consumer] = this.conn.clientId;
      this.logger.warn('Notification dead-lettered after maxDeliveries', { topic: delivery.originalTopic, deadLetterTopic: topic, deliveries: delivery.deliveries, partition: record.partition, offset: record.offset });
    }
    this.conn
      .produce({ topic, key: record.key ?? undefined, value, headers })
      .then(
        () => {
          if (dead) {
            this.stats?.deadLettered(delivery.originalTopic, 'max_deliveries', this.group);
            this.trimDeadLetters(topic);
          }
          this.settle(delivery, generation);
        },
        (err: unknown) => this.logger.error('Could not re-publish a requeued notification; it is read again after the next rebalance', { topic, partition: record.partition, offset: record.offset, err }),
      );
  }

  reject(delivery: TrackedDelivery, generation: number): void {
    // Malformed: committed past, never retried (the inbound pipeline logged it).
    this.settle(delivery, generation);
  }

  describe(delivery: KafkaDelivery): Record<string, unknown> {
    return { topic: delivery.record.topic, partition: delivery.record.partition, offset: delivery.record.offset, group: this.group };
  }

  deliveries(delivery: KafkaDelivery): number {
    return delivery.deliveries;
  }

  address(delivery: KafkaDelivery): string {
    return delivery.originalTopic;
  }

  /** True once cleaned up. */
  get closed(): boolean {
    return this.cleaning !== undefined;
  }

  /** How far the group is behind on each topic it reads (its retry topic counted with it). */
  async lag(): Promise<ConsumerLag[]> {
    const client = await this.conn.getClient();
    const [byTopic, byRetryTopic] = await Promise.all([client.groupLag(this.group, this.topics), client.groupLag(retryGroup(this.group), [...this.retryTopics.values()])]);
    return this.topics.map((topic) => ({ address: topic, pool: this.group, lag: (byTopic.get(topic) ?? 0) + (byRetryTopic.get(this.retryTopics.get(topic)!) ?? 0) }));
  }

  private onRebalance(): void {
    // Eager rebalancing: every partition may move. What is buffered is not handled here (its new
    // owner reads it from the last commit); what is settled is committed now, while the broker
    // still accepts commits of this generation, so the new owner does not run it again.
    this.rebalancing = true;
    this.wakeSleepers();
    const withdrawn = this.withdrawBuffered();
    this.logger.debug('Kafka listener rebalancing', { group: this.groupId, generation: this.generation, withdrawn });
    clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    void this.flushCommits();
  }

  private onAssignment(assignment: Assignment): void {
    // The client reads every owned partition again from its committed offset: what is buffered
    // and not handed to the callback comes again, and settling the old generation means nothing.
    // What was settled and not committed (a broker may refuse commits while the group is
    // rebalancing; librdkafka's mock does) is carried over: committed again in the new
    // generation, and not handled again here when this member reads it once more.
    const carried = new Map<string, number>();
    for (const [key, offsets] of this.partitions) {
      const point = offsets.commitPoint();
      if (point !== undefined) carried.set(key, point);
    }
    for (const [key, point] of this.carried) if (!carried.has(key) || carried.get(key)! < point) carried.set(key, point);
    this.carried = carried;
    this.generation++;
    this.rebalancing = false;
    this.partitions = new Map();
    if (carried.size > 0) void this.commitCarried(this.generation);
    const owned = new Set<string>();
    const freshKeys = new Set<string>();
    const fresh = new Map<string, number[]>();
    for (const [topic, partitions] of assignment) {
      for (const partition of partitions) {
        const key = partitionKey(topic, partition);
        owned.add(key);
        if (this.owned.has(key)) continue;
        freshKeys.add(key);
        let list = fresh.get(topic);
        if (!list) fresh.set(topic, (list = []));
        list.push(partition);
      }
    }
    this.owned = owned;
    this.handedOver = new Map();
    this.handover = fresh.size === 0 ? undefined : { generation: this.generation, keys: freshKeys, ready: this.readHandover(this.generation, fresh) };
    const withdrawn = this.withdrawBuffered();
    this.logger.debug('Kafka listener assigned', { group: this.groupId, generation: this.generation, assignment: Object.fromEntries(assignment), withdrawn });
  }

  /** Takes back what this consumer received and the listener did not hand to the callback yet; the broker gives it again. */
  private withdrawBuffered(): number {
    const stale = this.sink?.withdraw((m) => this.reads.includes((m as NotificationMessage<TrackedDelivery>).delivery.record.topic)) ?? [];
    for (const m of stale) this.inbound.abandon(m as NotificationMessage<TrackedDelivery>);
    return stale.length;
  }

  /** Waits HANDOVER_GRACE_MS, then reads what the group committed on the newly owned partitions. */
  private async readHandover(generation: number, partitions: Assignment): Promise<void> {
    await this.sleep(HANDOVER_GRACE_MS);
    if (generation !== this.generation || this.stopped || this.rebalancing) return;
    try {
      const committed = await (await this.conn.getClient()).committedOffsets(this.groupId, partitions);
      if (generation === this.generation) this.handedOver = committed;
    } catch (err) {
      // At-least-once still holds: the records are handled from where the consumer started.
      this.logger.debug('Could not read the committed offsets of newly owned partitions', { group: this.groupId, err });
    }
  }

  private onRecords(records: readonly IncomingRecord[]): Promise<void> | void {
    if (this.stopped || this.rebalancing || records.length === 0) return;
    const handover = this.handover;
    const key = partitionKey(records[0].topic, records[0].partition);
    if (handover?.keys.has(key)) {
      // kafkajs hands one partition's batches over one at a time: this partition's next batch waits for this one.
      return handover.ready.then(() => {
        handover.keys.delete(key);
        // After another rebalance the partition's owner reads these records again from the last commit.
        if (handover.generation === this.generation) return this.onRecords(records);
      });
    }
    // Only the retry reader reads copies requeued with a backoff (the `notBefore` header).
    const due = this.retries === undefined ? this.firstNotDue(records) : -1;
    if (due !== -1) return this.holdUntilDue(records, key, due);
    this.handOut(records, key);
    if (this.inbound.unsettled >= this.options.maxPollRecords && !this.stopped) {
      return new Promise<void>((resolve) => this.roomWaiters.push(resolve));
    }
  }

  /**
   * Hands out the records before `due` (the first one whose requeue backoff is not over) and holds
   * the rest of the batch until it is due: copies requeued later come later on the partition, so
   * holding the partition delays nothing due sooner. After a rebalance or stop the held records are
   * left to the partition's owner, which reads them again from the last commit.
   */
  private holdUntilDue(records: readonly IncomingRecord[], key: string, due: number): Promise<void> {
    if (due > 0) this.handOut(records.slice(0, due), key);
    const generation = this.generation;
    return this.sleep(delayUntil(this.notBeforeOf(records[due]), Date.now())).then(() => {
      if (generation === this.generation) return this.onRecords(records.slice(due));
    });
  }

  /** Resolves after `ms`, or at once on stop or rebalance. */
  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms).unref();
      this.sleepers.add(wake);
    });
  }

  private wakeSleepers(): void {
    for (const wake of [...this.sleepers]) wake();
  }

  /** Hands out one partition's records (ConsumerHandlers.onRecords): its offsets, and the position below which its records were settled already (carried, or handed over), are looked up once. */
  private handOut(records: readonly IncomingRecord[], key: string): void {
    const generation = this.generation;
    const beforeDispatch = this.options.commitMode === 'before-dispatch';
    const offsets = this.offsetsOf(key);
    const done = laterOf(this.carried.get(key), this.handedOver.get(key));
    for (const record of records) {
      const offset = Number(record.offset);
      if (!offsets.track(offset)) {
        // Handed out before in this generation: that delivery's outcome stands, it is not run twice.
        this.logger.debug('Skipping a record read again in the same group generation', { topic: record.topic, partition: record.partition, offset: record.offset });
        continue;
      }
      const parsed = this.headersOf(record);
      const origin = parsed.ok ? parsed.headers.originalTopic : parsed.originalTopic;
      const delivery: TrackedDelivery = { record, offset, offsets, deliveries: parsed.ok ? parsed.headers.previousDeliveries + 1 : 1, originalTopic: origin };
      if (done !== undefined && offset < done) {
        // Settled here in an earlier generation (its commit had not gone through), or by the previous owner.
        this.settle(delivery, generation);
        continue;
      }
      if (!parsed.ok) {
        this.setAside(delivery, parsed.reason, generation);
        continue;
      }
      const message = this.receive(record.value ?? '', delivery, generation);
      if (beforeDispatch) this.settle(delivery, generation);
      if (message !== undefined) this.sink!.deliver(message);
    }
  }

  /** A record's retry headers (delivery count, original topic, due time), checked against what this listener writes. */
  private headersOf(record: IncomingRecord): ParsedRetryHeaders {
    return parseRetryHeaders(record, this.retryRules.get(record.topic) ?? { originalTopic: record.topic, requeueBackoff: this.options.requeueBackoff });
  }

  /** When a retry copy is due, ms since the epoch; 0 for any other record, and for forged headers (handOut sets those aside). */
  private notBeforeOf(record: IncomingRecord): number {
    const parsed = this.headersOf(record);
    return parsed.ok ? parsed.headers.notBefore : 0;
  }

  /** The index of the first record whose requeue backoff is not over yet, or -1. A record without a due time is not parsed here (handOut parses every record). */
  private firstNotDue(records: readonly IncomingRecord[]): number {
    let now: number | undefined;
    for (let i = 0; i < records.length; i++) {
      if (records[i].headers[HEADERS.notBefore] === undefined) continue;
      now ??= Date.now();
      if (this.notBeforeOf(records[i]) > now) return i;
    }
    return -1;
  }

  /**
   * A record whose tidings headers tidings could not have written (forged, or corrupted): never
   * obeyed, nor handled; it goes to the dead letters of the topic it was read for, with why.
   */
  private setAside(delivery: TrackedDelivery, reason: string, generation: number): void {
    const { record, originalTopic } = delivery;
    const topic = deadLetterTopic(originalTopic);
    const where = { topic: record.topic, partition: record.partition, offset: record.offset, group: this.group, deadLetterTopic: topic, reason };
    this.logger.warn('Dead-lettering a record with malformed tidings headers (not handled)', where);
    const headers = { [HEADERS.deliveries]: '1', [HEADERS.originalTopic]: originalTopic, [HEADERS.group]: this.group, [HEADERS.error]: `malformed headers: ${reason}`, [HEADERS.deadAt]: new Date().toISOString(), [HEADERS.consumer]: this.conn.clientId };
    this.conn.produce({ topic, key: record.key ?? undefined, value: record.value?.toString('utf8') ?? '', headers }).then(
      () => {
        this.stats?.deadLettered(originalTopic, 'malformed', this.group);
        this.trimDeadLetters(topic);
        this.settle(delivery, generation);
      },
      (err: unknown) => this.logger.error('Could not dead-letter a record with malformed headers; it is read again after the next rebalance', { ...where, err }),
    );
  }

  /** With `dead_letter_max_len`: trims `dead` once more dead letters arrived; one trim per topic at a time (each reads the topic). */
  private trimDeadLetters(dead: string): void {
    const max = this.options.deadLetterMaxLen;
    if (max <= 0) return;
    const running = this.trims.get(dead);
    if (running) {
      running.again = true;
      return;
    }
    const state = { again: false };
    this.trims.set(dead, state);
    const run = (): Promise<void> =>
      this.deadLetters
        .trim(dead, max)
        .then((dropped) => this.stats?.deadLettersDropped(deadLetterOrigin(dead), dropped, this.group))
        .catch((err: unknown) => this.logger.warn('Could not trim the dead letters to dead_letter_max_len', { topic: dead, err }))
        .then(() => {
          if (!state.again || this.cleaning) return void this.trims.delete(dead);
          state.again = false;
          return run();
        });
    void run();
  }

  private offsetsOf(key: string): PartitionOffsets {
    let offsets = this.partitions.get(key);
    if (!offsets) this.partitions.set(key, (offsets = new PartitionOffsets()));
    return offsets;
  }

  /** Marks the delivery done in its generation and schedules a commit; false for another generation's delivery. */
  private settle(delivery: TrackedDelivery, generation: number): boolean {
    if (generation !== this.generation) {
      const { record } = delivery;
      this.logger.debug('Not committing a record of an earlier group generation (a new owner reads it again)', { topic: record.topic, partition: record.partition, offset: record.offset });
      return false;
    }
    if (!delivery.offsets.settle(delivery.offset)) return false;
    if (this.inbound.unsettled < this.options.maxPollRecords) this.wakeRoomWaiters();
    this.scheduleCommit();
    return true;
  }

  private wakeRoomWaiters(): void {
    if (this.roomWaiters.length === 0) return;
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const wake of waiters) wake();
  }

  private scheduleCommit(): void {
    if (this.commitTimer || this.cleaning) {
      if (this.cleaning) this.commitAgain = true;
      return;
    }
    if (this.committing) {
      this.commitAgain = true;
      return;
    }
    this.commitTimer = setTimeout(() => {
      this.commitTimer = undefined;
      void this.flushCommits();
    }, this.options.commitInterval);
  }

  /** Commits the positions carried over from the last generation (any member of a generation may commit any partition). */
  private async commitCarried(generation: number): Promise<void> {
    const carried = [...this.carried];
    const offsets = carried.map(([key, offset]) => {
      const [topic, partition] = key.split('\0');
      return { topic, partition: Number(partition), offset: offset.toString() };
    });
    try {
      await this.consumer?.commit(offsets);
      if (generation === this.generation) for (const [key, offset] of carried) if (this.carried.get(key) === offset) this.carried.delete(key);
    } catch (err) {
      this.logger.debug('Could not commit positions carried over from the last generation', { group: this.groupId, err });
    }
  }

  /** Commits every partition whose commit point moved; one commit request at a time. */
  private async flushCommits(): Promise<void> {
    const consumer = this.consumer;
    if (!consumer) return;
    const generation = this.generation;
    const points: Array<{ offsets: PartitionOffsets; topic: string; partition: number; offset: number }> = [];
    for (const [key, offsets] of this.partitions) {
      const offset = offsets.commitPoint();
      if (offset === undefined) continue;
      const [topic, partition] = key.split('\0');
      points.push({ offsets, topic, partition: Number(partition), offset });
    }
    if (points.length === 0) return;
    this.commitAgain = false;
    const committing = consumer.commit(points.map((p) => ({ topic: p.topic, partition: p.partition, offset: p.offset.toString() }))).then(
      () => {
        if (generation === this.generation) for (const p of points) p.offsets.committedUpTo(p.offset);
      },
      (err: unknown) => this.logger.debug('Commit failed (the group rebalanced or the broker is away); records are read again from the last commit', { group: this.groupId, err }),
    );
    this.committing = committing;
    await committing;
    this.committing = undefined;
    if (this.commitAgain && !this.cleaning) {
      this.commitAgain = false;
      this.scheduleCommit();
    }
  }
}

/** The later of two positions, either of which may be unknown. */
function laterOf(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || (b !== undefined && b > a) ? b : a;
}

