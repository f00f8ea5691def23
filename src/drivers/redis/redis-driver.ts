// The Redis driver: notifications on Redis Streams with consumer groups (a pool is a group),
// leases and dead letters (redis-listener.ts); RPC requests on lists popped with BLMPOP (fanout
// casts in streams), replies on a per-transport list read with BLMPOP. One command connection per
// driver; one connection per blocking reader.
import { setMaxListeners } from 'node:events';
import type { Socket } from 'node:net';
import { hostname } from 'node:os';
import { BaseDriver, type ConnectionState, type DriverInit, type ListenOptions, type NotificationListenOptions, type NotificationSendOptions, type SendOptions, type TargetAndPriority } from '../../contract/base-driver.js';
import type { DriverCapabilities } from '../../contract/capabilities.js';
import { fanoutAddress, newReplyAddress, notificationAddress, serverAddress, topicAddress } from '../../contract/addressing.js';
import { decodeBody, newHexId } from '../../contract/envelope.js';
import type { IncomingMessage, ReceivedMessage, RpcIncomingMessage } from '../../contract/incoming-message.js';
import type { DeadLetterStore } from '../../contract/dead-letters.js';
import type { ResolvedPoolQuery } from '../../contract/addressing.js';
import type { Inspection, PoolView } from '../../contract/inspection.js';
import type { Listener } from '../../contract/listener.js';
import type { ReplySender } from '../../contract/messages.js';
import type { PendingCall } from '../../contract/pending-replies.js';
import { isPriority, type Context, type DriverMessage } from '../../contract/types.js';
import { encodeNotification, encodeRpcRequest } from '../../contract/wire.js';
import { MessageDeliveryFailure, MessagingError } from '../../core/errors.js';
import { abortableSleep, retryAfterFirst, withRetry, type RetryPolicy } from '../../core/retry.js';
import type { Target } from '../../core/target.js';
import { closeClient, createClient, createGroup, dropClient, nextLoopTurn, runScript, type RedisClient } from './connection.js';
import { RedisDeadLetters } from './dead-letters.js';
import { inspectRedisPools, listRedisRpcTopics, REDIS_INSPECTION } from './inspection.js';
import { encodeListRequest } from './entry-fields.js';
import { toMessagingError } from './errors.js';
import { TickBatches } from './tick-batches.js';
import { resolveOptions, type ResolvedRedisOptions } from './options.js';
import { RedisListener } from './redis-listener.js';
import { sweepStream, type ServerRegistration, type StreamSpec } from './listener-parts.js';
import { SCRIPTS, type ScriptName } from './scripts/index.js';
import { BODY_FIELD, DEFAULT_GROUP, poolGroup, replyKey, SERVER_GROUP, TopicKeys, topicShards } from './topology.js';

const CAPABILITIES: DriverCapabilities = Object.freeze({ rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true, deadLetters: true });

/** Bound on the streams whose last sweep a notifier remembers; past it the memo starts over (names are unbounded input). */
const SWEPT_MEMO_LIMIT = 10_000;

/**
 * Python oslo has no Redis driver, so everything this driver writes (requests, replies,
 * notifications) is oslo's 1.0 form, the inner message itself, never wrapped in the 2.0 envelope
 * (a JSON string inside JSON: the inner text escaped, then parsed twice): ~10% of a call's CPU
 * (bench/README.md). Every tidings reader takes both forms (`deserializeEnvelope`), so senders and
 * listeners of earlier versions mix with these.
 */
const BARE = true;

/** Replies popped per BLMPOP, and the most one RPUSH pushes. */
const REPLY_BATCH = 128;
/** The most requests one RPUSH pushes. */
const REQUEST_BATCH = 128;

/**
 * One command of a write: a Redis command, or one of the driver's scripts with its keys first.
 * Command names are lower case, here and wherever the driver sends per message: ioredis
 * lower-cases a command's name at each of its flag lookups (several per command), which returns a
 * lower-case literal as it is but copies an upper-case one, and the copy is then looked up in V8's
 * string table at every lookup: ~2% of a sequential call's instructions (bench/README.md).
 */
type WriteCommand = readonly [name: string, ...args: (string | number)[]];

function isScript(name: string): name is ScriptName {
  return Object.hasOwn(SCRIPTS, name);
}

/** Fails on a failed command of a pipeline (its `exec()` results). */
function checkExec(results: unknown): void {
  if (!Array.isArray(results)) throw new Error('pipeline aborted');
  for (const r of results as unknown[]) {
    const err = Array.isArray(r) ? (r[0] as unknown) : r;
    if (err instanceof Error) throw err;
  }
}

/** A reply waiting for its tick's RPUSH to its reply list (`sendReply`). */
interface OutgoingReply {
  readonly body: string;
  readonly msgId: string;
}

/** A request to a list whose stream was seen (`publishRequest`). */
interface OutgoingRequest {
  readonly stream: string;
  readonly element: string;
}

export class RedisDriver extends BaseDriver implements ReplySender {
  readonly name = 'redis';
  readonly capabilities = CAPABILITIES;
  /** The resolved options (the password is non-enumerable: never shown when logged). */
  readonly options: ResolvedRedisOptions;
  private cmd?: RedisClient;
  private replyClient?: RedisClient;
  private replyQueueName?: string;
  private replyLoop?: Promise<void>;
  /** Streams whose default group this driver created (or found): notifications skip the declare. */
  private readonly declared = new Map<string, true | Promise<void>>();
  /** RPC streams seen to exist (`publishRequest`): requests to them skip the script. */
  private readonly streamsSeen = new Map<string, true>();
  /** When the notifier last swept each stream it writes (`boundBacklog`). */
  private readonly lastSwept = new Map<string, number>();
  private shardCursor = 0;
  /** The keys of each topic written to, by exchange and topic (shard tags are searched for once). */
  private readonly shardKeys = new Map<string, Map<string, TopicKeys[]>>();
  /** Topics in `shardKeys`, over every exchange. */
  private shardKeysSize = 0;
  /** The command connection's socket is corked until the end of this tick (coalesceWrites). */
  private corked = false;
  /** Replies of one tick, per reply queue: one RPUSH each (`sendReply`). */
  private readonly outgoingReplies = new TickBatches<OutgoingReply>(REPLY_BATCH, (queue, replies) => this.pushReplies(queue, replies));
  /** Requests of one tick, per request list: one RPUSH and one EXISTS each (`publishRequest`). */
  private readonly outgoingRequests = new TickBatches<OutgoingRequest>(REQUEST_BATCH, (list, requests) => this.pushRequests(list, requests));
  private listenerCount = 0;
  private readonly instance = `${hostname()}:${process.pid}:${newHexId().slice(0, 8)}`;
  /** Aborted by cleanup(): retries and loops stop waiting at once. */
  private readonly closing = new AbortController();

  constructor(init: DriverInit) {
    super(init);
    this.options = resolveOptions(init.url, init.options);
    // Every send waiting out a retry backoff listens on it (removed after): many at once during an outage is no leak.
    setMaxListeners(0, this.closing.signal);
  }

  /** The transport's reply queue (`reply_<hex>`), once a call was made. */
  get replyQueue(): string | undefined {
    return this.replyQueueName;
  }

  /** The command connection's ioredis status: `ready` is connected, `reconnecting` after a loss. */
  protected override connectionState(): ConnectionState {
    const status = this.cmd?.status;
    return { connected: status === 'ready', blocked: false, reconnecting: status === 'reconnecting' };
  }

  /** The key prefix of everything this driver writes. */
  get keyPrefix(): string {
    return this.options.keyPrefix;
  }

  protected async doSend(target: Target, ctx: Context, message: DriverMessage, options: SendOptions): Promise<unknown> {
    const topic = target.topic as string;
    const exchange = this.exchangeFor(target);
    if (target.fanout) {
      const keys = this.topicKeys(exchange, topic)[0];
      const fanout = (body: string, call?: PendingCall) => this.withRetry(() => runScript(this.commands(), 'tidingsFanout', [keys.servers], [Date.now(), body]), options.retry, options.signal, call);
      if (!options.waitForReply) {
        await fanout(encodeRpcRequest(message, ctx, undefined, this.options.maxMessageBytes, BARE));
        return undefined;
      }
      // collectReplies (discovery): every live server's inbox gets the call.
      return this.sendCall(topic, ctx, message, options, fanout);
    }
    let stream: string;
    let list: string;
    if (target.server) {
      const keys = this.topicKeys(exchange, topic)[0];
      stream = keys.serverStream(target.server);
      list = keys.serverList(target.server);
    } else {
      const keys = this.nextShard(exchange, topic);
      stream = keys.topicStream;
      list = keys.topicList;
    }
    if (!options.waitForReply) {
      await this.publishRequest(stream, list, encodeRpcRequest(message, ctx, undefined, this.options.maxMessageBytes, BARE), undefined, options.retry, options.signal);
      return undefined;
    }
    const deadline = options.timeout !== undefined ? Date.now() + options.timeout : undefined;
    return this.sendCall(topic, ctx, message, options, (body, call) => this.publishRequest(stream, list, body, deadline, options.retry, options.signal, call));
  }

  /** A call: registers it, then `deliver`s the request. It resolves on its reply; a failed write retries the same body or fails the call. */
  private sendCall(topic: string, ctx: Context, message: DriverMessage, options: SendOptions, deliver: (body: string, call: PendingCall) => Promise<unknown>): Promise<unknown> {
    const replyQueue = this.ensureReplies();
    const msgId = newHexId();
    const body = encodeRpcRequest(message, ctx, { msgId, replyQueue, callMonitorTimeout: options.callMonitorTimeout }, this.options.maxMessageBytes, BARE);
    const call = this.registerCall(msgId, topic, options);
    deliver(body, call).then(
      () => call.setUndelivered(undefined),
      (err: unknown) => call.fail(err instanceof MessagingError ? err : new MessageDeliveryFailure(String(err), { cause: err })),
    );
    return call.promise;
  }

  protected async doSendNotification(target: Target, ctx: Context, message: DriverMessage, options: NotificationSendOptions): Promise<void> {
    const address = target.topic as string;
    const cut = address.lastIndexOf('.');
    const topic = cut > 0 && isPriority(address.slice(cut + 1)) ? address.slice(0, cut) : address;
    const keys = this.nextShard(this.exchangeFor(target), topic);
    const stream = keys.notificationStream(address.slice(topic.length + 1) || address);
    // oslo's 1.0 form whatever the notifier's version (`BARE`).
    const body = encodeNotification(message, ctx, 1.0, undefined, this.options.maxMessageBytes);
    const storeAndForward = this.options.notificationStoreAndForward;
    await this.withRetry(async () => {
      if (!storeAndForward) return void (await this.write([['xadd', stream, 'NOMKSTREAM', '*', BODY_FIELD, body]]));
      if (this.declared.get(stream) !== true) await this.declareDefaultGroup(stream);
      await this.write([['xadd', stream, '*', BODY_FIELD, body]]);
    }, options.retry);
    if (storeAndForward && (this.options.notificationQueueMaxLength > 0 || this.options.notificationQueueTtl > 0)) this.boundBacklog(stream, keys);
  }

  /**
   * With a bound on the default group's backlog, the notifier sweeps the streams it writes itself,
   * at most once per `sweepInterval` each: a stream nobody listens to yet stays bounded too.
   */
  private boundBacklog(stream: string, keys: TopicKeys): void {
    const now = Date.now();
    if ((this.lastSwept.get(stream) ?? 0) > now - this.options.sweepInterval) return;
    if (this.lastSwept.size >= SWEPT_MEMO_LIMIT) this.lastSwept.clear();
    this.lastSwept.set(stream, now);
    sweepStream(this.commands(), stream, keys, '', this.options).catch((err: unknown) => this.logger.debug('Could not bound a notification stream', { stream, err: toMessagingError(err, 'sweep failed') }));
  }

  protected async doListen(target: Target, options: ListenOptions): Promise<Listener<RpcIncomingMessage>> {
    const topic = target.topic as string;
    const exchange = this.exchangeFor(target);
    const shards = topicShards(this.options.keyPrefix, exchange, topic, this.options.shards);
    const main = shards[0];
    const consumer = `${this.instance}:${++this.listenerCount}`;
    const inbox = main.inbox(newHexId());
    const ownStream = main.serverStream(target.server as string);
    // The streams are still read (senders of earlier versions write requests there); they also mark
    // where a server ever listened, so that a request to an address without one is dropped.
    const streams: StreamSpec[] = [
      ...shards.map((k) => ({ key: k.topicStream, topic: k, address: topicAddress(topic), createAt: '0' as const, list: k.topicList })),
      { key: ownStream, topic: main, address: serverAddress(topic, target.server as string), createAt: '0', ownStream: true, list: main.serverList(target.server as string) },
      { key: inbox, topic: main, address: fanoutAddress(topic), createAt: '0' },
    ];
    return this.startListener<RpcIncomingMessage>('rpc', streams, SERVER_GROUP, consumer, options, { servers: main.servers, inbox, serverStreams: main.serverStreams, ownStream });
  }

  protected async doListenForNotifications(targetsAndPriorities: readonly TargetAndPriority[], options: NotificationListenOptions): Promise<Listener<IncomingMessage>> {
    const streams: StreamSpec[] = [];
    const seen = new Set<string>();
    // The default group keeps what was sent before it (the notifier created it); a new pool starts
    // where `poolStart` says: the newest entry by default, as a new RabbitMQ pool queue does.
    const createAt = options.pool === undefined ? '0' : groupStart(this.options.poolStart);
    for (const [target, priority] of targetsAndPriorities) {
      for (const keys of topicShards(this.options.keyPrefix, this.exchangeFor(target), target.topic as string, this.options.shards)) {
        const key = keys.notificationStream(priority);
        if (seen.has(key)) continue;
        seen.add(key);
        streams.push({ key, topic: keys, address: notificationAddress(target.topic as string, priority), createAt });
      }
    }
    const consumer = `${this.instance}:${++this.listenerCount}`;
    return this.startListener<IncomingMessage>('notification', streams, poolGroup(options.pool), consumer, options);
  }

  /** The `:dead` streams of this driver's key prefix: list, replay and purge by address (dead-letters.ts). */
  override deadLetters(): DeadLetterStore {
    return new RedisDeadLetters({ keyPrefix: this.options.keyPrefix, shards: this.options.shards, defaultExchange: this.defaultExchange, commands: () => this.commands() });
  }

  /** Every pool (group) with its consumers, lag and pending entries; RPC topics by SCAN (inspection.ts). */
  override inspection(): Inspection {
    return REDIS_INSPECTION;
  }

  /** XINFO GROUPS on the notification streams of each address (every shard); creates nothing. */
  protected override async doInspectPools(query: ResolvedPoolQuery): Promise<PoolView[]> {
    return inspectRedisPools(this.commands(), query, this.options.keyPrefix, this.options.shards);
  }

  /** The topics whose RPC servers ever listened on `exchange` under this key prefix (SCAN, every master of a Cluster). */
  protected override async doListRpcTopics(exchange: string): Promise<string[]> {
    return listRedisRpcTopics(this.commands(), this.options.keyPrefix, exchange);
  }

  protected override cleanupStarted(): void {
    this.closing.abort();
  }

  protected async close(): Promise<void> {
    const replies = this.replyClient;
    this.replyClient = undefined;
    // Dropped, not quit: its BLMPOP fails at once, even one queued while Redis is unreachable.
    dropClient(replies);
    await this.replyLoop;
    await closeClient(this.cmd);
    this.logger.debug('Redis driver cleaned up');
  }

  /** `util.inspect` shows the redacted form only. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toString();
  }

  /** ReplySender: replies larger than this become failure replies (wire.ts encodeReply). */
  get maxMessageBytes(): number {
    return this.options.maxMessageBytes;
  }

  /** ReplySender: replies without oslo's envelope, as everything this driver writes (`BARE`). */
  get bareReplies(): boolean {
    return BARE;
  }

  /**
   * @internal A reply (or heartbeat) to a caller's reply list. Replies produced in the same tick
   * go out together: one RPUSH with its PEXPIRE per reply list, so the caller's BLMPOP wakes once
   * for all of them (16 calls in flight: ~4x fewer commands and wake-ups than one push per reply).
   * Resolves once Redis has them; never throws: the caller times out.
   */
  sendReply(replyQueue: string, msgId: string, body: string): Promise<void> {
    if (this.closed && !this.cmd) return Promise.resolve();
    return this.outgoingReplies.add(replyQueue, { body, msgId });
  }

  /**
   * Sends one tick's replies to `replyQueue`: RPUSH and PEXPIRE in one write, never rejects (a
   * failure is logged: the callers time out). Not in MULTI: Redis runs the commands of one read
   * of a connection back to back, and persists and replicates them in the same turn of its loop,
   * so both land or neither does, short of a connection cut between the two (a reply list left
   * without expiry: a leaked key, never a lost reply; a cut MULTI loses the reply instead). MULTI
   * and EXEC cost two more commands per batch: 0.68-0.77 of raw list RPC sequential with them,
   * 0.93 without (bench/README.md).
   */
  private async pushReplies(replyQueue: string, replies: readonly OutgoingReply[]): Promise<void> {
    try {
      const bodies = replies.map((r) => r.body);
      const key = replyKey(this.options.keyPrefix, replyQueue);
      const cmd = this.commands();
      if (this.options.mode === 'cluster') {
        // A Cluster client keeps a pipeline's commands together (and in order) through a redirect.
        checkExec(await cmd.pipeline().rpush(key, ...bodies).pexpire(key, this.options.replyTtl).exec());
      } else {
        // Plain commands issued back to back: one corked write, no ioredis Pipeline object per batch.
        this.coalesceWrites(cmd);
        await Promise.all([cmd.rpush(key, ...bodies), cmd.pexpire(key, this.options.replyTtl)]);
      }
    } catch (err) {
      this.logger.warn('Could not send a reply', { replyQueue, msgIds: replies.map((r) => r.msgId), err: toMessagingError(err, 'reply failed') });
    }
  }

  /** @internal The shared command connection (created on first use). */
  commands(): RedisClient {
    if (!this.cmd) {
      this.cmd = createClient(this.options, 'commands', this.logger);
      this.cmd.on('error', (err: Error) => this.noteConnectionError(err));
    }
    return this.cmd;
  }

  /**
   * Commands written on the command connection until the end of this tick leave in one socket
   * write (the socket is corked until nextTick): 16 sends in flight cost one write syscall, not 16,
   * without auto-pipelining's per-tick Pipeline objects. A Cluster client has no single socket.
   */
  private coalesceWrites(cmd: RedisClient): void {
    if (this.corked || cmd.status !== 'ready') return;
    const stream = (cmd as { stream?: Partial<Socket> }).stream;
    if (typeof stream?.cork !== 'function') return;
    this.corked = true;
    stream.cork();
    process.nextTick(() => {
      this.corked = false;
      stream.uncork!();
    });
  }

  /** The keys of `topic` on `exchange`, one shard after the other when `shards` > 1 (memoized: no key is built per send). */
  private nextShard(exchange: string, topic: string): TopicKeys {
    const shards = this.topicKeys(exchange, topic);
    return shards.length === 1 ? shards[0] : shards[this.shardCursor++ % shards.length];
  }

  /** Every shard's keys of `topic` on `exchange`, computed once per driver (the memo is bounded: names are unbounded input). */
  private topicKeys(exchange: string, topic: string): TopicKeys[] {
    let shards = this.shardKeys.get(exchange)?.get(topic);
    if (shards) return shards;
    // Past the bound the memo starts over, every exchange's topics with it.
    if (++this.shardKeysSize > SWEPT_MEMO_LIMIT) {
      this.shardKeys.clear();
      this.shardKeysSize = 1;
    }
    let byTopic = this.shardKeys.get(exchange);
    if (!byTopic) {
      byTopic = new Map();
      this.shardKeys.set(exchange, byTopic);
    }
    shards = topicShards(this.options.keyPrefix, exchange, topic, this.options.shards);
    byTopic.set(topic, shards);
    return shards;
  }

  private async startListener<M extends ReceivedMessage>(
    kind: 'rpc' | 'notification',
    streams: StreamSpec[],
    group: string,
    consumer: string,
    options: ListenOptions,
    registration?: ServerRegistration,
  ): Promise<Listener<M>> {
    const logger = this.logger.child({ listener: this.listenerCount, kind, group });
    const deps = {
      options: this.options,
      logger,
      commands: () => this.commands(),
      newReader: (name: string) => createClient(this.options, `reader:${name}`, logger),
      replies: this,
      stats: this.deliveryStats,
    };
    // A batch larger than the prefetch may still fill: the listener holds up to a whole batch.
    const limit = Math.max(this.options.prefetchCount, options.batchSize ?? 1);
    const source = new RedisListener<M>(kind, deps, streams, group, consumer, registration, limit);
    if (kind === 'notification') this.reportLag(source);
    return this.openListener(source, () => this.withRetry(() => source.start(), -1), { ...options, prefetchSize: limit, logger });
  }

  /** Creates the default group of a notification stream once per driver (store-and-forward). */
  private declareDefaultGroup(stream: string): Promise<void> {
    let p = this.declared.get(stream);
    if (p === true) return Promise.resolve();
    p ??= (async () => {
      try {
        await createGroup(this.commands(), stream, DEFAULT_GROUP, '0');
      } catch (err) {
        this.declared.delete(stream);
        throw toMessagingError(err, `Could not create the default group of ${stream}`, this.cmd);
      }
      this.declared.set(stream, true);
    })();
    this.declared.set(stream, p);
    return p;
  }

  /**
   * A request to its address's request list, kept only while the address's stream exists (a server
   * ever listened there): else it is dropped, as an unbound RabbitMQ queue drops it. A list costs
   * Redis about half the command time of a stream entry read in a consumer group (INFO
   * commandstats, bench/README.md), and a request is acknowledged on
   * receipt anyway: no lease to keep. The first request to an address goes through a script
   * (`tidingsRequest`: EXISTS, then RPUSH); once its stream was seen, requests of the same tick to
   * the same list go out as one RPUSH followed by one EXISTS in the same round trip (a script costs
   * Redis ~4 us more per request than both): when the stream is gone by then, the requests are taken
   * back (LREM). A server's leave and the reaping of a dead one are scripts, so the EXISTS after
   * the RPUSH sees whether the list still has a reader.
   */
  private publishRequest(stream: string, list: string, body: string, deadline: number | undefined, retry: number | undefined, signal: AbortSignal | undefined, call?: PendingCall): Promise<void> {
    const element = encodeListRequest(body, deadline);
    return this.withRetry(
      async () => {
        if (this.streamsSeen.has(stream)) return this.outgoingRequests.add(list, { stream, element });
        const [length] = await this.write([['tidingsRequest', stream, list, element]]);
        if (length === null) return void this.logger.debug('No server ever listened on this address; request dropped', { list });
        if (this.streamsSeen.size >= SWEPT_MEMO_LIMIT) this.streamsSeen.clear();
        this.streamsSeen.set(stream, true);
      },
      retry,
      signal,
      call,
    );
  }

  /** One tick's requests to `list` (all for the same stream): pushed, then taken back if the stream is gone. */
  private async pushRequests(list: string, requests: readonly OutgoingRequest[]): Promise<void> {
    const stream = requests[0].stream;
    const elements = requests.map((r) => r.element);
    const [, exists] = await this.write([['rpush', list, ...elements], ['exists', stream]]);
    if (Number(exists) === 1) return;
    this.streamsSeen.delete(stream);
    // A server that started since may have popped some already: they run, as if sent a moment later.
    const cmd = this.commands();
    await Promise.all(elements.map((element) => cmd.lrem(list, 1, element))).catch((err: unknown) => this.logger.warn('Could not take back requests to an address without a server', { list, err: toMessagingError(err, 'LREM failed') }));
    this.logger.debug('No server listens on this address any more; requests dropped', { list, count: elements.length });
  }

  /**
   * Commands written back to back on the command connection (one round trip); each is a command,
   * or one of the driver's scripts (its keys first). With `waitReplicas` they are followed by WAIT
   * in the same round trip. Resolves with their results, in order; fails on the first failure.
   */
  private async write(commands: readonly WriteCommand[]): Promise<unknown[]> {
    const cmd = this.commands();
    const wanted = this.options.waitReplicas;
    this.coalesceWrites(cmd);
    try {
      if (wanted === 0) return await Promise.all(commands.map(([name, ...args]) => (isScript(name) ? runScript(cmd, name, args.slice(0, SCRIPTS[name].numberOfKeys) as string[], args.slice(SCRIPTS[name].numberOfKeys)) : cmd.call(name, ...args))));
      const pipeline = cmd.pipeline();
      for (const [name, ...args] of commands) {
        if (isScript(name)) (pipeline as unknown as Record<ScriptName, (...a: (string | number)[]) => unknown>)[name](...args);
        else pipeline.call(name, ...args);
      }
      const results = (await pipeline.call('wait', wanted, this.options.waitTimeout).exec()) as [Error | null, unknown][];
      for (const [err] of results) if (err) throw err;
      const acked = Number(results[results.length - 1][1]);
      if (acked < wanted) {
        throw new MessageDeliveryFailure(`Only ${acked} of ${wanted} replicas acknowledged the write within ${this.options.waitTimeout} ms (wait_replicas); it is on the master but may be lost in a failover`, { retriable: false });
      }
      return results.slice(0, -1).map(([, value]) => value);
    } catch (err) {
      throw toMessagingError(err, `Could not write to ${String(commands[0][1])}`, cmd);
    }
  }

  /**
   * Runs `fn`, retrying per `retry`. The first attempt runs at once; the retry loop, its policy and
   * its abort signals are only built when it fails (the usual send costs one `catch`).
   */
  private withRetry<T>(fn: () => Promise<T>, retry: number | undefined, signal?: AbortSignal, call?: PendingCall): Promise<T> {
    // Closing, or aborted: the loop rejects with AbortError before any attempt, as it always did.
    if (this.closing.signal.aborted || signal?.aborted) return withRetry(() => this.attempt(fn, call), this.retryPolicy(retry, signal, call));
    // Arrows passed straight on, not bound to names first: a named closure built per send is also
    // named at run time under some loaders (tsx: an Object.defineProperty each, 7,500 instructions
    // per call, bench/README.md).
    return retryAfterFirst(
      this.attempt(fn, call),
      () => this.attempt(fn, call),
      () => this.retryPolicy(retry, signal, call),
    );
  }

  /** One attempt of a write: its failure as a MessagingError, recorded on the call as why its request is not delivered. */
  private attempt<T>(fn: () => Promise<T>, call: PendingCall | undefined): Promise<T> {
    return fn().catch((err: unknown) => {
      const e = toMessagingError(err, 'Redis command failed', this.cmd);
      call?.setUndelivered(e);
      throw e;
    });
  }

  /** The retry loop of a write whose first attempt failed. */
  private retryPolicy(retry: number | undefined, signal: AbortSignal | undefined, call: PendingCall | undefined): RetryPolicy {
    const o = this.options;
    return {
      retry,
      signal: signal ? AbortSignal.any([signal, this.closing.signal]) : this.closing.signal,
      intervalMs: o.retryInterval,
      backoffMs: o.retryInterval,
      maxIntervalMs: o.intervalMax,
      isRetriable: (e) => !this.closed && call?.isOver !== true && e instanceof MessagingError && e.retriable,
      onRetry: ({ attempt: n, delayMs, error }) => this.logger.warn('Redis write failed; retrying with the same message', { attempt: n, delayMs, err: error }),
    };
  }

  /** Starts the reply reader once: a list per transport, popped in batches with BLMPOP. No declaration needed. */
  private ensureReplies(): string {
    if (this.replyQueueName) return this.replyQueueName;
    const queue = newReplyAddress();
    const key = replyKey(this.options.keyPrefix, queue);
    const client = createClient(this.options, 'replies', this.logger);
    this.replyQueueName = queue;
    this.replyClient = client;
    this.replyLoop = this.readReplies(client, key);
    return queue;
  }

  private async readReplies(client: RedisClient, key: string): Promise<void> {
    const seconds = this.options.blockTimeout / 1000;
    let failures = 0;
    while (!this.closed) {
      try {
        const res = await client.blmpop(seconds, 1, key, 'LEFT', 'COUNT', REPLY_BATCH);
        failures = 0;
        if (!res) continue;
        for (const body of res[1]) {
          try {
            this.acceptReply(decodeBody(body));
          } catch (err) {
            this.logger.warn('Dropping a malformed reply', { key, bytes: body.length, reason: (err as Error).message });
          }
        }
        // The calls these replies ended may send again at once: their requests go out before the next blocking read.
        await nextLoopTurn();
      } catch (err) {
        if (this.closed) return;
        failures++;
        const delayMs = Math.min(this.options.retryInterval * 2 ** Math.min(failures - 1, 10), this.options.intervalMax);
        this.logger.warn('Reading replies failed; retrying', { delayMs, err: toMessagingError(err, 'BLMPOP failed') });
        await abortableSleep(delayMs, this.closing.signal).catch(() => undefined);
      }
    }
  }
}

/**
 * The `XGROUP CREATE` id (the group's last-delivered id) of a `poolStart` option: `newest` is `$`,
 * `oldest` is `0`, an entry id is itself (what follows it is delivered), a time T in ms is the
 * last id before T, so that every entry added at T or later is delivered.
 */
function groupStart(poolStart: string): string {
  if (poolStart === 'newest') return '$';
  if (poolStart === 'oldest' || poolStart === '0') return '0';
  if (poolStart.includes('-')) return poolStart;
  return `${BigInt(poolStart) - 1n}-18446744073709551615`;
}
