// The Listener of a driver's source. Push sources (amqplib consumers, memory consumers, Kafka
// eachBatch) hand messages straight to the callback, or, for batches, fill a buffered
// PollStyleListener; pull sources (Redis) are PollStyleListeners. Every batch goes through the
// adapter and batchPoll.
import { InvalidState } from '../core/errors.js';
import { silentLogger, type Logger, type LogFields } from '../core/logger.js';
import type { ReceivedMessage } from './incoming-message.js';
import { PollStyleListenerAdapter, type Listener, type ListenerCallback } from './listener.js';
import { BufferedPollStyleListener, PollStyleListener } from './poll-style-listener.js';

/** Where a push source hands its messages. `deliver` MUST NOT throw. */
export interface ListenerSink<M extends ReceivedMessage = ReceivedMessage> {
  /** One received message, in broker order. */
  deliver(message: M): void;
  /**
   * Takes back the messages that were delivered but not handed to the callback yet and that
   * `matches` selects (e.g. their channel died, so the broker redelivers them).
   */
  withdraw(matches: (message: M) => boolean): M[];
}

/** A driver's subscription that pushes. The listener owns it: it stops and cleans it up. */
export interface PushSource<M extends ReceivedMessage = ReceivedMessage> {
  /** Connects the sink; called once, before the source subscribes. */
  attach(sink: ListenerSink<M>): void;
  /** Stops taking messages from the broker; no `deliver` after it resolves. Idempotent. */
  stop(): Promise<void>;
  /** Releases broker resources; unsettled messages go back to the broker. Idempotent. */
  cleanup(): Promise<void>;
}

/** How a push source's listener delivers. */
export interface PushListenerOptions {
  /** Messages per callback; above 1 the listener collects batches. @default 1 */
  batchSize?: number;
  /** Deadline for collecting one batch, in ms (batchPoll's single stopwatch). */
  batchTimeout?: number;
  /** The driver's prefetch; a positive value caps batch sizes. */
  prefetchSize?: number;
  /** Where failing callbacks are logged. @default silent */
  logger?: Logger;
}

/**
 * The Listener of a push source. Without batching every message goes to the callback as it
 * arrives (no buffer, no poll loop); while a callback's promise is pending (back-pressure: the
 * server's executor is full) later messages wait in order. With `batchSize > 1` or a
 * `batchTimeout` they are collected by a poll loop under batchPoll's rules.
 */
export function listenToPushSource<M extends ReceivedMessage>(source: PushSource<M>, options: PushListenerOptions = {}): Listener<M> {
  const batching = (options.batchSize ?? 1) > 1 || options.batchTimeout !== undefined;
  if (!batching) return new PushListener(source, options.logger ?? silentLogger);
  const buffer = new PushBuffer(source, options.prefetchSize);
  return new PollStyleListenerAdapter(buffer, { batchSize: options.batchSize, batchTimeout: options.batchTimeout, logger: options.logger });
}

/**
 * The Listener of a driver's source: a pull source (a PollStyleListener) runs under the
 * PollStyleListenerAdapter, one message or one batch per poll; a push source goes through
 * {@link listenToPushSource}. `prefetchSize` applies to push sources (a pull source has its own).
 */
export function listenTo<M extends ReceivedMessage>(source: PushSource<M> | PollStyleListener<M>, options: PushListenerOptions = {}): Listener<M> {
  if (!(source instanceof PollStyleListener)) return listenToPushSource(source, options);
  return new PollStyleListenerAdapter(source, { batchSize: options.batchSize, batchTimeout: options.batchTimeout, logger: options.logger });
}

/** One message at a time, straight from the source to the callback. */
class PushListener<M extends ReceivedMessage> implements Listener<M>, ListenerSink<M> {
  private callback?: ListenerCallback<M>;
  /** Messages waiting while a callback is pending or before start(); `head` is the next one. */
  private backlog: M[] = [];
  private head = 0;
  private busy = false;
  private stopping?: Promise<void>;
  private idle?: () => void;
  /** The source's stop(), as called by stop(). */
  private sourceStopped?: Promise<void>;

  constructor(
    private readonly source: PushSource<M>,
    private readonly logger: Logger,
  ) {
    source.attach(this);
  }

  start(callback: ListenerCallback<M>): void {
    if (this.callback) throw new InvalidState('Listener already started');
    if (this.stopping) throw new InvalidState('Listener already stopped; create a new one');
    this.callback = callback;
    this.drain();
  }

  deliver(message: M): void {
    if (this.callback === undefined || this.busy || this.head < this.backlog.length) {
      this.backlog.push(message);
      return;
    }
    this.invoke(message);
  }

  withdraw(matches: (message: M) => boolean): M[] {
    const kept: M[] = [];
    const taken: M[] = [];
    for (let i = this.head; i < this.backlog.length; i++) (matches(this.backlog[i]) ? taken : kept).push(this.backlog[i]);
    this.backlog = kept;
    this.head = 0;
    return taken;
  }

  /** Stops the source, then hands everything already received to the callback, then resolves. */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  async cleanup(): Promise<void> {
    this.stop().catch(() => undefined);
    await this.sourceStopped;
    // Not delivered after a cleanup (a close() past its deadline): unsettled, so the broker redelivers them.
    this.backlog = [];
    this.head = 0;
    await this.source.cleanup();
  }

  private async doStop(): Promise<void> {
    this.sourceStopped = this.source.stop();
    await this.sourceStopped;
    if (this.callback === undefined) return;
    if (this.busy || this.head < this.backlog.length) await new Promise<void>((resolve) => (this.idle = resolve));
  }

  private invoke(message: M): void {
    let accepted: Promise<void> | void;
    try {
      accepted = this.callback!([message]);
    } catch (err) {
      this.logError(err);
      return;
    }
    if (accepted === undefined || typeof (accepted as { then?: unknown }).then !== 'function') return;
    this.busy = true;
    Promise.resolve(accepted).then(
      () => this.resume(),
      (err: unknown) => {
        this.logError(err);
        this.resume();
      },
    );
  }

  private resume(): void {
    this.busy = false;
    this.drain();
  }

  /** Hands the backlog to the callback until one is pending again or nothing is left. */
  private drain(): void {
    while (!this.busy && this.head < this.backlog.length) {
      const message = this.backlog[this.head++];
      this.invoke(message);
    }
    if (this.busy) return;
    if (this.backlog.length > 0) {
      this.backlog.length = 0;
      this.head = 0;
    }
    const idle = this.idle;
    this.idle = undefined;
    idle?.();
  }

  /** A throwing logger must not break delivery (nor surface as an unhandled rejection). */
  private logError(err: unknown): void {
    const fields: LogFields = { err, messages: 1 };
    try {
      this.logger.error('listener callback failed', fields);
    } catch {
      // nothing sensible left to report to
    }
  }
}

/** A batch listener's buffer: the push source fills it, the adapter's poll loop takes batches. */
class PushBuffer<M extends ReceivedMessage> extends BufferedPollStyleListener<M> implements ListenerSink<M> {
  constructor(
    private readonly source: PushSource<M>,
    prefetchSize = -1,
  ) {
    super(prefetchSize);
    source.attach(this);
  }

  withdraw(matches: (message: M) => boolean): M[] {
    return this.withdrawWhere(matches);
  }

  override async stop(): Promise<void> {
    await this.source.stop();
    await super.stop();
  }

  async cleanup(): Promise<void> {
    await this.source.cleanup();
  }
}
