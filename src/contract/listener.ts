// The push side of the contract: a Listener calls back with batches of messages.
// PollStyleListenerAdapter turns any PollStyleListener into one with a resilient poll loop:
// every batch listener of every driver is one, its batches collected by batchPoll.
import { InvalidState } from '../core/errors.js';
import { silentLogger, type Logger, type LogFields } from '../core/logger.js';
import type { ReceivedMessage } from './incoming-message.js';
import type { PollStyleListener } from './poll-style-listener.js';

/**
 * Called with each batch. The returned promise should settle when the batch has been
 * *accepted* (e.g. handed to a bounded executor), not necessarily processed: the listener
 * does not poll again until it settles, which is how back-pressure reaches the broker.
 */
export type ListenerCallback<M extends ReceivedMessage = ReceivedMessage> = (messages: M[]) => Promise<void> | void;

/** A push-style listener returned by `BaseDriver.listen*`. */
export interface Listener<M extends ReceivedMessage = ReceivedMessage> {
  /** Starts delivering batches to `callback`. Calling it twice is an error. */
  start(callback: ListenerCallback<M>): void;
  /**
   * Stops taking new messages, then delivers everything already received from the broker to
   * the callback, then resolves. Idempotent.
   */
  stop(): Promise<void>;
  /**
   * Releases broker resources; call after `stop()` has resolved to lose nothing. Called while
   * `stop()` still waits on the callback's back-pressure (a `close()` past its deadline), it
   * MUST NOT wait for the callback: what was received and not handed to it yet is left
   * unsettled, so the broker gets it back. Idempotent.
   */
  cleanup(): Promise<void>;
}

/** Options of `PollStyleListenerAdapter`. */
export interface PollStyleListenerAdapterOptions {
  /** @default 1 */
  batchSize?: number;
  /** Batch deadline in ms; undefined sends each batch as soon as the first message arrives and batchSize is reached or nothing else is buffered. */
  batchTimeout?: number;
  /** Where poll and callback failures are logged. @default silentLogger */
  logger?: Logger;
  /** Backoff after a failed poll or callback, in ms: doubles from `min` to `max`. @default { minMs: 10, maxMs: 1000 } */
  backoff?: {
    /** First wait, ms. */
    minMs: number;
    /** Longest wait, ms. */
    maxMs: number;
  };
}

const DEFAULT_BACKOFF = Object.freeze({ minMs: 10, maxMs: 1000 });
/** An empty poll faster than this did not wait at all. */
const EMPTY_POLL_SPIN_MS = 2;

/**
 * Runs a poll loop over a PollStyleListener. A failing poll or callback is logged and the
 * loop goes on after a backoff; it never dies. `stop()` stops the source, waits for the
 * loop, then delivers what the source still holds before resolving.
 */
export class PollStyleListenerAdapter<M extends ReceivedMessage = ReceivedMessage> implements Listener<M> {
  private callback?: ListenerCallback<M>;
  private running = false;
  private loop?: Promise<void>;
  private stopping?: Promise<void>;
  private wakeBackoff?: () => void;
  /** Set by cleanup(): stop() no longer hands what the source holds to the callback. */
  private released = false;
  /** The source's stop(), as called by stop(). */
  private sourceStopped?: Promise<void>;
  private readonly logger: Logger;
  private readonly backoff: { minMs: number; maxMs: number };

  constructor(
    /** The pull source this adapter polls. */
    readonly source: PollStyleListener<M>,
    private readonly options: PollStyleListenerAdapterOptions = {},
  ) {
    this.logger = options.logger ?? silentLogger;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
  }

  start(callback: ListenerCallback<M>): void {
    if (this.callback) throw new InvalidState('Listener already started');
    if (this.stopping) throw new InvalidState('Listener already stopped; create a new one');
    this.callback = callback;
    this.running = true;
    this.loop = this.run();
  }

  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  async cleanup(): Promise<void> {
    this.released = true;
    this.stop().catch(() => undefined);
    await this.sourceStopped;
    await this.source.cleanup();
  }

  private async doStop(): Promise<void> {
    this.running = false;
    this.sourceStopped = this.source.stop();
    await this.sourceStopped;
    this.wakeBackoff?.();
    await this.loop;
    // Deliver what was already taken from the broker: a stopped listener loses nothing.
    if (!this.callback) return;
    for (let i = 0; i < 100_000 && !this.released; i++) {
      let batch: M[];
      try {
        batch = await this.source.poll({ timeout: 0, batchSize: this.options.batchSize ?? 1, batchTimeout: 0 });
      } catch (err) {
        this.logError('poll failed while draining a stopped listener', { err });
        return;
      }
      if (batch.length === 0 || this.released) return;
      await this.invoke(batch);
    }
  }

  private async run(): Promise<void> {
    let delay = this.backoff.minMs;
    const options = { batchSize: this.options.batchSize ?? 1, batchTimeout: this.options.batchTimeout };
    while (this.running) {
      try {
        const polledAt = performance.now();
        const batch = await this.source.poll(options);
        if (batch.length === 0) {
          if (!this.running) break;
          // An empty poll that waited (a batch window passed) just loops, after yielding once.
          // One that came back at once means the source was stopped under us (e.g. a lost
          // consumer): back off, or a poll resolving at once would starve the event loop.
          const instant = performance.now() - polledAt < Math.min(EMPTY_POLL_SPIN_MS, (this.options.batchTimeout ?? Infinity) / 2);
          await this.sleep(instant ? delay : 0);
          delay = instant ? Math.min(delay * 2, this.backoff.maxMs) : this.backoff.minMs;
          continue;
        }
        const accepted = this.invoke(batch);
        // A synchronous callback costs no await.
        if (!(accepted === true || (accepted !== false && (await accepted)))) throw new CallbackFailed();
        delay = this.backoff.minMs;
      } catch (err) {
        if (!this.running) break;
        if (!(err instanceof CallbackFailed)) this.logError('listener poll failed; retrying', { err, retryInMs: delay });
        await this.sleep(delay);
        delay = Math.min(delay * 2, this.backoff.maxMs);
      }
    }
  }

  /** False when the callback threw or rejected (already logged); a promise only when the callback returned one. */
  private invoke(batch: M[]): boolean | Promise<boolean> {
    let accepted: Promise<void> | void;
    try {
      accepted = this.callback!(batch);
    } catch (err) {
      this.logError('listener callback failed', { err, messages: batch.length });
      return false;
    }
    if (accepted === undefined || typeof (accepted as { then?: unknown }).then !== 'function') return true;
    return Promise.resolve(accepted).then(
      () => true,
      (err: unknown) => {
        this.logError('listener callback failed', { err, messages: batch.length });
        return false;
      },
    );
  }

  /** A throwing logger must not kill the loop (nor surface as an unhandled rejection). */
  private logError(msg: string, fields: LogFields): void {
    try {
      this.logger.error(msg, fields);
    } catch {
      // nothing sensible left to report to
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeBackoff = done;
    });
  }
}

class CallbackFailed extends Error {}
