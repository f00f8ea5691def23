// The pull side of the contract: a listener polled for batches of messages, and the
// batchPoll helper that builds a batch poll out of a one-message poll on ONE stopwatch.
import { AsyncQueue } from '../structures/async-queue.js';
import { StopWatch } from '../structures/stopwatch.js';
import type { ReceivedMessage } from './incoming-message.js';

/** Options of one `PollStyleListener.poll()`. */
export interface PollOptions {
  /** Longest wait for the first message (and, as in oslo, for the whole batch), in ms; undefined waits until a message or stop(). */
  timeout?: number;
  /** Most messages returned by one poll. @default 1 */
  batchSize?: number;
  /** When set, the whole batch (first message included) is collected within this many ms. */
  batchTimeout?: number;
}

/** Options of `batchPoll()`. */
export interface BatchPollOptions extends PollOptions {
  /** The driver's prefetch; a positive value caps batchSize. */
  prefetchSize?: number;
  /** Clock for the stopwatch (tests pass a fake one). */
  now?: () => number;
}

/**
 * Collects up to `batchSize` messages from `pollOne`. ONE stopwatch of `batchTimeout ??
 * timeout` (the shorter one when both are set, as oslo clips the batch to `timeout`) covers
 * the whole batch: the wait for the first message counts against it, and the total wait never
 * exceeds it. Returns early when a poll yields nothing in the time left or the batch is full.
 * Without any deadline it waits for the first message, then takes only what is ready, so a
 * partial batch is never held back indefinitely. A positive `prefetchSize` caps `batchSize`.
 */
export async function batchPoll<M>(
  pollOne: (timeoutMs: number | undefined) => Promise<M | undefined>,
  options: BatchPollOptions = {},
): Promise<M[]> {
  const batchSize = effectiveBatchSize(options);
  const watch = new StopWatch(batchLimit(options), options.now);
  const out: M[] = [];
  while (out.length < batchSize) {
    const message = await pollOne(out.length === 0 ? watch.leftover() : (watch.leftover() ?? 0));
    if (message === undefined) break;
    out.push(message);
  }
  return out;
}

/** `batchSize` as batchPoll applies it: NaN or a fraction (which would end a batch at once) count as 1; a positive prefetch caps it. */
function effectiveBatchSize(options: BatchPollOptions): number {
  const batchSize = Math.max(1, Math.floor(options.batchSize ?? 1) || 1);
  return options.prefetchSize !== undefined && options.prefetchSize > 0 ? Math.min(batchSize, options.prefetchSize) : batchSize;
}

/** The one stopwatch limit of a batch: the shorter of `timeout` and `batchTimeout`. */
function batchLimit({ timeout, batchTimeout }: PollOptions): number | undefined {
  return timeout !== undefined && batchTimeout !== undefined ? Math.min(timeout, batchTimeout) : (batchTimeout ?? timeout);
}

/**
 * A listener the caller pulls from. Implementations MUST make a pending `poll()` resolve
 * promptly (with what it has, possibly `[]`) once `stop()` is called, and MUST keep handing
 * out messages already received after `stop()` so that they can be delivered, not lost.
 */
export abstract class PollStyleListener<M extends ReceivedMessage = ReceivedMessage> {
  /** A positive prefetch caps the batch size of polls. -1 = no prefetch limit. */
  constructor(
    /** A positive prefetch caps the batch size of polls. -1 = no prefetch limit. */
    readonly prefetchSize: number = -1,
  ) {}

  /** Resolves with 0..batchSize messages, per the single-stopwatch rules of batchPoll. */
  abstract poll(options?: PollOptions): Promise<M[]>;

  /**
   * The batch `poll(options)` would resolve with, when it is known at once (messages are ready
   * and the batch rules would not wait for more); otherwise undefined, and the caller polls.
   * Taking it is the same as polling it. MUST NOT wait or throw. The default knows nothing.
   */
  pollReady(_options?: PollOptions): M[] | undefined {
    return undefined;
  }

  /** Stops taking new messages from the broker; MUST wake a pending poll. Idempotent. */
  abstract stop(): Promise<void>;

  /** Releases broker resources (consumers, channels). MUST NOT lose acknowledged state. Idempotent. */
  abstract cleanup(): Promise<void>;
}

/**
 * A PollStyleListener fed by push: the driver calls `deliver()` from its consumer callback
 * and `poll()` takes from the buffer. Most drivers extend this.
 */
export abstract class BufferedPollStyleListener<M extends ReceivedMessage = ReceivedMessage> extends PollStyleListener<M> {
  /** Messages delivered and not yet polled. */
  protected readonly buffer = new AsyncQueue<M>();

  /** Hands a received message to pollers. */
  deliver(message: M): void {
    this.buffer.push(message);
  }

  /** batchPoll's rules, kept by the buffer itself: one promise and at most one timer per batch. */
  override poll(options: PollOptions = {}): Promise<M[]> {
    return this.buffer.take(effectiveBatchSize({ batchSize: options.batchSize, prefetchSize: this.prefetchSize }), batchLimit(options));
  }

  /**
   * What is buffered, when batchPoll would not wait for more: a full batch, or any without a
   * deadline. A subclass that overrides poll() gets no answer here (its poll may differ).
   */
  override pollReady(options: PollOptions = {}): M[] | undefined {
    const ready = this.buffer.size;
    if (ready === 0 || this.poll !== BufferedPollStyleListener.prototype.poll) return undefined;
    const batchSize = effectiveBatchSize({ batchSize: options.batchSize, prefetchSize: this.prefetchSize });
    const limit = batchLimit(options);
    if (ready < batchSize && limit !== undefined && limit > 0) return undefined;
    const n = Math.min(ready, batchSize);
    const out: M[] = [];
    for (let i = 0; i < n; i++) out.push(this.buffer.tryShift() as M);
    return out;
  }

  override async stop(): Promise<void> {
    this.buffer.close();
  }
}
