// The pull side of the contract: a listener polled for batches of messages, and the
// batchPoll helper that builds a batch poll out of a one-message poll on ONE stopwatch.
import { AsyncQueue } from './async-queue.js';
import { StopWatch } from './stopwatch.js';
import type { IncomingMessage } from './incoming-message.js';

export interface PollOptions {
  /** Longest wait for the first message (and, as in oslo, for the whole batch), in ms; undefined waits until a message or stop(). */
  timeout?: number;
  /** Most messages returned by one poll. @default 1 */
  batchSize?: number;
  /** When set, the whole batch (first message included) is collected within this many ms. */
  batchTimeout?: number;
}

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
  // NaN or a fraction would make the loop below end at once; treat anything odd as 1.
  let batchSize = Math.max(1, Math.floor(options.batchSize ?? 1) || 1);
  if (options.prefetchSize !== undefined && options.prefetchSize > 0) batchSize = Math.min(batchSize, options.prefetchSize);
  const { timeout, batchTimeout } = options;
  const limit = timeout !== undefined && batchTimeout !== undefined ? Math.min(timeout, batchTimeout) : (batchTimeout ?? timeout);
  const watch = new StopWatch(limit, options.now);
  const out: M[] = [];
  while (out.length < batchSize) {
    const message = await pollOne(out.length === 0 ? watch.leftover() : (watch.leftover() ?? 0));
    if (message === undefined) break;
    out.push(message);
  }
  return out;
}

/**
 * A listener the caller pulls from. Implementations MUST make a pending `poll()` resolve
 * promptly (with what it has, possibly `[]`) once `stop()` is called, and MUST keep handing
 * out messages already received after `stop()` so that they can be delivered, not lost.
 */
export abstract class PollStyleListener<M extends IncomingMessage = IncomingMessage> {
  /** A positive prefetch caps the batch size of polls. -1 = no prefetch limit. */
  constructor(readonly prefetchSize: number = -1) {}

  /** Resolves with 0..batchSize messages, per the single-stopwatch rules of batchPoll. */
  abstract poll(options?: PollOptions): Promise<M[]>;

  /** Stops taking new messages from the broker; MUST wake a pending poll. Idempotent. */
  abstract stop(): Promise<void>;

  /** Releases broker resources (consumers, channels). MUST NOT lose acknowledged state. Idempotent. */
  abstract cleanup(): Promise<void>;
}

/**
 * A PollStyleListener fed by push: the driver calls `deliver()` from its consumer callback
 * and `poll()` takes from the buffer. Most drivers extend this.
 */
export abstract class BufferedPollStyleListener<M extends IncomingMessage = IncomingMessage> extends PollStyleListener<M> {
  protected readonly buffer = new AsyncQueue<M>();

  /** Hands a received message to pollers. */
  deliver(message: M): void {
    this.buffer.push(message);
  }

  override poll(options: PollOptions = {}): Promise<M[]> {
    return batchPoll((t) => this.buffer.shift(t), { ...options, prefetchSize: this.prefetchSize });
  }

  override async stop(): Promise<void> {
    this.buffer.close();
  }
}
