// The pull side of the contract: every batch goes through a PollStyleListener's poll(), and
// batchPoll is the one place a batch's stopwatch lives. Push drivers (memory, AMQP, Kafka)
// fill a BufferedPollStyleListener from their consumer callbacks; a pull driver (Redis
// XREADGROUP ... BLOCK) is one itself and reads only while someone polls.
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
 * One wait of a batch: appends 1..`max` messages to `batch` as soon as any is ready (what is
 * ready then, up to `max`) and resolves with how many; with 0 once `timeoutMs` passed
 * (undefined: no limit) or the source stopped. MUST NOT wait for `max` to fill: the batch's
 * stopwatch is batchPoll's. Messages already there MAY be returned synchronously (a count, no
 * promise).
 */
export type PollSome<M> = (batch: M[], max: number, timeoutMs: number | undefined) => number | Promise<number>;

/**
 * Collects up to `batchSize` messages from `pollSome`, the one place a batch's stopwatch lives.
 * ONE stopwatch of `batchTimeout ?? timeout` (the shorter one when both are set, as oslo clips
 * the batch to `timeout`), started with the batch's first wait, covers the whole batch: every
 * wait gets only the time left, so messages trickling in never hold a batch open past it.
 * Returns when the batch is full, the time is up, or a wait yields nothing. Without any deadline
 * it waits for the first messages and returns what was ready with them, so a partial batch is
 * never held back indefinitely. A positive `prefetchSize` caps `batchSize`. A batch that is
 * ready at once costs one wait; one that fills while waiting, one wait per burst of arrivals.
 * Messages are collected into `batch`, which the caller may take some back from while it fills.
 */
export async function batchPoll<M>(pollSome: PollSome<M>, options: BatchPollOptions = {}, batch: M[] = []): Promise<M[]> {
  const batchSize = effectiveBatchSize(options);
  const watch = new StopWatch(batchLimit(options), options.now);
  let left = watch.durationMs;
  for (;;) {
    let got = pollSome(batch, batchSize - batch.length, left);
    if (typeof got !== 'number') got = await got;
    // Past the deadline, one last wait of 0 still takes what is ready.
    if (got === 0 || left === undefined || left === 0 || batch.length >= batchSize) return batch;
    left = watch.leftover();
  }
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

  /**
   * Resolves with 0..batchSize messages. MUST collect them with `batchPoll` (one stopwatch per
   * batch, never restarted per message or per wait); a BufferedPollStyleListener does.
   */
  abstract poll(options?: PollOptions): Promise<M[]>;

  /** Stops taking new messages from the broker; MUST wake a pending poll. Idempotent. */
  abstract stop(): Promise<void>;

  /** Releases broker resources (consumers, channels). MUST NOT lose acknowledged state. Idempotent. */
  abstract cleanup(): Promise<void>;
}

/**
 * A PollStyleListener over a buffer, polled under batchPoll's rules: one promise per wait and
 * at most one timer. Push drivers (memory, AMQP, Kafka) fill it from their consumer callbacks
 * through `deliver()`; a pull driver (Redis) also overrides `fetch()`, called when a poll finds
 * the buffer empty, to read from the broker on demand and `deliver()` what it reads.
 */
export abstract class BufferedPollStyleListener<M extends ReceivedMessage = ReceivedMessage> extends PollStyleListener<M> {
  /** Messages delivered and not yet polled. */
  protected readonly buffer = new AsyncQueue<M>();

  /** Hands a received message to pollers. */
  deliver(message: M): void {
    this.buffer.push(message);
  }

  /** The batch a pending poll is collecting: taken from the buffer, not handed out yet. */
  private filling?: M[];

  override async poll(options: PollOptions = {}): Promise<M[]> {
    const batch: M[] = [];
    this.filling = batch;
    try {
      return await batchPoll(this.pollSome, { timeout: options.timeout, batchSize: options.batchSize, batchTimeout: options.batchTimeout, prefetchSize: this.prefetchSize }, batch);
    } finally {
      if (this.filling === batch) this.filling = undefined;
    }
  }

  /**
   * Takes back the messages that `matches` selects among those not handed out yet: buffered, or
   * in the batch a poll is still collecting (e.g. their channel died, so the broker redelivers them).
   */
  protected withdrawWhere(matches: (message: M) => boolean): M[] {
    const taken: M[] = [];
    for (const message of this.buffer.drain()) {
      if (matches(message)) taken.push(message);
      else this.buffer.push(message);
    }
    const filling = this.filling;
    if (filling !== undefined) {
      let kept = 0;
      for (const message of filling) {
        if (matches(message)) taken.push(message);
        else filling[kept++] = message;
      }
      filling.length = kept;
    }
    return taken;
  }

  /**
   * A pull source reads from its broker here: called when a poll is about to wait on an empty
   * buffer, with what it may take and how long it waits (0: it does not). What it reads goes to
   * `deliver()`. MUST NOT throw (log and read again later). Push sources keep this no-op.
   */
  protected fetch(_max: number, _timeoutMs: number | undefined): void {}

  private readonly pollSome: PollSome<M> = (batch, max, timeoutMs) => {
    const ready = this.buffer.takeReady(batch, max);
    if (ready > 0) return ready;
    if (this.buffer.size === 0 && !this.buffer.closed) this.fetch(max, timeoutMs);
    return this.buffer.takeInto(batch, max, timeoutMs);
  };

  override async stop(): Promise<void> {
    this.buffer.close();
  }
}
