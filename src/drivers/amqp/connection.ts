// One logical AMQP connection across reconnects: host failover, oslo's backoff, heartbeats,
// TCP noDelay, TLS, connection.blocked, hooks that restore channels/consumers on reopen, and one
// socket write per pass of amqplib's muxer.
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { connect, credentials, type ChannelModel, type Options, type SocketOptions } from 'amqplib';
import { EventEmitter } from 'eventemitter3';
import { newHexId } from '../../contract/envelope.js';
import { ConnectionError, InvalidArgument, InvalidState, MessageDeliveryFailure } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { abortableSleep, retryDelay } from '../../core/retry.js';
import { toMessagingError } from './errors.js';
import { pinnedTlsVersion, type AmqpHost, type ResolvedAmqpOptions } from './options.js';

/** What every connection event carries. `host` is `hostname:port`, never credentials. */
export interface ConnectionEventInfo {
  /** `publisher` (sends, notifications, replies, the reply queue) or `listener:<n>`. */
  readonly connection: string;
  readonly host: string;
  /** Increments on every successful (re)connect of this logical connection. */
  readonly generation: number;
}

/** Events of `AmqpDriver.events`, for monitoring and for fault-injection tests. */
export interface AmqpDriverEvents {
  connected: (info: ConnectionEventInfo) => void;
  reconnected: (info: ConnectionEventInfo) => void;
  disconnected: (info: ConnectionEventInfo & { error?: Error }) => void;
  blocked: (info: ConnectionEventInfo & { reason: string }) => void;
  unblocked: (info: ConnectionEventInfo) => void;
  /** A connection attempt failed; `attempt` counts failures since the last success. */
  'connect-failed': (info: { connection: string; host: string; attempt: number; error: Error }) => void;
}

export type DriverEventEmitter = EventEmitter<AmqpDriverEvents>;

/** Runs after every (re)connect, before `ensureOpen()` resolves for anyone. Must catch its own errors. */
export type OpenHook = (model: ChannelModel, generation: number) => Promise<void>;

interface TlsMaterial {
  ca?: Buffer | string;
  cert?: Buffer | string;
  key?: Buffer | string;
}

const CONNECTION_NAME_BASE = `${basename(process.argv[1] ?? 'node')}:${process.pid}`;

export class AmqpConnection {
  private model?: ChannelModel;
  private generation = 0;
  private attempt?: Promise<ChannelModel>;
  private readonly hooks = new Set<OpenHook>();
  private blockedReason?: string;
  private blockedWaiters: Array<() => void> = [];
  private closed = false;
  private reconnecting = false;
  private failures = 0;
  private readonly abort = new AbortController();
  private order: AmqpHost[];
  private hostIndex = 0;
  private tls?: Promise<TlsMaterial>;
  private openingModel?: ChannelModel;
  private openingLost = false;
  /** When the round trips of stopping and closing stop waiting for the broker (set by the first). */
  private teardownBy?: number;

  constructor(
    /** Role name used in events and logs. */
    readonly role: string,
    private readonly options: ResolvedAmqpOptions,
    private readonly logger: Logger,
    private readonly events: DriverEventEmitter,
  ) {
    this.order = [...options.hosts];
    if (options.failoverStrategy === 'shuffle') shuffle(this.order);
  }

  get isOpen(): boolean {
    return this.model !== undefined;
  }

  get isBlocked(): boolean {
    return this.blockedReason !== undefined;
  }

  /** True while the background loop restores a lost connection. */
  get isReconnecting(): boolean {
    return this.reconnecting;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** The open connection and its generation, if any. */
  get current(): { model: ChannelModel; generation: number } | undefined {
    return this.model ? { model: this.model, generation: this.generation } : undefined;
  }

  /** The generation of the open connection; undefined when none is open (`current?.generation` without building `current`, for every publish). */
  get openGeneration(): number | undefined {
    return this.model ? this.generation : undefined;
  }

  /** Registers a hook for every later (re)connect; returns its remover. */
  addOpenHook(hook: OpenHook): () => void {
    this.hooks.add(hook);
    return () => this.hooks.delete(hook);
  }

  /**
   * Resolves with the open connection (hooks already run). When closed, makes one attempt (or
   * joins the one in flight) and rejects with a retriable ConnectionError if it fails.
   */
  ensureOpen(): Promise<ChannelModel> {
    if (this.closed) return Promise.reject(new InvalidState('The AMQP connection was closed (transport cleaned up)'));
    if (this.model) return Promise.resolve(this.model);
    if (!this.attempt) {
      this.attempt = this.openOnce().finally(() => {
        this.attempt = undefined;
      });
    }
    return this.attempt;
  }

  /** Waits while the broker blocks this connection (memory/disk alarm), at most `timeoutMs` (0 = unbounded). */
  waitUnblocked(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.blockedReason === undefined) return Promise.resolve();
    const reason = this.blockedReason;
    return new Promise<void>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = () => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        this.blockedWaiters = this.blockedWaiters.filter((w) => w !== done);
        if (timer) clearTimeout(timer);
        reject(new MessageDeliveryFailure(`Publish aborted while the broker blocked the connection (${reason})`, { cause: signal?.reason }));
      };
      if (timeoutMs > 0) {
        timer = setTimeout(() => {
          this.blockedWaiters = this.blockedWaiters.filter((w) => w !== done);
          signal?.removeEventListener('abort', onAbort);
          reject(new MessageDeliveryFailure(`The broker blocked the connection (${reason}) for longer than ${timeoutMs} ms; message not published`));
        }, timeoutMs);
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      this.blockedWaiters.push(done);
    });
  }

  /** Closes for good: stops reconnecting, closes the socket. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.abort.abort();
    this.releaseBlocked();
    await this.attempt?.catch(() => undefined);
    const model = this.model;
    if (!model) return;
    await this.teardown(() => model.close());
    this.model = undefined;
  }

  /**
   * One broker round trip of stopping or closing (cancel, queue delete, channel or connection
   * close). Resolves when the broker answers or the round trip fails, and at the latest when
   * this connection's teardown budget is spent: `shutdownTimeout`, one budget from the first such
   * round trip. A broker that has not answered by then is taken for gone (it stopped answering
   * without closing the TCP connection: frozen, or behind a partition): the socket is destroyed, so
   * every later round trip fails at once instead of waiting for the heartbeat, whose timer would
   * also hold the process open. Never throws.
   */
  async teardown(roundTrip: () => Promise<unknown>): Promise<void> {
    this.teardownBy ??= Date.now() + this.options.shutdownTimeout;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<true>((resolve) => (timer = setTimeout(resolve, Math.max(0, this.teardownBy! - Date.now()), true)));
    try {
      if ((await Promise.race([roundTrip().catch(() => undefined), expired])) === true) this.dropSocket();
    } finally {
      clearTimeout(timer);
    }
  }

  /** Destroys the socket under the open connection: amqplib fails what waits on it and closes. */
  private dropSocket(): void {
    const conn = (this.model as unknown as MuxedConnection | undefined)?.connection;
    if (typeof conn?.stream?.destroy !== 'function') return;
    this.logger.warn('RabbitMQ did not answer while closing; connection dropped', { connection: this.role, shutdownTimeout: this.options.shutdownTimeout });
    conn.stream.destroy(new ConnectionError(`RabbitMQ did not answer within shutdown_timeout_ms (${this.options.shutdownTimeout} ms) while closing`));
  }

  private nextHost(): AmqpHost {
    return this.order[this.hostIndex % this.order.length];
  }

  private advanceHost(): void {
    this.hostIndex = (this.hostIndex + 1) % this.order.length;
    if (this.hostIndex === 0 && this.options.failoverStrategy === 'shuffle') shuffle(this.order);
  }

  private async openOnce(): Promise<ChannelModel> {
    const host = this.nextHost();
    const hostLabel = `${host.hostname}:${host.port}`;
    let model: ChannelModel;
    try {
      const tls = this.options.ssl ? await this.loadTls() : undefined;
      model = await connect(this.connectOptions(host), this.socketOptions(host, tls));
    } catch (err) {
      this.advanceHost();
      this.failures++;
      const error = err instanceof InvalidArgument ? err : toMessagingError(err, `Could not connect to RabbitMQ at ${hostLabel}`);
      this.logger.warn('AMQP connection attempt failed', { connection: this.role, host: hostLabel, attempt: this.failures, err: error });
      this.events.emit('connect-failed', { connection: this.role, host: hostLabel, attempt: this.failures, error });
      throw error;
    }
    if (this.closed) {
      await model.close().catch(() => undefined);
      throw new InvalidState('The AMQP connection was closed (transport cleaned up)');
    }
    coalesceWrites(model);
    const generation = ++this.generation;
    const info = { connection: this.role, host: hostLabel, generation };
    model.on('error', (err: Error) => this.logger.warn('AMQP connection error', { connection: this.role, host: hostLabel, err }));
    model.on('close', (err?: Error) => this.onClose(model, info, err));
    model.on('blocked', (reason: string) => {
      this.blockedReason = reason || 'blocked';
      this.logger.warn('RabbitMQ blocked the connection; publishes wait', { connection: this.role, host: hostLabel, reason });
      this.events.emit('blocked', { ...info, reason: this.blockedReason });
    });
    model.on('unblocked', () => {
      this.releaseBlocked();
      this.logger.info('RabbitMQ unblocked the connection', { connection: this.role, host: hostLabel });
      this.events.emit('unblocked', info);
    });
    this.openingModel = model;
    this.openingLost = false;
    for (const hook of [...this.hooks]) {
      if (this.openingLost) break;
      await hook(model, generation);
    }
    this.openingModel = undefined;
    if (this.openingLost || this.closed) {
      await model.close().catch(() => undefined);
      throw new ConnectionError(`The connection to ${hostLabel} was lost while restoring consumers`);
    }
    const wasReconnect = generation > 1;
    this.failures = 0;
    this.model = model;
    this.logger.info(wasReconnect ? 'AMQP connection re-established' : 'AMQP connection established', info);
    this.events.emit('connected', info);
    if (wasReconnect) this.events.emit('reconnected', info);
    return model;
  }

  private onClose(model: ChannelModel, info: ConnectionEventInfo, err?: Error): void {
    if (this.openingModel === model) this.openingLost = true;
    if (this.model !== model) return;
    this.model = undefined;
    this.releaseBlocked();
    // Once its owner tears it down (teardown() came first), a lost connection is not reopened.
    if (this.closed || this.teardownBy !== undefined) return;
    this.logger.warn('AMQP connection lost; reconnecting', { ...info, err });
    this.events.emit('disconnected', { ...info, error: err });
    void this.reconnectLoop();
  }

  /** Background reconnect so consumers come back without a caller; backoff as oslo. */
  private async reconnectLoop(): Promise<void> {
    if (this.reconnecting) return;
    this.reconnecting = true;
    try {
      await abortableSleep(this.options.reconnectDelay, this.abort.signal);
      for (let attempt = 1; !this.closed && !this.model; attempt++) {
        try {
          await this.ensureOpen();
        } catch {
          if (this.closed) break;
          await abortableSleep(this.retryDelay(attempt), this.abort.signal);
        }
      }
    } catch {
      // aborted by close()
    } finally {
      this.reconnecting = false;
    }
  }

  /** oslo's rabbit_retry_interval + rabbit_retry_backoff * (n-1), capped at rabbit_interval_max. */
  retryDelay(attempt: number): number {
    return retryDelay(attempt, { intervalMs: this.options.retryInterval, backoffMs: this.options.retryBackoff, maxIntervalMs: this.options.intervalMax });
  }

  private releaseBlocked(): void {
    this.blockedReason = undefined;
    for (const w of this.blockedWaiters.splice(0)) w();
  }

  private connectOptions(host: AmqpHost): Options.Connect {
    return {
      protocol: this.options.ssl ? 'amqps' : 'amqp',
      hostname: host.hostname,
      port: host.port,
      // amqplib unescapes the vhost; escaping keeps a vhost containing '%' intact.
      vhost: encodeURIComponent(this.options.vhost),
      heartbeat: Math.ceil(this.options.heartbeatTimeout / 1000),
    };
  }

  private socketOptions(host: AmqpHost, tls?: TlsMaterial): SocketOptions {
    const method = this.options.loginMethod;
    const creds =
      method === 'EXTERNAL' ? credentials.external() : method === 'PLAIN' ? credentials.plain(host.username, host.password) : credentials.amqplain(host.username, host.password);
    const opts: SocketOptions = {
      // amqplib leaves Nagle on otherwise: ~40 ms per request/reply round trip.
      noDelay: true,
      timeout: this.options.connectTimeout,
      credentials: creds,
      clientProperties: { connection_name: `${CONNECTION_NAME_BASE}:${newHexId()}` },
    };
    if (tls) {
      if (tls.ca !== undefined) opts.ca = tls.ca;
      if (tls.cert !== undefined) opts.cert = tls.cert;
      if (tls.key !== undefined) opts.key = tls.key;
      opts.rejectUnauthorized = this.options.sslVerifyPeer;
      if (!this.options.sslEnforceHostnameVerification) opts.checkServerIdentity = () => undefined;
      const version = pinnedTlsVersion(this.options);
      if (version !== undefined) Object.assign(opts, { minVersion: version, maxVersion: version });
    }
    return opts;
  }

  private loadTls(): Promise<TlsMaterial> {
    this.tls ??= (async () => {
      const o = this.options;
      const read = async (field: string, path: string | undefined) => {
        if (path === undefined) return undefined;
        try {
          return await readFile(path);
        } catch (err) {
          throw new InvalidArgument(field, 'a readable file', path, { cause: err });
        }
      };
      return {
        ca: o.sslCa ?? (await read('ssl_ca_file', o.sslCaFile)),
        cert: o.sslCert ?? (await read('ssl_cert_file', o.sslCertFile)),
        key: o.sslKey ?? (await read('ssl_key_file', o.sslKeyFile)),
      };
    })();
    this.tls.catch(() => {
      this.tls = undefined;
    });
    return this.tls;
  }
}

function shuffle<T>(list: T[]): void {
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [list[i], list[j]] = [list[j], list[i]];
  }
}

/** Shape of amqplib's internals that coalesceWrites relies on (checked at run time). */
interface MuxedConnection {
  connection?: { stream?: { cork?: () => void; uncork?: () => void; destroy?: (err?: Error) => void }; muxer?: { _readIncoming?: () => void } };
}

/**
 * amqplib's muxer writes every frame it takes from the channels' buffers to the socket with its
 * own `write()`, one syscall each (4 per RPC call on this path). Corking the socket around one
 * muxer pass sends the same bytes in the same order with one `writev`. Nothing changes when
 * amqplib's internals are not the expected shape.
 */
function coalesceWrites(model: ChannelModel): void {
  const conn = (model as unknown as MuxedConnection).connection;
  const stream = conn?.stream;
  const muxer = conn?.muxer;
  const read = muxer?._readIncoming;
  if (!stream || !muxer || typeof read !== 'function' || typeof stream.cork !== 'function' || typeof stream.uncork !== 'function') return;
  muxer._readIncoming = function readCorked(this: unknown): void {
    stream.cork!();
    try {
      read.call(this);
    } finally {
      stream.uncork!();
    }
  };
}
