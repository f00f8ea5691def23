// RPC over Kafka (oslo has none): requests on `<topic>` (one consumer group per topic and
// exchange: each request to one server), `<topic>.<server>` (a group per server name) and
// `<topic>_fanout` (read by every server directly, no group); replies on a `reply_<hex>` topic per
// transport read directly from its end, so a call never pays a group join; servers produce their
// replies in the background, off the executor (sendReply). oslo's rules (reply matching,
// timeouts, ack on receipt, dedupe) are the shared ones in src/contract. Topic and group names
// come from topology.ts.
import type { SendOptions } from '../../contract/base-driver.js';
import { decodeBody, newHexId } from '../../contract/envelope.js';
import { InboundPushSource } from '../../contract/inbound.js';
import type { RpcIncomingMessage } from '../../contract/incoming-message.js';
import type { ReplySender } from '../../contract/messages.js';
import type { CallRegistry, PendingCall } from '../../contract/pending-replies.js';
import type { Context, DriverMessage } from '../../contract/types.js';
import { encodeRpcRequest } from '../../contract/wire.js';
import { MessageDeliveryFailure, MessagingError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { settledWithin } from '../../core/lifecycle.js';
import { retryAfterFirst, withRetry } from '../../core/retry.js';
import type { Target } from '../../core/target.js';
import { partitionKey, type IncomingRecord, type KafkaConsumerHandle, type KafkaReaderHandle, type OutgoingRecord } from './client/index.js';
import type { KafkaConnection } from './connection.js';
import type { ResolvedKafkaOptions } from './options.js';
import { leaseReplyTopic, releaseReplyTopic } from './reply-topics.js';
import { fanoutTopic, HEADERS, isReplyTopic, requestTopic, serverGroup } from './topology.js';

/**
 * Most replies a transport produces in the background at once. Replies normally leave within a
 * round trip; this many in flight means their topics are failing, and past it a reply is dropped
 * (logged, counted) rather than kept in memory.
 */
export const MAX_REPLIES_IN_FLIGHT = 1024;

/** The delivery handle of a request (`unwrap()` returns it). */
export interface KafkaRpcDelivery {
  readonly record: IncomingRecord;
  /** The consumer group it was read in; undefined for a fanout cast (read without a group). */
  readonly group?: string;
}

/** The caller and replier side of one transport: requests out, replies in and out. */
export class KafkaRpc implements ReplySender {
  /** This transport's reply topic (`reply_<hex>`, leased from this process's: reply-topics.ts), created on the first call. */
  readonly replyTopic = leaseReplyTopic();
  private replyReader?: Promise<KafkaReaderHandle>;
  private closed = false;
  /** Replies being produced in the background (sendReply), each removed once produced or given up. */
  private readonly replying = new Set<Promise<void>>();
  private lost = 0;

  constructor(
    private readonly conn: KafkaConnection,
    private readonly options: ResolvedKafkaOptions,
    private readonly logger: Logger,
    private readonly pending: CallRegistry,
    /** Aborted when the transport is cleaned up: retries stop at once. */
    private readonly closing: AbortSignal,
  ) {}

  /** A call or cast (see BaseDriver.doSend): casts resolve once the broker acknowledged. */
  async send(target: Target, exchange: string, ctx: Context, message: DriverMessage, options: SendOptions): Promise<unknown> {
    const topic = target.topic as string;
    const destination = target.fanout ? fanoutTopic(topic, this.options.vhost) : requestTopic(topic, target.server, this.options.vhost);
    const headers = target.fanout ? undefined : { [HEADERS.exchange]: exchange };
    if (!options.waitForReply) {
      const record = { topic: destination, value: encodeRpcRequest(message, ctx, undefined, this.options.maxMessageBytes), headers };
      await this.produce(record, options);
      return undefined;
    }
    const msgId = newHexId();
    // Encoded before anything happens: a value JSON cannot carry fails here, nothing sent.
    const value = encodeRpcRequest(message, ctx, { msgId, replyQueue: this.replyTopic, callMonitorTimeout: options.callMonitorTimeout }, this.options.maxMessageBytes);
    const call = this.pending.register(msgId, { topic, timeout: options.timeout, callMonitorTimeout: options.callMonitorTimeout, signal: options.signal, collectReplies: options.collectReplies });
    // The reply reader is positioned before the request leaves, so the reply cannot be missed.
    this.ensureReplyReader()
      .then(() => this.produce({ topic: destination, value, headers }, options, call))
      .then(
        () => call.setUndelivered(undefined),
        (err: unknown) => call.fail(err instanceof MessagingError ? err : new MessageDeliveryFailure(String(err), { cause: err })),
      );
    return call.promise;
  }

  /** ReplySender: replies larger than this become failure replies (wire.ts encodeReply). */
  get maxMessageBytes(): number {
    return this.options.maxMessageBytes;
  }

  /** @internal True for the reply topics this driver creates (`reply_<hex>`): a call naming any other is dropped. */
  isReplyAddress(address: string): boolean {
    return isReplyTopic(address);
  }

  /** Replies given up since the transport was created: undeliverable after their retries, or dropped past MAX_REPLIES_IN_FLIGHT. */
  get lostReplies(): number {
    return this.lost;
  }

  /** Replies being produced in the background now. */
  get repliesInFlight(): number {
    return this.replying.size;
  }

  /**
   * @internal Hands a reply to a background sender and returns at once, so a reply never holds an
   * executor slot: its first attempt shares a produce request with the replies of the same turn,
   * retries (3, 1 s then backing off) go alone, so a reply topic the broker refuses cannot fail a
   * healthy reply's request twice. At most MAX_REPLIES_IN_FLIGHT are in the background; past that
   * a reply is dropped as one nobody could receive. Lost replies are logged (topic and call id,
   * never the body) and counted (`lostReplies`); the caller times out. Never throws.
   */
  sendReply(replyQueue: string, msgId: string, body: string): void {
    if (this.replying.size >= MAX_REPLIES_IN_FLIGHT) {
      this.lost++;
      this.logger.warn('Too many replies in flight; dropping a reply', { replyTopic: replyQueue, msgId, inFlight: this.replying.size, lostReplies: this.lost });
      return;
    }
    const record = { topic: replyQueue, value: body };
    const sending = retryAfterFirst(
      this.conn.produce(record),
      () => this.conn.produceAlone(record),
      () => ({
        retry: 3,
        signal: this.closing,
        isRetriable: (e) => !this.closed && e instanceof MessagingError && e.retriable,
        onRetry: ({ attempt, delayMs, error }) => this.logger.debug('Producing a reply failed; retrying', { attempt, delayMs, replyTopic: replyQueue, msgId, err: error }),
      }),
    ).then(
      () => {
        this.replying.delete(sending);
      },
      (err: unknown) => {
        this.replying.delete(sending);
        this.lost++;
        this.logger.warn('Could not send a reply', { replyTopic: replyQueue, msgId, err, lostReplies: this.lost });
      },
    );
    this.replying.add(sending);
  }

  /**
   * Resolves once the replies in the background now are produced or given up, or after
   * `timeoutMs`, whichever is first (a stopping server, a closing transport). Never rejects.
   */
  async repliesSettled(timeoutMs: number): Promise<void> {
    if (this.replying.size > 0) await settledWithin(this.replying, timeoutMs);
  }

  /**
   * Stops reading replies (the driver fails the waiting calls) and waits up to `timeoutMs` for the
   * replies still being produced (their retries already stopped: `closing` is aborted); the reply
   * topic goes back for the next transport to reuse.
   */
  async close(timeoutMs: number): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const reader = this.replyReader;
    this.replyReader = undefined;
    await Promise.all([reader?.then((r) => r.close()).catch(() => undefined), this.repliesSettled(timeoutMs)]);
    releaseReplyTopic(this.replyTopic);
  }

  /** Creates the reply topic (or has it auto-created) and reads it from its end, once per transport. */
  private ensureReplyReader(): Promise<KafkaReaderHandle> {
    this.replyReader ??= (async () => {
      const client = await this.conn.getClient();
      await client.ensureTopics([this.replyTopic]);
      const reader = await client.read({ topics: [this.replyTopic], maxWaitTime: this.options.rpcMaxWait }, (records) => this.onReplies(records));
      if (this.closed) await reader.close();
      this.logger.debug('Reading replies', { replyTopic: this.replyTopic });
      return reader;
    })().catch((err: unknown) => {
      this.replyReader = undefined;
      throw err;
    });
    return this.replyReader;
  }

  private onReplies(records: readonly IncomingRecord[]): void {
    for (const record of records) {
      let data: DriverMessage;
      try {
        data = decodeBody(record.value ?? '');
      } catch (err) {
        this.logger.warn('Dropping a malformed reply', { replyTopic: this.replyTopic, partition: record.partition, offset: record.offset, reason: err instanceof Error ? err.message : String(err) });
        continue;
      }
      this.pending.accept(data);
    }
  }

  private produce(record: OutgoingRecord, options: Pick<SendOptions, 'retry' | 'signal'>, call?: PendingCall): Promise<void> {
    return withRetry(
      () => {
        if (call?.isOver) return Promise.reject(new MessageDeliveryFailure('The call is over; not producing its request again'));
        return this.conn.produce(record).catch((err: unknown) => {
          call?.setUndelivered(err);
          throw err;
        });
      },
      {
        retry: options.retry,
        signal: options.signal ? AbortSignal.any([options.signal, this.closing]) : this.closing,
        isRetriable: (e) => !this.closed && call?.isOver !== true && e instanceof MessagingError && e.retriable,
        onRetry: ({ attempt, delayMs, error }) => this.logger.warn('Producing an RPC record failed; retrying', { attempt, delayMs, topic: record.topic, err: error }),
      },
    );
  }
}

/**
 * The RPC listener: one server's subscriptions (the topic's group, the server's group and the
 * fanout topic read directly), an InboundPushSource as the other drivers' listeners. Requests are
 * committed on receipt (oslo acks before dispatch).
 */
export class KafkaRpcServer extends InboundPushSource<RpcIncomingMessage, KafkaRpcDelivery> {
  private consumers: Array<{ group: string; handle: KafkaConsumerHandle }> = [];
  private fanoutReader?: KafkaReaderHandle;
  private stopped = false;
  private cleaning?: Promise<void>;
  /** Positions to commit (one past the last request received), by group then `topic\0partition`. */
  private readonly toCommit = new Map<string, Map<string, bigint>>();
  private committing?: Promise<void>;
  private commitAgain = false;
  private readonly topics: { shared: string; own: string; fanout: string };

  constructor(
    private readonly conn: KafkaConnection,
    /** The transport's reply sender: cleanup waits (bounded) for the replies it is still producing. */
    private readonly replies: KafkaRpc,
    topic: string,
    server: string,
    /** The exchange the server listens on: requests through another one are skipped. */
    private readonly exchange: string,
    private readonly options: ResolvedKafkaOptions,
    private readonly logger: Logger,
  ) {
    super('rpc', { logger, dedupWindow: options.dedupWindow, replies, maxMessageBytes: options.maxMessageBytes });
    this.topics = { shared: requestTopic(topic, undefined, options.vhost), own: requestTopic(topic, server, options.vhost), fanout: fanoutTopic(topic, options.vhost) };
  }

  /** Joins both groups and positions the fanout reader; resolves once all have their partitions. */
  async subscribe(): Promise<void> {
    const client = await this.conn.getClient();
    const { shared, own, fanout } = this.topics;
    await client.ensureTopics([shared, own, fanout]);
    const join = async (topic: string): Promise<void> => {
      const group = serverGroup(this.exchange, topic);
      const handle = await client.consume(
        { groupId: group, topics: [topic], fromBeginning: false, maxWaitTime: this.options.rpcMaxWait },
        { onRecords: (records) => this.onRecords(records, group), onAssignment: () => undefined, onRebalance: () => void this.flushCommits() },
      );
      this.consumers.push({ group, handle });
      if (this.toCommit.get(group)?.size) void this.flushCommits();
    };
    const readFanout = async (): Promise<void> => {
      this.fanoutReader = await client.read({ topics: [fanout], maxWaitTime: this.options.rpcMaxWait }, (records) => this.onRecords(records, undefined));
      if (this.stopped) await this.fanoutReader.close();
    };
    await Promise.all([join(shared), join(own), readFanout()]);
    this.logger.debug('Kafka RPC server subscribed', { topics: this.topics, exchange: this.exchange });
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const c of this.consumers) c.handle.pause();
    await this.fanoutReader?.close();
  }

  /** Also waits, up to `shutdownTimeout`, for the replies still being produced (handlers hand them off). */
  cleanup(): Promise<void> {
    this.cleaning ??= (async () => {
      await this.stop();
      await this.replies.repliesSettled(this.options.shutdownTimeout);
      await this.committing;
      await this.flushCommits();
      await Promise.all(this.consumers.map((c) => c.handle.close()));
    })();
    return this.cleaning;
  }

  ack(delivery: KafkaRpcDelivery): boolean {
    this.settle(delivery);
    return true;
  }

  requeue(delivery: KafkaRpcDelivery): void {
    // Never asked for (RPC requests are acknowledged on receipt); committed past all the same.
    this.settle(delivery);
  }

  reject(delivery: KafkaRpcDelivery): void {
    this.settle(delivery);
  }

  describe(delivery: KafkaRpcDelivery): Record<string, unknown> {
    return { topic: delivery.record.topic, partition: delivery.record.partition, offset: delivery.record.offset, group: delivery.group };
  }

  address(delivery: KafkaRpcDelivery): string {
    return delivery.record.topic;
  }

  private onRecords(records: readonly IncomingRecord[], group: string | undefined): void {
    if (this.stopped) return;
    for (const record of records) {
      const delivery: KafkaRpcDelivery = { record, group };
      const through = record.headers[HEADERS.exchange];
      if (through !== undefined && through !== this.exchange) {
        this.settle(delivery);
        continue;
      }
      const message = this.receive(record.value ?? '', delivery, 0);
      if (message !== undefined) this.sink!.deliver(message);
    }
  }

  /** Records the request as received and commits soon (one commit request in flight per server). */
  private settle({ record, group }: KafkaRpcDelivery): void {
    if (group === undefined) return;
    let positions = this.toCommit.get(group);
    if (!positions) this.toCommit.set(group, (positions = new Map()));
    const key = partitionKey(record.topic, record.partition);
    const next = BigInt(record.offset) + 1n;
    if ((positions.get(key) ?? -1n) < next) positions.set(key, next);
    if (this.committing) this.commitAgain = true;
    else void this.flushCommits();
  }

  private requeuePositions(group: string, positions: Map<string, bigint>): void {
    let current = this.toCommit.get(group);
    if (!current) this.toCommit.set(group, (current = new Map()));
    for (const [key, offset] of positions) if ((current.get(key) ?? -1n) < offset) current.set(key, offset);
  }

  private async flushCommits(): Promise<void> {
    if (this.committing) return this.committing;
    const batches = [...this.toCommit].filter(([, positions]) => positions.size > 0);
    if (batches.length === 0) return;
    this.toCommit.clear();
    this.commitAgain = false;
    this.committing = (async () => {
      await Promise.all(
        batches.map(async ([group, positions]) => {
          const handle = this.consumers.find((c) => c.group === group)?.handle;
          if (!handle) {
            // Received while its consume() was still resolving: committed once the handle is known.
            this.requeuePositions(group, positions);
            return;
          }
          const offsets = [...positions].map(([key, offset]) => {
            const [topic, partition] = key.split('\0');
            return { topic, partition: Number(partition), offset: offset.toString() };
          });
          try {
            await handle.commit(offsets);
          } catch (err) {
            // Rebalancing: the next owner of a partition may read these requests again (see README).
            this.logger.debug('Could not commit received RPC requests', { group, err });
          }
        }),
      );
    })();
    try {
      await this.committing;
    } finally {
      this.committing = undefined;
    }
    if (this.commitAgain) {
      this.commitAgain = false;
      await this.flushCommits();
    }
  }
}
