// A listener on Redis Streams, a pull source: while a poll waits, blocking XREADGROUP readers (one
// connection each) read into the shared inbound pipeline; settling, lease extension, claims of
// expired leases, dead letters and GC run on the driver's command connection. RPC requests are
// acknowledged on receipt: popped from request lists with BLMPOP (what senders of this version
// write), or read from streams with NOACK (fanout casts, and senders of earlier versions).
import { DEAD_LETTERS_DROPPED, requeueReason } from '../../contract/dead-letters.js';
import { InboundPollSource } from '../../contract/inbound.js';
import type { ReceivedMessage } from '../../contract/incoming-message.js';
import type { ConsumerLag } from '../../contract/delivery-stats.js';
import type { Logger } from '../../core/logger.js';
import { closeClient, createGroup, dropClient, nextLoopTurn, runScript, type RedisClient } from './connection.js';
import { parseEntryFields, parseListRequest } from './entry-fields.js';
import { isNoGroup, toMessagingError } from './errors.js';
import type { ResolvedRedisOptions } from './options.js';
import { hashTagOf, poolOfGroup } from './topology.js';
import { sweepStream, type ListenerDeps, type RedisDelivery, type ServerRegistration, type StreamSpec } from './listener-parts.js';

/** The x-id of a dead letter that came from a request list, where elements have no id. */
const LIST_ENTRY_ID = '0-0';

/** How often one idle pool is reported again, ms. */
const IDLE_POOL_REPORT_MS = 10 * 60_000;

interface Reader {
  readonly client: RedisClient;
  /** Streams read with XREADGROUP, or request lists popped with BLMPOP (`list`). */
  readonly keys: readonly string[];
  readonly list: boolean;
  clientId?: number;
  /** True while it reads (a poll wants messages); set and cleared synchronously, so a poll never misses a reader that just stopped. */
  reading?: boolean;
  /** Its last run of reads. */
  loop?: Promise<void>;
}

type Kind = 'rpc' | 'notification';

/**
 * The Redis listener of either kind. It pulls: a read is issued when a poll of the adapter finds
 * nothing buffered, and reads go on only while a poll waits, so a busy callback holds reads back
 * (as the prefetch limit does for notifications received and not settled).
 */
export class RedisListener<M extends ReceivedMessage = ReceivedMessage> extends InboundPollSource<M, RedisDelivery> {
  private readonly byKey = new Map<string, StreamSpec>();
  private readonly readers: Reader[] = [];
  /** Notifications received and not settled, by `<stream> <id>`: their leases are extended. */
  private readonly inflight = new Map<string, RedisDelivery>();
  /**
   * The id of the last entry read from each stream: a group deleted under the listener (by hand, or
   * dropped while this member stalled past `pool_ttl_ms`) is made again there, so what came after
   * is read, not skipped as from the newest entry. Another member may have read further: that comes
   * again (at least once), where the newest entry would lose it.
   */
  private readonly lastRead = new Map<string, string>();
  /** When each idle pool was last reported, by stream and pool. */
  private readonly idleReported = new Map<string, number>();
  /** Entry ids acknowledged in this tick, by stream: sent as one XACK each at the end of the tick. */
  private pendingAcks = new Map<string, string[]>();
  /** Set once start() created the readers: polls may read. */
  private reading = false;
  private stopped = false;
  private stopping?: Promise<void>;
  private cleaning?: Promise<void>;
  private sweepTimer?: ReturnType<typeof setInterval>;
  private leaseTimer?: ReturnType<typeof setInterval>;
  private claimTimer?: ReturnType<typeof setTimeout>;
  private claiming?: Promise<void>;
  private readonly wakeStopped = new AbortController();

  constructor(
    readonly kind: Kind,
    private readonly deps: ListenerDeps,
    readonly streams: readonly StreamSpec[],
    /** The consumer group: the pool, the default group or the servers' group. */
    readonly group: string,
    /** This listener's consumer name in the group. */
    readonly consumer: string,
    private readonly registration?: ServerRegistration,
    /** The most unsettled notifications held at once: the prefetch, or a larger batch size. */
    private readonly limit = deps.options.prefetchCount,
  ) {
    super(kind, { logger: deps.logger, dedupWindow: deps.options.dedupWindow, stats: deps.stats, pool: poolOfGroup(group), replies: deps.replies, maxMessageBytes: deps.options.maxMessageBytes }, limit);
    for (const s of streams) {
      this.byKey.set(s.key, s);
      if (s.list !== undefined) this.byKey.set(s.list, s);
    }
  }

  private get options(): ResolvedRedisOptions {
    return this.deps.options;
  }

  private get logger(): Logger {
    return this.deps.logger;
  }

  /** Registers an RPC server (fanout, own stream), creates the groups, then starts reading. Resolves once subscribed. */
  async start(): Promise<void> {
    // Registered first, so that a sweep elsewhere never takes the own stream for a dead server's.
    if (this.registration) await this.register();
    await this.createGroups(this.streams);
    // In a Cluster one XREADGROUP or BLMPOP may only name keys of one slot: one reader per hash
    // tag. A connection blocks on streams or on lists, never both: request lists get readers of their own.
    const groups = new Map<string, { keys: string[]; list: boolean }>();
    const add = (key: string, list: boolean) => {
      const id = `${list ? 'list' : 'stream'} ${this.options.mode === 'cluster' ? hashTagOf(key) : ''}`;
      const group = groups.get(id);
      if (group) group.keys.push(key);
      else groups.set(id, { keys: [key], list });
    };
    for (const s of this.streams) add(s.key, false);
    for (const s of this.streams) if (s.list !== undefined) add(s.list, true);
    let n = 0;
    for (const { keys, list } of groups.values()) {
      const client = this.deps.newReader(`${this.consumer}:${n++}`);
      const reader: Reader = { client, keys, list };
      if ('on' in client && this.options.mode !== 'cluster') client.on('ready', () => (reader.clientId = undefined));
      this.readers.push(reader);
    }
    if (this.stopped) return;
    this.reading = true;
    if (this.wanted()) this.fetch();
    this.sweepTimer = setInterval(() => void this.sweep(), this.options.sweepInterval);
    this.sweepTimer.unref?.();
    if (this.kind === 'notification') {
      this.leaseTimer = setInterval(() => void this.extendLeases(), Math.max(5, Math.floor(this.options.leaseMs / 3)));
      this.leaseTimer.unref?.();
      // Entries a dead member of the group left behind are ours to take at once.
      this.claimSoon(0);
    }
    this.logger.debug('Redis listener subscribed', { streams: this.streams.map((s) => s.key), group: this.group, consumer: this.consumer });
  }

  /** Stops reading (blocked reads are ended with CLIENT UNBLOCK), then wakes the poll; settling and leases go on. */
  override stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  cleanup(): Promise<void> {
    this.cleaning ??= this.doCleanup();
    return this.cleaning;
  }

  ack(d: RedisDelivery): boolean {
    if (this.kind === 'rpc') return true; // read with NOACK: acknowledged on receipt
    this.settled(d);
    const spec = this.byKey.get(d.stream);
    if (this.pendingAcks.size === 0) process.nextTick(() => this.flushAcks());
    const ids = this.pendingAcks.get(d.stream);
    if (ids) ids.push(d.id);
    else this.pendingAcks.set(d.stream, [d.id]);
    if (d.deliveries > 1 && spec) this.deps.commands().hdel(spec.topic.errors, `${d.stream} ${this.group} ${d.id}`).catch(() => undefined);
    return true;
  }

  /** One XACK per stream for the acks of this tick: a read of 64 handled at once costs one command, not 64. */
  private flushAcks(): void {
    const batches = this.pendingAcks;
    this.pendingAcks = new Map();
    const cmd = this.deps.commands();
    for (const [stream, ids] of batches) {
      cmd.xack(stream, this.group, ...ids).catch((err: unknown) => this.logger.warn('Could not acknowledge notifications (their leases will expire and they come again)', { stream, ids: ids.length, err: toMessagingError(err, 'XACK failed') }));
    }
  }

  requeue(d: RedisDelivery, _generation: number, reason?: unknown): void {
    this.settled(d);
    const spec = this.byKey.get(d.stream);
    if (!spec) return;
    const backoff = this.options.requeueBackoff;
    const idle = Math.max(0, this.options.leaseMs - backoff);
    runScript(this.deps.commands(), 'tidingsRequeue', [d.stream, spec.topic.errors], [this.group, this.consumer, d.id, idle, reason === undefined ? '' : requeueReason(reason, '')])
      .then(() => this.claimSoon(backoff))
      .catch((err: unknown) => this.logger.warn('Could not requeue a notification (its lease will expire and it comes again)', { stream: d.stream, id: d.id, err: toMessagingError(err, 'requeue failed') }));
  }

  reject(d: RedisDelivery): void {
    this.deadLetter(d, 'malformed message');
  }

  private deadLetter(d: RedisDelivery, reason: string): void {
    this.settled(d);
    const spec = this.byKey.get(d.stream);
    if (!spec) return;
    if (d.fields) {
      this.deadLetterElement(d, d.fields, spec, reason);
      return;
    }
    runScript<number>(this.deps.commands(), 'tidingsDead', [d.stream, spec.topic.deadLetters, spec.topic.errors], [this.group, this.consumer, d.id, reason, Date.now(), this.options.deadLetterMaxLen]).then(
      (dropped) => this.droppedDeadLetters(spec, Number(dropped)),
      (err: unknown) => this.logger.warn('Could not dead-letter a malformed entry', { stream: d.stream, id: d.id, err: toMessagingError(err, 'dead-letter failed') }),
    );
  }

  /**
   * A popped request list element to the topic's dead letters, as the script does for a stream
   * entry: its fields as a stream entry (`b`, `x`) and the metadata, with `x-stream` the stream of
   * the same address (where a replay puts it back; servers read it). Its keys share the topic's hash tag.
   */
  private deadLetterElement(d: RedisDelivery, fields: readonly string[], spec: StreamSpec, reason: string): void {
    const dead = spec.topic.deadLetters;
    const maxLen = this.options.deadLetterMaxLen;
    const meta = ['x-stream', spec.key, 'x-group', this.group, 'x-id', LIST_ENTRY_ID, 'x-consumer', this.consumer, 'x-deliveries', '1', 'x-error', reason, 'x-time', String(Date.now())];
    const tx = this.deps.commands().multi().xadd(dead, '*', ...fields, ...meta);
    if (maxLen > 0) tx.xtrim(dead, 'MAXLEN', maxLen);
    tx.exec()
      .then((results) => {
        for (const [err] of results ?? []) if (err) throw err;
        this.droppedDeadLetters(spec, maxLen > 0 ? Number(results![1][1]) : 0);
      })
      .catch((err: unknown) => this.logger.warn('Could not dead-letter a malformed request', { list: d.stream, err: toMessagingError(err, 'dead-letter failed') }));
  }

  /** `dead_letter_max_len`: the oldest dead letters a new one of `spec` pushed out of its topic's `:dead` stream, logged and counted. */
  private droppedDeadLetters(spec: StreamSpec, dropped: number): void {
    if (!(dropped > 0)) return;
    const maxLen = this.options.deadLetterMaxLen;
    this.deps.stats.deadLettersDropped(spec.address, dropped, poolOfGroup(this.group));
    this.logger.warn(DEAD_LETTERS_DROPPED, { stream: spec.topic.deadLetters, dropped, maxLen });
  }

  describe(d: RedisDelivery): Record<string, unknown> {
    return d.fields ? { list: d.stream } : { stream: d.stream, id: d.id, group: this.group };
  }

  deliveries(d: RedisDelivery): number {
    return d.deliveries;
  }

  address(d: RedisDelivery): string {
    return this.byKey.get(d.stream)?.address ?? d.stream;
  }

  /** True once cleaned up. */
  get closed(): boolean {
    return this.cleaning !== undefined;
  }

  /** The group's `lag` (Redis 7: entries not read by the group yet) per topic, summed over its shards. */
  async lag(): Promise<ConsumerLag[]> {
    const cmd = this.deps.commands();
    const byTopic = new Map<string, number>();
    await Promise.all(
      this.streams.map(async (s) => {
        const groups = (await cmd.call('XINFO', 'GROUPS', s.key).catch(() => [])) as unknown[][];
        const fields = groups.find((g) => g[g.indexOf('name') + 1] === this.group) ?? [];
        const lag = Number(fields[fields.indexOf('lag') + 1] ?? 0);
        byTopic.set(s.address, (byTopic.get(s.address) ?? 0) + (Number.isFinite(lag) ? lag : 0));
      }),
    );
    const pool = poolOfGroup(this.group);
    return [...byTopic].map(([address, lag]) => ({ address, pool, lag }));
  }

  /** Notifications received and not settled yet. */
  get unsettled(): number {
    return this.inflight.size;
  }

  private settled(d: RedisDelivery): void {
    // Room again under the prefetch limit: a waiting poll reads on.
    if (this.inflight.delete(`${d.stream} ${d.id}`) && this.inflight.size < this.limit && this.wanted()) this.fetch();
  }

  /** True while a poll waits on an empty buffer. */
  private wanted(): boolean {
    return this.buffer.waiting > 0 && this.buffer.size === 0;
  }

  /** Starts the readers that are not reading yet; they read while a poll wants messages and there is room. A poll that does not wait reads nothing. */
  protected override fetch(_max?: number, timeoutMs?: number): void {
    if (!this.reading || this.stopped || timeoutMs === 0) return;
    for (const reader of this.readers) {
      if (reader.reading) continue;
      reader.reading = true;
      reader.loop = this.readLoop(reader);
    }
  }

  /** Creates the listener's group on `streams` where it is missing: at each stream's `createAt`, or after the id `after` holds for it. */
  private async createGroups(streams: readonly StreamSpec[], after?: ReadonlyMap<string, string>): Promise<void> {
    const cmd = this.deps.commands();
    await Promise.all(
      streams.map(async (s) => {
        try {
          await createGroup(cmd, s.key, this.group, after?.get(s.key) ?? s.createAt);
        } catch (err) {
          throw toMessagingError(err, `Could not create consumer group ${this.group} on ${s.key}`, cmd);
        }
      }),
    );
  }

  private async register(): Promise<void> {
    const { servers, inbox, serverStreams, ownStream } = this.registration!;
    const ttl = this.options.serverTtl;
    const cmd = this.deps.commands();
    try {
      const expiry = Date.now() + ttl;
      await Promise.all([cmd.hset(servers, inbox, expiry), cmd.pexpire(inbox, ttl), cmd.hset(serverStreams, ownStream, expiry)]);
    } catch (err) {
      throw toMessagingError(err, 'Could not register the server for fanout', cmd);
    }
  }

  /** Reads until a read leaves something buffered (or nobody polls), the prefetch is full, or the listener stops. */
  private async readLoop(reader: Reader): Promise<void> {
    const { blockTimeout } = this.options;
    const ids = reader.keys.map(() => '>');
    // BLMPOP pops from the first list that has elements: the lists take turns at being first.
    let first = 0;
    let failures = 0;
    do {
      // Notifications received and not settled count against the prefetch; settling one reads on.
      const count = this.kind === 'notification' ? this.limit - this.inflight.size : this.limit;
      if (count <= 0) break;
      try {
        if (reader.clientId === undefined && this.options.mode !== 'cluster') reader.clientId = Number(await (reader.client as { client(sub: 'ID'): Promise<number> }).client('ID'));
        if (this.stopped) break;
        if (reader.list) {
          // The next pop waits for the turn of the event loop after this one: the replies to what
          // was just popped (their writes are corked to the end of the tick) leave first, then the
          // blocking read. The other order put a write and Redis' handling of a blocking command in
          // front of every reply.
          await nextLoopTurn();
          if (this.stopped) break;
          const keys = reader.keys.length === 1 ? reader.keys : [...reader.keys.slice(first), ...reader.keys.slice(0, first)];
          first = (first + 1) % reader.keys.length;
          // Pops only what the listener takes: what it pops is handled (acknowledged on receipt).
          const popped = await reader.client.blmpop(blockTimeout / 1000, keys.length, ...keys, 'LEFT', 'COUNT', count);
          failures = 0;
          if (popped) for (const element of popped[1]) this.onElement(popped[0], element);
          continue;
        }
        const args: (string | number)[] = ['GROUP', this.group, this.consumer, 'COUNT', count, 'BLOCK', blockTimeout];
        if (this.kind === 'rpc') args.push('NOACK');
        // The method, not `call`: ioredis shapes XREADGROUP replies by command name.
        const read = (reader.client as unknown as { xreadgroup(...a: (string | number)[]): Promise<[string, [string, string[]][]][] | null> }).xreadgroup;
        const res = await read.call(reader.client, ...args, 'STREAMS', ...reader.keys, ...ids);
        failures = 0;
        if (res) {
          for (const [key, entries] of res) {
            for (const [id, fields] of entries) this.onEntry(key, id, fields, 1);
            if (entries.length > 0) this.lastRead.set(key, entries[entries.length - 1][0]);
          }
        }
      } catch (err) {
        if (this.stopped) break;
        if (!reader.list && isNoGroup(err)) {
          // The stream or group was deleted under us: declare again and go on.
          this.logger.warn('Consumer group missing; creating it again after the last entry read', { streams: reader.keys, group: this.group, after: reader.keys.map((k) => this.lastRead.get(k) ?? null) });
          await this.createGroups(reader.keys.map((k) => this.byKey.get(k)!), this.lastRead).catch(() => undefined);
        } else {
          failures++;
          const delay = Math.min(this.options.retryInterval * 2 ** Math.min(failures - 1, 10), this.options.intervalMax);
          this.logger.warn(reader.list ? 'Request list read failed; retrying' : 'Stream read failed; retrying', { [reader.list ? 'lists' : 'streams']: reader.keys, delayMs: delay, err: toMessagingError(err, reader.list ? 'BLMPOP failed' : 'XREADGROUP failed') });
          await this.sleep(delay);
        }
      }
    } while (!this.stopped && this.wanted());
    reader.reading = false;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.wakeStopped.signal.addEventListener('abort', done, { once: true });
    });
  }

  private onEntry(key: string, id: string, fields: string[] | null, deliveries: number): void {
    const delivery: RedisDelivery = { stream: key, id, deliveries };
    const entry = parseEntryFields(fields, this.rpc !== undefined, Date.now());
    if (!entry.ok) {
      this.setAside(delivery, entry.reason);
      return;
    }
    if (this.rpc) {
      if (entry.deadline !== undefined && entry.deadline < Date.now()) {
        this.logger.debug('Dropping an RPC request whose caller gave up (past its timeout)', { stream: key, id });
        return;
      }
      this.receive(entry.body, delivery, 0);
      return;
    }
    this.inflight.set(`${key} ${id}`, delivery);
    this.receive(entry.body, delivery, 0);
  }

  /** A request popped from a list: handled unless malformed (set aside) or past its caller's timeout. */
  private onElement(key: string, element: string): void {
    const entry = parseListRequest(element, Date.now());
    const delivery: RedisDelivery = { stream: key, id: '', deliveries: 1, fields: entry.fields };
    if (!entry.ok) {
      this.setAside(delivery, entry.reason);
      return;
    }
    if (entry.deadline !== undefined && entry.deadline < Date.now()) {
      this.logger.debug('Dropping an RPC request whose caller gave up (past its timeout)', { list: key });
      return;
    }
    this.receive(entry.body, delivery, 0);
  }

  /**
   * An entry whose fields tidings could not have written (forged, or corrupted): never obeyed,
   * nor handled; dead-lettered with why, logged and counted as malformed.
   */
  private setAside(d: RedisDelivery, reason: string): void {
    this.logger.warn('Dead-lettering a stream entry with malformed tidings fields (not handled)', { ...this.describe(d), reason });
    this.deps.stats.deadLettered(this.address(d), 'malformed', poolOfGroup(this.group));
    this.deadLetter(d, `malformed fields: ${reason}`);
  }

  /** Claims requeued or abandoned entries after `delayMs` (coalesced). */
  private claimSoon(delayMs: number): void {
    if (this.stopped || this.kind !== 'notification') return;
    if (this.claimTimer) return;
    this.claimTimer = setTimeout(() => {
      this.claimTimer = undefined;
      void this.claim();
    }, delayMs);
    this.claimTimer.unref?.();
  }

  /** Takes over entries whose lease expired (a stalled or dead member, or a requeue). One at a time. */
  private claim(): Promise<void> {
    this.claiming ??= (async () => {
      const { leaseMs, maxDeliveries } = this.options;
      const prefetchCount = this.limit;
      const cmd = this.deps.commands();
      try {
        for (const s of this.streams) {
          const room = prefetchCount - this.inflight.size;
          if (this.stopped || room <= 0) break;
          const got = await runScript<[string, string[], number, 1?, number?][]>(cmd, 'tidingsClaim', [s.key, s.topic.deadLetters, s.topic.errors], [this.group, this.consumer, leaseMs, room, maxDeliveries, Date.now(), this.options.deadLetterMaxLen]);
          const claimed: typeof got = [];
          for (const entry of got) {
            if (entry[3] !== 1) {
              claimed.push(entry);
              continue;
            }
            this.deps.stats.deadLettered(s.address, 'max_deliveries', poolOfGroup(this.group));
            this.droppedDeadLetters(s, Number(entry[4] ?? 0));
          }
          if (this.stopped) {
            // Not ours to handle any more: make them claimable again at once.
            for (const [id] of claimed) await runScript(cmd, 'tidingsRequeue', [s.key, s.topic.errors], [this.group, this.consumer, id, leaseMs, '']).catch(() => undefined);
            break;
          }
          for (const [id, fields, n] of claimed) this.onEntry(s.key, id, fields, n);
        }
      } catch (err) {
        this.logger.warn('Could not claim expired leases', { group: this.group, err: toMessagingError(err, 'claim failed') });
      } finally {
        this.claiming = undefined;
      }
    })();
    return this.claiming;
  }

  private async extendLeases(): Promise<void> {
    if (this.inflight.size === 0) return;
    const byStream = new Map<string, string[]>();
    for (const d of this.inflight.values()) byStream.set(d.stream, [...(byStream.get(d.stream) ?? []), d.id]);
    const cmd = this.deps.commands();
    await Promise.all(
      [...byStream].map(([stream, ids]) =>
        runScript(cmd, 'tidingsExtend', [stream], [this.group, this.consumer, ...ids]).catch((err: unknown) =>
          this.logger.warn('Could not extend leases', { stream, err: toMessagingError(err, 'lease extension failed') }),
        ),
      ),
    );
  }

  /** Periodic: claim expired leases, keep the fanout registration alive, trim and GC each stream. */
  private async sweep(): Promise<void> {
    if (this.stopped) return;
    if (this.kind === 'notification') await this.claim();
    const cmd = this.deps.commands();
    try {
      if (this.registration) {
        await this.register();
        await this.reapDeadServers(this.registration);
      }
      const own = this.group.startsWith('pool:') ? this.group : '';
      for (const s of this.streams) {
        const idle = await sweepStream(cmd, s.key, s.topic, own, this.options);
        this.reportIdlePools(s.key, idle);
      }
    } catch (err) {
      this.logger.warn('Stream sweep failed', { group: this.group, err: toMessagingError(err, 'sweep failed') });
    }
  }

  /** Removes the own streams of this topic's servers that died without leaving (after `consumerTtl` past their expiry). */
  private async reapDeadServers({ serverStreams, servers }: ServerRegistration): Promise<void> {
    const gone = await runScript<string[]>(this.deps.commands(), 'tidingsReap', [serverStreams, servers], [Date.now(), this.options.consumerTtl]);
    if (gone.length > 0) this.logger.info('Removed the streams of RPC servers gone without leaving', { streams: gone, consumerTtl: this.options.consumerTtl });
  }

  /**
   * Idle pools (no consumer left, entries unread) hold back trimming: the stream grows until they
   * come back or `poolTtl` drops them. Warned once per pool and stream every IDLE_POOL_REPORT_MS.
   */
  private reportIdlePools(stream: string, idle: Array<string | number>): void {
    const now = Date.now();
    for (let i = 0; i + 1 < idle.length; i += 2) {
      const key = `${stream}\0${idle[i]}`;
      if ((this.idleReported.get(key) ?? -Infinity) > now - IDLE_POOL_REPORT_MS) continue;
      this.idleReported.set(key, now);
      this.logger.warn('A pool has no consumer and holds back trimming; it is dropped after pool_ttl_ms (0 = never)', {
        stream,
        pool: String(idle[i]).slice('pool:'.length),
        entriesBehind: Number(idle[i + 1]),
        poolTtl: this.options.poolTtl,
      });
    }
  }

  private async doStop(): Promise<void> {
    this.stopped = true;
    this.wakeStopped.abort();
    if (this.claimTimer) clearTimeout(this.claimTimer);
    this.claimTimer = undefined;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    const cmd = this.deps.commands();
    await Promise.all(
      this.readers.map(async (r) => {
        if (!r.reading) return;
        // A read ended by UNBLOCK returns normally: nothing it took from the stream is lost. A
        // reader or command connection that is not up cannot have a read running on Redis: its
        // read waits in ioredis' queue, and dropping the client fails it at once (Redis unreachable).
        if (r.clientId !== undefined && r.client.status === 'ready' && cmd.status === 'ready') {
          try {
            await cmd.call('CLIENT', ['UNBLOCK', r.clientId]);
          } catch {
            dropClient(r.client);
          }
        } else {
          dropClient(r.client);
        }
        await r.loop;
      }),
    );
    await this.claiming;
    // What the reads and claims buffered stays there for the adapter to hand out.
    await super.stop();
  }

  private async doCleanup(): Promise<void> {
    await this.stop();
    if (this.notifications) await this.notifications.whenSettled(this.options.shutdownTimeout);
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    await Promise.all(this.readers.map((r) => closeClient(r.client)));
    const cmd = this.deps.commands();
    if (cmd.status !== 'ready') {
      // Each command would wait in ioredis' queue for a reconnect that may never come.
      this.logger.debug('Redis is unreachable: the listener is not released there (its leases expire instead)', { status: cmd.status });
      return;
    }
    try {
      if (this.kind === 'notification') {
        for (const s of this.streams) await runScript(cmd, 'tidingsRelease', [s.key], [this.group, this.consumer, this.options.leaseMs + 1]);
      } else {
        for (const s of this.streams) {
          if (s.ownStream && s.list !== undefined) await runScript(cmd, 'tidingsLeave', [s.key, s.list], [this.group, this.consumer]);
          else await cmd.xgroup('DELCONSUMER', s.key, this.group, this.consumer).catch(() => undefined);
        }
      }
      if (this.registration) {
        await cmd.hdel(this.registration.servers, this.registration.inbox);
        await cmd.unlink(this.registration.inbox);
      }
    } catch (err) {
      this.logger.debug('Could not release the listener on Redis (its leases expire instead)', { err: toMessagingError(err, 'release failed') });
    }
  }
}
