// Confirmed publishing on the send connection: many publishes in flight on one ConfirmChannel,
// each awaiting its own confirm; declares cached per connection; blocked/drain back-pressure.
import type { Channel, ChannelModel, ConfirmChannel, Message, Options } from 'amqplib';
import { AbortError, ConnectionError, MessageDeliveryFailure, MessageUndeliverable } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { AmqpConnection } from './connection.js';
import { brokerSizeLimit, declareMismatch, isPreconditionFailed, toMessagingError } from './errors.js';
import { compressBody, COMPRESSION_HEADER } from './compression.js';
import { KOMBU_GZIP, type ResolvedAmqpOptions } from './options.js';
import type { Declaration } from './topology.js';

/** oslo's properties on every message (oslo-wire.md §1.4). */
const BASE_PROPS: Readonly<Options.Publish> = Object.freeze({
  contentType: 'application/json',
  contentEncoding: 'utf-8',
  deliveryMode: 2,
  priority: 0,
});

/** Shared by every publish without expiration/mandatory; amqplib copies what it needs. */
const PLAIN_PROPS: Readonly<Options.Publish> = Object.freeze({ ...BASE_PROPS, headers: Object.freeze({}) });
/** The same with kombu's compression header (`kombu_compression`). */
const COMPRESSED_PROPS: Readonly<Options.Publish> = Object.freeze({ ...BASE_PROPS, headers: Object.freeze({ [COMPRESSION_HEADER]: KOMBU_GZIP }) });
/** Call requests carry the call timeout as expiration; clients mostly use one or a few timeouts. */
const EXPIRATION_PROPS_CACHE_SIZE = 32;

interface InFlight {
  resolve: () => void;
  reject: (err: Error) => void;
  deadline: number;
  /** Set for mandatory publishes: the broker returned it before confirming. */
  returned?: boolean;
  content?: Buffer;
  routingKey?: string;
  exchange?: string;
}

/** The failures made of a broker's nack (see `isNack`). */
const NACKS = new WeakSet<Error>();

/**
 * A nack says no more than "not taken this time": a quorum queue electing a new leader after its
 * node died nacks what it cannot take, so does a full queue with `x-overflow: reject-publish`.
 * Retriable, so the driver republishes it with backoff (bounded by `publishTimeout`, see
 * AmqpDriver.retryPublish).
 */
function nackFailure(cause: unknown): MessageDeliveryFailure {
  const err = new MessageDeliveryFailure('The broker refused (nacked) the message', { cause, retriable: true });
  NACKS.add(err);
  return err;
}

/** True for the failure of a publish the broker nacked. */
export function isNack(err: unknown): boolean {
  return err instanceof MessageDeliveryFailure && NACKS.has(err);
}

export interface PublishOptions {
  /** Call requests only: per-message TTL in ms (oslo `expiration`). */
  expiration?: number;
  /** Replies: the broker returns the message if no queue takes it. */
  mandatory?: boolean;
  signal?: AbortSignal;
  /** Calls: true once the call has its outcome (e.g. timed out); a publish that waited MUST then not be written. */
  call?: { readonly isOver: boolean };
  /** Requeued copies and dead letters: tidings' `x-tidings-*` headers (amqp-listener.ts). */
  headers?: Readonly<Record<string, unknown>>;
}

export class Publisher {
  private channel?: ConfirmChannel;
  private channelGeneration = -1;
  private opening?: Promise<ConfirmChannel>;
  private declareChannel?: Channel;
  private declareOpening?: Promise<Channel>;
  /** Declarations done on the current connection generation (oslo redeclares after a reconnect). */
  private declared = new WeakSet<Declaration>();
  private declaring = new Map<Declaration, Promise<void>>();
  private declaredGeneration = -1;
  private readonly inFlight = new Set<InFlight>();
  /** `drain()` waiting for the last confirm. */
  private idleWaiters: Array<() => void> = [];
  private readonly mandatory = new Map<string, InFlight[]>();
  private drainWaiters: Array<() => void> = [];
  private needsDrain = false;
  private sweeper?: ReturnType<typeof setInterval>;
  private readonly expirationCache = new Map<number, Readonly<Options.Publish>>();
  /** Why the broker closed a publish channel (its 'error' comes before amqplib fails the unconfirmed). */
  private readonly closeErrors = new WeakMap<ConfirmChannel, Error>();
  /** Every publish without expiration/mandatory uses these; replies the mandatory ones (one object each). */
  private readonly plainProps: Readonly<Options.Publish>;
  private readonly mandatoryProps: Readonly<Options.Publish>;
  private readonly compress: boolean;

  constructor(
    private readonly conn: AmqpConnection,
    private readonly options: ResolvedAmqpOptions,
    private readonly logger: Logger,
  ) {
    this.compress = options.kombuCompression !== undefined;
    this.plainProps = this.compress ? COMPRESSED_PROPS : PLAIN_PROPS;
    this.mandatoryProps = Object.freeze({ ...this.plainProps, mandatory: true });
  }

  /** Publishes in flight (awaiting a confirm). */
  get pending(): number {
    return this.inFlight.size;
  }

  /**
   * Publishes one message and resolves once the broker confirmed it. Rejects with a retriable
   * ConnectionError when the connection or channel is lost before the confirm (the caller
   * retries with the same body), MessageUndeliverable for a returned mandatory message,
   * MessageDeliveryFailure when the broker nacks (retriable, `isNack`) or the confirm/blocked wait
   * exceeds `publishTimeout` (not retriable).
   */
  publish(exchange: string, routingKey: string, content: Buffer, opts: PublishOptions = {}): Promise<void> {
    const ch = this.channel;
    // Hot path: no await before the write when the channel is up and nothing holds us back.
    if (ch && this.channelGeneration === this.conn.openGeneration && !this.conn.isBlocked && !this.needsDrain) {
      return this.write(ch, exchange, routingKey, content, opts);
    }
    return this.publishSlow(exchange, routingKey, content, opts);
  }

  private async publishSlow(exchange: string, routingKey: string, content: Buffer, opts: PublishOptions): Promise<void> {
    const ch = this.channel && this.channelGeneration === this.conn.openGeneration ? this.channel : await this.openChannel();
    if (this.conn.isBlocked) await this.conn.waitUnblocked(this.options.publishTimeout, opts.signal);
    if (this.needsDrain) await new Promise<void>((r) => this.drainWaiters.push(r));
    // A call that timed out while the broker blocked us must not reach a server after the unblock.
    if (opts.call?.isOver) throw new AbortError('The call is over; not publishing its request');
    return this.write(ch, exchange, routingKey, content, opts);
  }

  private write(ch: ConfirmChannel, exchange: string, routingKey: string, body: Buffer, opts: PublishOptions): Promise<void> {
    const mandatory = opts.mandatory === true;
    let props: Options.Publish = this.plainProps;
    let content = body;
    if (opts.headers !== undefined) {
      // A copy of a received message (requeue, dead letter, replay): its body goes as it came,
      // content encoding included (the caller carries kombu's compression header over).
      props = { ...BASE_PROPS, headers: opts.headers, mandatory };
    } else if (opts.expiration !== undefined) {
      props = this.expirationProps(opts.expiration, mandatory);
    } else if (mandatory) {
      props = this.mandatoryProps;
    }
    if (opts.headers === undefined && this.compress) content = compressBody(body);
    return new Promise<void>((resolve, reject) => {
      // One shape for every record (requests and replies), so settle() stays monomorphic.
      const rec: InFlight = {
        resolve,
        reject,
        deadline: this.options.publishTimeout > 0 ? Date.now() + this.options.publishTimeout : Infinity,
        returned: false,
        content: mandatory ? content : undefined,
        routingKey: mandatory ? routingKey : undefined,
        exchange: mandatory ? exchange : undefined,
      };
      if (mandatory) {
        const list = this.mandatory.get(routingKey);
        if (list) list.push(rec);
        else this.mandatory.set(routingKey, [rec]);
      }
      this.inFlight.add(rec);
      this.ensureSweeper();
      let ok: boolean;
      try {
        ok = ch.publish(exchange, routingKey, content, props, (err) => this.settle(rec, err ? this.whyUnconfirmed(ch, content.length, err) : err));
      } catch (err) {
        // amqplib throws synchronously on a channel that is already closing/closed.
        this.settle(rec, err ?? new Error('channel closed'));
        return;
      }
      if (!ok && !this.needsDrain) {
        this.needsDrain = true;
        ch.once('drain', () => this.releaseDrain());
      }
    });
  }

  /** Properties with `expiration` (ms, rounded up), shared per value: amqplib only reads them. */
  private expirationProps(expiration: number, mandatory: boolean): Options.Publish {
    const ms = Math.max(0, Math.ceil(expiration));
    const key = mandatory ? -1 - ms : ms;
    let props = this.expirationCache.get(key);
    if (!props) {
      props = Object.freeze({ ...(mandatory ? this.mandatoryProps : this.plainProps), expiration: String(ms) });
      if (this.expirationCache.size >= EXPIRATION_PROPS_CACHE_SIZE) this.expirationCache.clear();
      this.expirationCache.set(key, props);
    }
    return props;
  }

  /** True when `decl` is declared on the current connection: lets hot paths skip an await. */
  isDeclared(decl: Declaration): boolean {
    return this.declaredGeneration === this.conn.openGeneration && this.declared.has(decl);
  }

  /**
   * Declares what `decl` needs (its exchange; a notification's queue and binding) once per
   * connection generation; concurrent callers share one declare.
   */
  ensureDeclared(decl: Declaration): Promise<void> {
    if (this.isDeclared(decl)) return Promise.resolve();
    return this.declareOnce(decl, async (ch) => {
      const ex = decl.exchange;
      await this.declare('exchange', ex.name, () => ch.assertExchange(ex.name, ex.type, ex.options));
      const queue = decl.queue;
      if (queue !== undefined) {
        await this.declare('queue', queue.name, () => ch.assertQueue(queue.name, queue.options));
        await this.declare('queue', queue.name, () => ch.bindQueue(queue.name, ex.name, decl.routingKey ?? queue.name));
      }
    });
  }

  /** Waits (bounded) for in-flight confirms, then forgets the channels; the connection is closed by its owner. */
  async drain(timeoutMs: number): Promise<void> {
    if (this.inFlight.size > 0 && this.conn.isOpen) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.idleWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    this.failAll(new MessageDeliveryFailure('The transport was cleaned up before the broker confirmed the message'));
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  private async declareOnce(decl: Declaration, fn: (ch: Channel) => Promise<void>): Promise<void> {
    const model = await this.conn.ensureOpen();
    const generation = this.conn.current?.generation ?? -1;
    if (generation !== this.declaredGeneration) {
      this.declared = new WeakSet();
      this.declaring = new Map();
      this.declaredGeneration = generation;
    }
    if (this.declared.has(decl)) return;
    let p = this.declaring.get(decl);
    if (!p) {
      const declaring = this.declaring;
      p = (async () => {
        await fn(await this.openDeclareChannel(model));
        if (generation === this.declaredGeneration) this.declared.add(decl);
      })().finally(() => declaring.delete(decl));
      declaring.set(decl, p);
    }
    return p;
  }

  private async declare(kind: 'queue' | 'exchange', name: string, fn: () => Promise<unknown>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      throw isPreconditionFailed(err) ? declareMismatch(kind, name, err) : toMessagingError(err, `Could not declare ${kind} ${name}`);
    }
  }

  /** A plain channel for declares, so a refused declare never kills publishes awaiting confirms. */
  private openDeclareChannel(model: ChannelModel): Promise<Channel> {
    if (this.declareChannel) return Promise.resolve(this.declareChannel);
    this.declareOpening ??= (async () => {
      try {
        const ch = await model.createChannel();
        ch.on('error', (err: Error) => this.logger.debug('AMQP declare channel error', { err }));
        ch.on('close', () => {
          if (this.declareChannel === ch) this.declareChannel = undefined;
        });
        this.declareChannel = ch;
        return ch;
      } catch (err) {
        throw toMessagingError(err, 'Could not open a channel');
      } finally {
        this.declareOpening = undefined;
      }
    })();
    return this.declareOpening;
  }

  private openChannel(): Promise<ConfirmChannel> {
    this.opening ??= (async () => {
      try {
        const model = await this.conn.ensureOpen();
        const generation = this.conn.current?.generation ?? -1;
        if (this.channel && this.channelGeneration === generation) return this.channel;
        let ch: ConfirmChannel;
        try {
          ch = await model.createConfirmChannel();
        } catch (err) {
          throw toMessagingError(err, 'Could not open a confirm channel');
        }
        ch.on('error', (err: Error) => {
          this.closeErrors.set(ch, err);
          this.logger.warn('AMQP publish channel error', { err });
        });
        ch.on('return', (msg: Message) => this.onReturn(msg));
        ch.on('close', () => {
          if (this.channel === ch) this.channel = undefined;
          this.releaseDrain();
        });
        this.channel = ch;
        this.channelGeneration = generation;
        this.needsDrain = false;
        return ch;
      } finally {
        this.opening = undefined;
      }
    })();
    return this.opening;
  }

  /**
   * amqplib fails every unconfirmed publish of a closed channel with "channel closed"; when the
   * broker closed it because this message is over its `max_message_size` (406), that message gets
   * the broker's refusal (not retriable), the others on the channel the retriable "channel closed".
   */
  private whyUnconfirmed(ch: ConfirmChannel, size: number, err: unknown): unknown {
    const closed = this.closeErrors.get(ch);
    const limit = closed && brokerSizeLimit(closed);
    return limit !== undefined && size > limit ? toMessagingError(closed, `The broker refused a message of ${size} bytes`) : err;
  }

  private settle(rec: InFlight, err: unknown): void {
    if (!this.inFlight.delete(rec)) return;
    if (this.inFlight.size === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const wake of waiters) wake();
    }
    if (rec.routingKey !== undefined) {
      const list = this.mandatory.get(rec.routingKey);
      if (list) {
        const i = list.indexOf(rec);
        if (i >= 0) list.splice(i, 1);
        if (list.length === 0) this.mandatory.delete(rec.routingKey);
      }
    }
    if (err instanceof MessageDeliveryFailure) {
      rec.reject(err);
    } else if (err) {
      const text = err instanceof Error ? err.message : String(err);
      if (text === 'message nacked') rec.reject(nackFailure(err));
      else rec.reject(new ConnectionError(`The message was not confirmed: ${text}`, { cause: err }));
    } else if (rec.returned) {
      rec.reject(new MessageUndeliverable(`No queue is bound to receive the message (exchange "${rec.exchange}", routing key "${rec.routingKey}")`, rec.exchange ?? '', rec.routingKey ?? ''));
    } else {
      rec.resolve();
    }
  }

  /** RabbitMQ sends basic.return before the confirm of the same message. */
  private onReturn(msg: Message): void {
    const list = this.mandatory.get(msg.fields.routingKey);
    const rec = list?.find((r) => !r.returned && r.content !== undefined && r.content.equals(msg.content));
    if (rec) rec.returned = true;
  }

  /** One timer for all confirms (none per message): fails the ones past `publishTimeout`. */
  private ensureSweeper(): void {
    if (this.sweeper || this.options.publishTimeout <= 0) return;
    const period = Math.max(50, Math.min(1000, Math.floor(this.options.publishTimeout / 4)));
    this.sweeper = setInterval(() => {
      if (this.inFlight.size === 0) {
        clearInterval(this.sweeper);
        this.sweeper = undefined;
        return;
      }
      const now = Date.now();
      for (const rec of this.inFlight) {
        if (rec.deadline <= now) {
          this.settle(rec, new MessageDeliveryFailure(`The broker did not confirm the message within ${this.options.publishTimeout} ms`));
        }
      }
    }, period);
    this.sweeper.unref?.();
  }

  private failAll(err: Error): void {
    for (const rec of [...this.inFlight]) {
      this.inFlight.delete(rec);
      rec.reject(err);
    }
    this.mandatory.clear();
  }

  private releaseDrain(): void {
    this.needsDrain = false;
    for (const w of this.drainWaiters.splice(0)) w();
  }
}
