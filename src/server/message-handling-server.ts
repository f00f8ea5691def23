// The one server lifecycle under the RPC server and every notification listener (oslo
// MessageHandlingServer): states, start/stop/wait/close, the executor, release and error routing.
import { HandlerTimeout, InvalidArgument, InvalidState, InvalidTarget, NotSupportedError, ServerListenError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { BoundedExecutor } from '../core/executor.js';
import { CloseOnce, withinDeadline, type Closeable, type CloseOptions } from '../core/lifecycle.js';
import type { Listener } from '../contract/listener.js';
import type { ReceivedMessage } from '../contract/incoming-message.js';
import { refusal, TRANSITIONS, type ServerState } from './transitions.js';
import { HandlerRun, type Expiry } from './handler-run.js';

/** Where a started server registers, so that closing its transport closes it first (a Transport). */
export interface ServerRegistry {
  /** Called at `start()`. */
  track(part: Closeable): void;
  /** Called once the server has ended (after `wait()`, a failed start, or a `close()` past its deadline). */
  untrack(part: Closeable): void;
}

/** The façade's part: how it subscribes, how it handles a message, and its words. */
interface ShapeBase<M extends ReceivedMessage> {
  /**
   * Validates the target(s) and asks the driver for a listener, which the lifecycle starts.
   * Usage errors (InvalidTarget, InvalidState, InvalidArgument, NotSupportedError) and
   * ServerListenError reject `start()` as they are; anything else is wrapped in ServerListenError.
   */
  listen(): Promise<Listener<M>>;
  /** Handlers (or batches) in flight at once; a positive integer the façade has validated. */
  executorSize: number;
  /** Usually the transport. */
  registry: ServerRegistry;
  /** The façade's typed emitter; the lifecycle emits `started` and `stopped` on it. It must never throw (GuardedEventEmitter). */
  events: { emit(event: 'started' | 'stopped'): boolean };
  /** The façade's logger (its child fields say which server). */
  logger: Logger;
  /** Names the server in errors: `RpcServer on <target>`, `Notification listener`. */
  subject: string;
  /** What one executor slot runs, in the close deadline's message: `request`, `handler`. */
  unit: string;
  /** Starts the debug line logged when receiving stops: `rpc server`. */
  label: string;
  /**
   * Longest a handler (a batch) may hold its executor slot, ms; undefined = no limit. With one,
   * `dispatch` gets a HandlerRun, and `expire` is called for a run past it.
   */
  handlerTimeout?: number;
  /**
   * A run passed `handlerTimeout` before its outcome was claimed; the lifecycle claimed it. Answers
   * the caller (or settles the messages) as if the handler had thrown `error`, emits the façade's
   * event, and returns the fields naming the work for the warn log (method, event types). Then the
   * run's signal aborts and its slot is freed; the handler's promise is left to finish on its own.
   */
  expire?(work: M | M[], error: HandlerTimeout, expiry: Expiry): Record<string, unknown>;
}

/**
 * The dispatch function: called once per message (`batch` false) or once per batch the driver
 * delivers (`batch` true), with an executor slot held. It settles its own outcome (reply,
 * acknowledge, requeue) and its own handler errors, and returns a promise only when it did
 * not finish synchronously. One that throws or rejects anyway is logged; the server goes on.
 */
export type ServerShape<M extends ReceivedMessage> = ShapeBase<M> &
  ({ batch?: false; dispatch: (message: M, run?: HandlerRun) => Promise<void> | void } | { batch: true; dispatch: (messages: M[], run?: HandlerRun) => Promise<void> | void });

/**
 * One lifecycle, `start()` → `stop()` → `wait()`, then `start()` again if wanted; the table in
 * `transitions.ts` says what each step does in each state. `close()` ends it from any state
 * within a deadline. The façades (RpcServer, NotificationListener) keep their public API and
 * delegate every step here.
 */
export class MessageHandlingServer<M extends ReceivedMessage = ReceivedMessage> implements Closeable {
  private current: ServerState = 'idle';
  private listener?: Listener<M>;
  private starting?: Promise<void>;
  private stopping?: Promise<void>;
  private waiting?: Promise<void>;
  private readonly executor: BoundedExecutor;
  private readonly closer = new CloseOnce((deadlineMs) => this.closeWithin(deadlineMs), true);
  private readonly dispatch: (work: M | M[], run?: HandlerRun) => Promise<void> | void;
  private readonly batch: boolean;
  private readonly timeoutMs: number | undefined;

  constructor(private readonly shape: ServerShape<M>) {
    this.executor = new BoundedExecutor(shape.executorSize);
    this.dispatch = shape.dispatch as (work: M | M[], run?: HandlerRun) => Promise<void> | void;
    this.batch = shape.batch === true;
    this.timeoutMs = shape.handlerTimeout;
  }

  /** Where the server is in its cycle. */
  get state(): ServerState {
    return this.current;
  }

  /** Handlers (or batches) running right now, at most `executorSize`. */
  get inFlight(): number {
    return this.executor.running;
  }

  /**
   * Subscribes and starts dispatching; resolves once a message sent afterwards is received.
   * Repeated while starting or running, returns the same promise; after `stop()` and before
   * `wait()` rejects with InvalidState. A failed start leaves the server idle and startable.
   */
  start(): Promise<void> {
    const rule = TRANSITIONS.start[this.current];
    if (rule === 'same') return this.starting!;
    if (rule === 'refuse') return Promise.reject(refusal('start', this.current));
    this.current = 'starting';
    this.stopping = this.waiting = undefined;
    this.shape.registry.track(this);
    this.starting = this.subscribe();
    return this.starting;
  }

  /**
   * Stops taking messages: the driver hands over what it already received (which waits for
   * executor slots), then `stopped` is emitted. During `start()` it waits for the subscription
   * first, so nothing stays subscribed; a start that fails meanwhile leaves nothing to stop.
   * Rejects with InvalidState before `start()`.
   */
  stop(): Promise<void> {
    if (this.stopping) return this.stopping;
    if (TRANSITIONS.stop[this.current] === 'refuse') return Promise.reject(refusal('stop', this.current));
    this.current = 'stopping';
    this.stopping = this.unsubscribe();
    return this.stopping;
  }

  /**
   * Waits for the handlers in flight (and those waiting for a slot), then releases the driver
   * listener; the server is idle again. Rejects with InvalidState before `stop()`.
   */
  wait(): Promise<void> {
    if (this.waiting) return this.waiting;
    if (TRANSITIONS.wait[this.current] === 'refuse') return Promise.reject(refusal('wait', this.current));
    this.waiting = this.finish();
    return this.waiting;
  }

  /** Resolves once every handler running or waiting for a slot has finished; takes nothing away. */
  drain(): Promise<void> {
    return this.executor.drain();
  }

  /**
   * `stop()` then `wait()` from any state, never rejecting with InvalidState, within
   * `options.deadlineMs`. Past it the driver listener is released anyway (what it has not
   * handed over goes back to the broker, as the driver's `cleanup()` says) and it rejects with
   * MessagingTimeout saying how many handlers still run; `wait()` finishes later. A call while
   * one is under way returns its promise; on an idle server it resolves at once.
   */
  close(options?: CloseOptions): Promise<void> {
    return this.closer.close(options);
  }

  private async subscribe(): Promise<void> {
    try {
      this.listener = await this.shape.listen();
      this.listener.start(this.receive);
    } catch (err) {
      // A stop() meanwhile owns the state: its wait() ends the cycle.
      if (this.current === 'starting') {
        this.current = 'idle';
        this.starting = undefined;
        this.shape.registry.untrack(this);
        void this.cleanupListener();
      }
      throw listenError(err, this.shape.subject);
    }
    if (this.current === 'starting') this.current = 'running';
    this.shape.events.emit('started');
  }

  private async unsubscribe(): Promise<void> {
    await this.starting?.catch(() => undefined);
    await this.listener?.stop();
    this.current = 'stopped';
    this.shape.logger.debug(`${this.shape.label} stopped receiving`);
    this.shape.events.emit('stopped');
  }

  private async finish(): Promise<void> {
    await this.stopping;
    this.current = 'waiting';
    await this.executor.drain();
    await this.cleanupListener();
    this.starting = undefined;
    this.current = 'idle';
    this.shape.registry.untrack(this);
  }

  private async closeWithin(deadlineMs: number): Promise<void> {
    if (this.current === 'idle') return;
    const graceful = this.stop().then(() => this.wait());
    await withinDeadline(graceful, deadlineMs, this.release, () => `${this.shape.subject} did not drain within ${deadlineMs} ms: ${this.inFlight} ${this.shape.unit}(s) still running; its subscription was released`);
  }

  /** Past the deadline: what was not handed to a handler goes back to the broker; wait() finishes later. */
  private readonly release = async (): Promise<void> => {
    this.shape.registry.untrack(this);
    const listener = this.listener;
    try {
      await listener?.cleanup();
    } catch (err) {
      this.logError('listener cleanup failed', err);
    }
  };

  /** Releases the driver listener (idempotent in the contract); a failure is logged, never thrown. */
  private async cleanupListener(): Promise<void> {
    const listener = this.listener;
    this.listener = undefined;
    try {
      await listener?.cleanup();
    } catch (err) {
      this.logError('listener cleanup failed', err);
    }
  }

  /**
   * The driver's callback. Synchronous while slots are free (no promise, no closure per
   * message); otherwise returns a promise that resolves once every message holds a slot, which
   * is how back-pressure reaches the driver and the broker.
   */
  private readonly receive = (messages: M[]): Promise<void> | void => {
    if (messages.length === 0) return;
    if (this.batch) {
      if (this.executor.tryAcquire()) return this.handle(messages);
      return this.admit(messages, 0);
    }
    for (let i = 0; i < messages.length; i++) {
      if (!this.executor.tryAcquire()) return this.admit(messages, i);
      this.handle(messages[i]);
    }
  };

  /** Back-pressure: waits for a slot for each of `messages[from..]` (the whole batch in batch mode), in order. */
  private async admit(messages: M[], from: number): Promise<void> {
    if (this.batch) {
      await this.executor.acquire();
      return this.handle(messages);
    }
    for (let i = from; i < messages.length; i++) {
      await this.executor.acquire();
      this.handle(messages[i]);
    }
  }

  /**
   * THE place a handler runs and its executor slot is freed; the caller took the slot. Whatever
   * the dispatch throws or rejects with is logged here and only frees the slot: a handler never
   * kills the server. With a `handlerTimeout`, see `handleWithin`.
   */
  private handle(work: M | M[]): void {
    if (this.timeoutMs !== undefined) return this.handleWithin(work, this.timeoutMs);
    let running: Promise<void> | void;
    try {
      running = this.dispatch(work);
    } catch (err) {
      this.dispatchFailed(err);
      running = undefined;
    }
    if (running === undefined) this.executor.release();
    else running.then(this.executor.release, this.failedAsync);
  }

  private readonly failedAsync = (err: unknown): void => {
    this.dispatchFailed(err);
    this.executor.release();
  };

  /**
   * `handle` under a deadline: a handler still running after `timeoutMs` is given up on (its
   * outcome answered by `expire`, its signal aborted, its slot freed), so stuck handlers cannot
   * use up the executor. One finishing synchronously never arms a timer.
   */
  private handleWithin(work: M | M[], timeoutMs: number): void {
    const run = new HandlerRun();
    let running: Promise<void> | void;
    try {
      running = this.dispatch(work, run);
    } catch (err) {
      this.dispatchFailed(err);
      running = undefined;
    }
    if (running === undefined) return this.executor.release();
    const timer = setTimeout(this.expire, timeoutMs, work, run, timeoutMs);
    running.then(
      () => this.ended(run, timer),
      (err: unknown) => {
        this.dispatchFailed(err);
        this.ended(run, timer);
      },
    );
  }

  /** The handler's promise settled: its slot is freed, unless the deadline freed it already. */
  private ended(run: HandlerRun, timer: NodeJS.Timeout): void {
    clearTimeout(timer);
    if (!run.expired) return this.executor.release();
    try {
      this.shape.logger.debug(`${this.shape.unit} finished after its handlerTimeout; its outcome was dropped`, { elapsedMs: run.elapsedMs() });
    } catch {
      // a throwing logger must not surface as an unhandled rejection
    }
  }

  /** The deadline: claims the outcome unless the handler is already answering with its own. */
  private readonly expire = (work: M | M[], run: HandlerRun, timeoutMs: number): void => {
    if (!run.claim()) return;
    run.expired = true;
    const expiry: Expiry = { timeoutMs, elapsedMs: run.elapsedMs() };
    const error = new HandlerTimeout(`${this.shape.unit} did not finish within handlerTimeout (${timeoutMs} ms)`);
    let fields: Record<string, unknown> = {};
    try {
      fields = this.shape.expire?.(work, error, expiry) ?? {};
    } catch (err) {
      this.logError('answering a timed-out handler failed', err);
    }
    run.abort(error);
    this.executor.release();
    try {
      this.shape.logger.warn(`${this.shape.unit} ran past handlerTimeout; its executor slot is freed, the handler left to finish on its own`, { ...fields, ...expiry });
    } catch {
      // a throwing logger must not keep the slot
    }
  };

  private dispatchFailed(err: unknown): void {
    this.logError('message handling failed unexpectedly', err);
  }

  /** A throwing logger must neither kill the server nor surface as an unhandled rejection. */
  private logError(msg: string, err: unknown): void {
    try {
      this.shape.logger.error(msg, { err });
    } catch {
      // nothing sensible left to report to
    }
  }
}

/** Misuse surfaces as itself; only failures of the driver to subscribe are wrapped. */
function listenError(err: unknown, subject: string): unknown {
  if (err instanceof ServerListenError || err instanceof InvalidTarget || err instanceof InvalidState || err instanceof InvalidArgument || err instanceof NotSupportedError) return err;
  return new ServerListenError(`${subject} could not subscribe: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}
