// One close() for servers, listeners and transports: the deadline option, its validation, and the
// race of a graceful drain against that deadline, written once for every façade.
import { InvalidArgument, MessagingTimeout } from './errors.js';

/** Options of `close()` on RpcServer, NotificationListener and Transport. */
export interface CloseOptions {
  /**
   * How long, in ms, running handlers may take to finish. Past it, the subscription is released
   * anyway (what is still unsettled goes back to the broker) and `close()` rejects with
   * MessagingTimeout. `0` releases at once; `Infinity` waits for as long as the handlers run.
   * @default 30000
   */
  deadlineMs?: number;
}

/** Defaults of {@link CloseOptions}. */
export const CLOSE_DEFAULTS = Object.freeze({
  /** Running handlers get 30 s (under Kubernetes' default 30 s grace period only if you shorten it). */
  deadlineMs: 30_000,
});

/**
 * What a Transport closes before its own cleanup: a server or listener started on it.
 * @internal
 */
export interface Closeable {
  /** Handlers running now. */
  readonly inFlight: number;
  /** Stops, drains within the deadline, releases the subscription. */
  close(options?: CloseOptions): Promise<void>;
}

/**
 * The deadline of `options`, validated.
 * @throws InvalidArgument when `options` is not an object or `deadlineMs` is not a number >= 0.
 */
function closeDeadline(options: CloseOptions | undefined): number {
  if (options === undefined) return CLOSE_DEFAULTS.deadlineMs;
  if (options === null || typeof options !== 'object') throw new InvalidArgument('options', 'an object such as { deadlineMs: 10000 }', options);
  const ms = options.deadlineMs ?? CLOSE_DEFAULTS.deadlineMs;
  if (typeof ms !== 'number' || Number.isNaN(ms) || ms < 0) throw new InvalidArgument('deadlineMs', 'a number of ms >= 0 (Infinity for no deadline)', ms);
  return ms;
}

/**
 * The `close()` of a façade, once: validates the deadline (a bad one rejects with
 * InvalidArgument), and a call while one is under way gets that one's promise. With `again`, a
 * finished close may run again (a server or listener can be started again); without it, every
 * later call gets the first call's promise (a transport).
 * @internal
 */
export class CloseOnce {
  private running?: Promise<void>;

  constructor(
    private readonly run: (deadlineMs: number) => Promise<void>,
    private readonly again: boolean,
  ) {}

  close(options: CloseOptions | undefined): Promise<void> {
    let deadlineMs: number;
    try {
      deadlineMs = closeDeadline(options);
    } catch (err) {
      return Promise.reject(err);
    }
    this.running ??= this.again ? this.run(deadlineMs).finally(() => (this.running = undefined)) : this.run(deadlineMs);
    return this.running;
  }
}

/**
 * Resolves when every one of `work` has settled (fulfilled or rejected) or after `ms`, whichever
 * is first. Never rejects: for a cleanup that gives what is still running a bounded time.
 * @internal
 */
export async function settledWithin(work: Iterable<Promise<unknown>>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.allSettled(work), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/**
 * Resolves when `graceful` does within `deadlineMs`. Otherwise awaits `release()` (which must
 * not throw) and rejects with MessagingTimeout built from `describe()`. `graceful` rejecting
 * rejects at once, with its error.
 * @internal
 */
export async function withinDeadline(graceful: Promise<void>, deadlineMs: number, release: () => Promise<void>, describe: () => string): Promise<void> {
  if (deadlineMs === Infinity) return graceful;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<true>((resolve) => (timer = setTimeout(resolve, deadlineMs, true)));
  try {
    if ((await Promise.race([graceful, expired])) !== true) return;
  } finally {
    clearTimeout(timer);
  }
  // Read before the release: what was still running when the deadline passed.
  const message = describe();
  // The drain goes on behind the release; its outcome is the caller's to log, never unhandled.
  graceful.catch(() => undefined);
  await release();
  throw new MessagingTimeout(message);
}
