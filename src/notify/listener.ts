// Notification listeners (oslo notify/listener.py): subscribe to the (target, priority) pairs the
// endpoints handle, dispatch on a bounded executor, then acknowledge or requeue each message.
import type { EventEmitter } from 'eventemitter3';
import { GuardedEventEmitter } from '../core/events.js';
import { InvalidArgument, InvalidState, MessagingError, ServerListenError } from '../core/errors.js';
import { silentLogger, type Logger } from '../core/logger.js';
import { toLogger, type LoggerLike } from '../core/logger-adapters.js';
import { Target, validateNotificationTarget, type TargetInit } from '../core/target.js';
import type { Serializer } from '../core/serializer.js';
import { BoundedExecutor } from '../core/executor.js';
import { CloseOnce, withinDeadline, type CloseOptions } from '../core/lifecycle.js';
import type { Transport } from '../transport.js';
import type { IncomingMessage } from '../contract/incoming-message.js';
import { NotificationMessage } from '../contract/messages.js';
import type { Listener } from '../contract/listener.js';
import type { Context, Priority } from '../contract/types.js';
import type { TargetAndPriority } from '../contract/base-driver.js';
import {
  BatchNotificationDispatcher,
  NotificationDispatcher,
  NotificationResult,
  type BatchNotificationEndpoint,
  type DispatchOutcome,
  type NotificationEndpoint,
} from './dispatcher.js';
import type { CheckedEndpoints } from './endpoint-check.js';
import { dispatchChannel, type NotificationListenerEvents } from './instrumentation.js';
import { middlewareFor, type ListenerMiddleware } from '../middleware/middleware.js';
import { eventRoute, type NotificationEventHandler, type NotificationEventOptions } from './event-routes.js';
import type { InferOutput, StandardSchemaV1 } from '../core/schema.js';

/** Options of `getNotificationListener()` (and, with batch options, `getBatchNotificationListener()`). */
export interface NotificationListenerOptions<Ctx = Context> {
  /** Pool name: every pool gets each notification once; listeners in one pool share them. Needs the `pools` capability. */
  pool?: string;
  /** Requeue a notification when an endpoint returns REQUEUE or throws (else it is acknowledged). Needs `requeue`. @default false */
  allowRequeue?: boolean;
  /** Handlers (plain) or batches (batch listener) in flight at once. @default 64 */
  executorSize?: number;
  /** Rebuilds the context and payload from the wire. @default NoOpSerializer */
  serializer?: Serializer<Ctx>;
  /** Where dispatch errors are logged; pino, bunyan, winston and console are adapted. @default the transport's logger */
  logger?: LoggerLike;
  /** Interceptors around each handler run, inside the transport's `middleware.listener`. @default [] */
  middleware?: readonly ListenerMiddleware<any>[];
}

/** Options of `getBatchNotificationListener()`. */
export interface BatchNotificationListenerOptions<Ctx = Context> extends NotificationListenerOptions<Ctx> {
  /** Most notifications per batch. @default 100 */
  batchSize?: number;
  /** Longest wait for one batch, first message included, in ms (one stopwatch per batch). @default 1000 */
  batchTimeout?: number;
}

/** Defaults of NotificationListenerOptions (no pool: a listener without one shares the topic's queue). */
export const NOTIFICATION_LISTENER_DEFAULTS = Object.freeze({
  /** A failing or REQUEUE-returning endpoint does not requeue; the message is acknowledged. */
  allowRequeue: false,
  /** Notifications handled at once. */
  executorSize: 64,
});
/** Defaults of BatchNotificationListenerOptions: the plain defaults plus the batch size and deadline. */
export const BATCH_NOTIFICATION_LISTENER_DEFAULTS = Object.freeze({
  ...NOTIFICATION_LISTENER_DEFAULTS,
  /** Most notifications per batch. */
  batchSize: 100,
  /** Longest wait for one batch, ms. */
  batchTimeout: 1000,
});

type State = 'idle' | 'starting' | 'running' | 'stopping' | 'stopped' | 'waiting';

/**
 * A running subscription. Lifecycle: `start()` → `stop()` → `wait()`, after which it may be
 * started again; out of order (`stop()` before `start()`, `wait()` before `stop()`, `start()`
 * after `stop()` without `wait()`) rejects with InvalidState. Repeating a step is harmless.
 * `close()` (or `await using`) does all of the ending in one call, from any state.
 */
export class NotificationListener {
  /** The targets (topics) subscribed to. */
  readonly targets: readonly Target[];
  /** The pool; undefined = the topic's shared default queue. */
  readonly pool: string | undefined;
  /** Whether REQUEUE and handler failures requeue. */
  readonly allowRequeue: boolean;
  /** Most notifications per dispatch (1 for a plain listener). */
  readonly batchSize: number;
  /** Batch deadline, ms (undefined for a plain listener). */
  readonly batchTimeout: number | undefined;
  /** Typed events: `started`, `stopped`, `dispatched`, `handlerError`. A listener that throws is logged, never breaks dispatch. */
  readonly events: EventEmitter<NotificationListenerEvents>;

  private state: State = 'idle';
  private starting?: Promise<void>;
  private stopping?: Promise<void>;
  private waiting?: Promise<void>;
  private readonly closer = new CloseOnce((deadlineMs) => this.closeWithin(deadlineMs), true);
  private listener?: Listener<IncomingMessage>;
  private readonly executor: BoundedExecutor;
  private readonly dispatcher: NotificationDispatcher;
  private readonly logger: Logger;

  /** Use `getNotificationListener()` / `getBatchNotificationListener()`. */
  constructor(
    private readonly transport: Transport,
    targets: ReadonlyArray<Target | TargetInit>,
    endpoints: readonly object[],
    options: BatchNotificationListenerOptions<any>,
    private readonly batch: boolean,
  ) {
    if (!transport || typeof transport !== 'object' || !('driver' in transport)) {
      throw new InvalidArgument('transport', 'a Transport from getNotificationTransport()', transport);
    }
    if (options === null || typeof options !== 'object') throw new InvalidArgument('options', 'an object', options);
    this.targets = checkTargets(targets);
    this.pool = checkPool(options.pool);
    this.allowRequeue = checkBoolean('allowRequeue', options.allowRequeue ?? NOTIFICATION_LISTENER_DEFAULTS.allowRequeue);
    const executorSize = checkPositiveInteger('executorSize', options.executorSize ?? NOTIFICATION_LISTENER_DEFAULTS.executorSize);
    if (batch) {
      this.batchSize = checkPositiveInteger('batchSize', options.batchSize ?? BATCH_NOTIFICATION_LISTENER_DEFAULTS.batchSize);
      this.batchTimeout = checkPositiveInteger('batchTimeout', options.batchTimeout ?? BATCH_NOTIFICATION_LISTENER_DEFAULTS.batchTimeout);
    } else {
      this.batchSize = 1;
      this.batchTimeout = undefined;
    }
    this.logger = toLogger(options.logger, transport.logger ?? silentLogger).child({ component: batch ? 'batch-notification-listener' : 'notification-listener', pool: this.pool });
    this.events = new GuardedEventEmitter<NotificationListenerEvents>(this.logger);
    const Dispatcher = batch ? BatchNotificationDispatcher : NotificationDispatcher;
    this.dispatcher = new Dispatcher(endpoints, {
      serializer: options.serializer,
      logger: this.logger,
      onHandlerError: (failure) => {
        if (this.events.listenerCount('handlerError') > 0) this.events.emit('handlerError', failure);
      },
      middleware: middlewareFor(transport, 'listener', options.middleware),
      allowEmpty: true,
    });
    // Missing capabilities fail here, at construction, never when a message arrives.
    transport.driver.requireFeatures({ requeue: this.allowRequeue, pools: this.pool !== undefined });
    this.executor = new BoundedExecutor(executorSize);
  }

  /** The priorities subscribed to: those some endpoint has a method for, and those of `on()` handlers. */
  get priorities(): readonly Priority[] {
    return this.dispatcher.supportedPriorities;
  }

  /**
   * Events by name: runs `handler(ctx, payload, metadata)` for notifications whose event type
   * matches the glob `pattern` (`*` matches any run of characters, dots included; the whole
   * event type must match). Handlers run after the priority endpoints, in registration order.
   * With `options.payload` (a Standard Schema) the handler gets the schema's output, typed; a
   * payload it refuses is logged (without the payload), reported on `handlerError` and
   * acknowledged. Subscribes to every priority unless `options.priorities` says otherwise.
   * Only before `start()` (or after `wait()`): otherwise throws InvalidState.
   */
  on<Ctx = Context>(pattern: string, handler: NotificationEventHandler<Ctx>): this;
  on<S extends StandardSchemaV1 = StandardSchemaV1<any>, Ctx = Context>(pattern: string, options: NotificationEventOptions<S>, handler: NotificationEventHandler<Ctx, InferOutput<S>>): this;
  on(pattern: string, optionsOrHandler: unknown, handler?: unknown): this {
    if (this.state !== 'idle') throw new InvalidState(`Cannot add an on() handler to a notification listener that is ${this.state}; add handlers before start()`);
    this.dispatcher.addEventRoute(eventRoute(pattern, optionsOrHandler, handler));
    return this;
  }

  /** True between a completed `start()` and `stop()`. */
  get running(): boolean {
    return this.state === 'running';
  }

  /** Handlers (batches, for a batch listener) running right now. */
  get inFlight(): number {
    return this.executor.running;
  }

  /** Subscribes; resolves once a notification sent afterwards will be received. */
  start(): Promise<void> {
    if (this.state === 'starting' || this.state === 'running') return this.starting!;
    if (this.state !== 'idle') return Promise.reject(new InvalidState(`Cannot start a notification listener that is ${this.state}; call wait() after stop() first`));
    if (this.priorities.length === 0) return Promise.reject(new InvalidArgument('endpoints', 'a non-empty array of endpoint objects, or handlers added with on()', []));
    this.state = 'starting';
    this.stopping = undefined;
    this.waiting = undefined;
    this.transport.track(this);
    this.starting = this.subscribe();
    return this.starting;
  }

  /** Stops taking notifications, hands the ones already received to the endpoints, then resolves. */
  stop(): Promise<void> {
    if (this.stopping) return this.stopping;
    if (this.state !== 'starting' && this.state !== 'running') return Promise.reject(new InvalidState(`Cannot stop a notification listener that is ${this.state}; call start() first`));
    this.state = 'stopping';
    this.stopping = this.unsubscribe();
    return this.stopping;
  }

  /** Waits for in-flight handlers, then releases the broker subscription. Call after `stop()`. */
  wait(): Promise<void> {
    if (this.waiting) return this.waiting;
    if (this.state !== 'stopping' && this.state !== 'stopped') return Promise.reject(new InvalidState(`Cannot wait for a notification listener that is ${this.state}; call stop() first`));
    this.waiting = this.drain();
    return this.waiting;
  }

  private async subscribe(): Promise<void> {
    const pairs: TargetAndPriority[] = this.targets.flatMap((t) => this.priorities.map((p) => [t, p] as const));
    try {
      this.listener = await this.transport.driver.listenForNotifications(pairs, { pool: this.pool, batchSize: this.batchSize, batchTimeout: this.batchTimeout });
      this.listener.start((messages) => this.onMessages(messages));
    } catch (err) {
      if (this.state === 'starting') {
        this.state = 'idle';
        this.starting = undefined;
        this.transport.untrack(this);
      }
      if (err instanceof MessagingError) throw err;
      throw new ServerListenError(`Could not start the notification listener: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    // stop() may have been called meanwhile; it owns the state from then on.
    if (this.state === 'starting') this.state = 'running';
    this.logger.debug('notification listener started', { targets: this.targets.map(String), priorities: this.priorities });
    this.events.emit('started');
  }

  private async unsubscribe(): Promise<void> {
    // A stop() during start() waits for the subscription, so nothing is left behind.
    await this.starting?.catch(() => undefined);
    await this.listener?.stop();
    this.state = 'stopped';
    this.events.emit('stopped');
  }

  private async drain(): Promise<void> {
    await this.stopping;
    this.state = 'waiting';
    try {
      await this.executor.drain();
      await this.listener?.cleanup();
    } finally {
      this.listener = undefined;
      this.starting = undefined;
      this.state = 'idle';
      this.transport.untrack(this);
    }
  }

  /**
   * Ends the listener from any state, never rejecting with InvalidState: `stop()`, then `wait()`
   * within `options.deadlineMs`. Past the deadline it releases the broker subscription anyway,
   * so notifications still unsettled go back to the broker (another listener of the pool gets
   * them; a driver may first give running handlers its `shutdown_timeout_ms` to settle), and
   * rejects with MessagingTimeout saying how many handlers were still running. Idempotent: a
   * call while one is under way returns its promise; a call on a listener that is not started
   * resolves at once. Rejects with InvalidArgument for a bad `deadlineMs`.
   */
  close(options?: CloseOptions): Promise<void> {
    return this.closer.close(options);
  }

  /** `await using listener = getNotificationListener(...)` closes it with the default deadline. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private async closeWithin(deadlineMs: number): Promise<void> {
    if (this.state === 'idle') return;
    const graceful = this.stop().then(() => this.wait());
    await withinDeadline(graceful, deadlineMs, () => this.release(), () => `Notification listener did not drain within ${deadlineMs} ms: ${this.inFlight} handler(s) still running; its subscription was released`);
  }

  /** Past the deadline: unsettled notifications go back to the broker; wait() finishes later. */
  private async release(): Promise<void> {
    this.transport.untrack(this);
    try {
      await this.listener?.cleanup();
    } catch (err) {
      this.logger.error('listener cleanup failed', { err });
    }
  }

  /** The driver's callback: returns once the messages hold executor slots (back-pressure); a promise only when it had to wait. */
  private onMessages(messages: IncomingMessage[]): Promise<void> | void {
    if (messages.length === 0) return;
    if (this.batch) {
      if (!this.executor.tryStart(() => this.processBatch(messages))) return this.executor.submit(() => this.processBatch(messages));
      return;
    }
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i];
      if (!this.executor.tryStart(() => this.processOne(message))) return this.submitFrom(messages, i);
    }
  }

  private async submitFrom(messages: IncomingMessage[], from: number): Promise<void> {
    for (let i = from; i < messages.length; i++) {
      const message = messages[i];
      await this.executor.submit(() => this.processOne(message));
    }
  }

  /**
   * One notification of a plain listener: dispatched, then settled. Synchronous while its
   * handlers return plain values and the driver's message settles at once (every driver's
   * NotificationMessage does): no promise per notification then.
   */
  private processOne(message: IncomingMessage): Promise<void> | void {
    const startedAt = performance.now();
    const outcome = this.dispatcher.dispatchWithReason(message);
    if (outcome instanceof Promise) return outcome.then((o) => this.settleOne(message, o, startedAt));
    return this.settleOne(message, outcome, startedAt);
  }

  private settleOne(message: IncomingMessage, outcome: DispatchOutcome, startedAt: number): Promise<void> | void {
    const requeue = this.allowRequeue && outcome.result === NotificationResult.REQUEUE;
    const settling = this.settleMessage(message, requeue, outcome.reason);
    if (settling) return settling.then(() => this.dispatched([message], requeue ? 1 : 0, startedAt));
    this.dispatched([message], requeue ? 1 : 0, startedAt);
  }

  private async processBatch(messages: IncomingMessage[]): Promise<void> {
    const startedAt = performance.now();
    // Each message to requeue, with the handler error that asked for it (the driver records it in its dead letters).
    const requeues = await (this.dispatcher as BatchNotificationDispatcher).dispatchBatchWithReasons(messages);
    await this.settle(messages, requeues, startedAt);
  }

  /** Acknowledges or requeues each message, in order, then reports the dispatch. */
  private async settle(messages: IncomingMessage[], requeues: ReadonlyMap<IncomingMessage, unknown>, startedAt: number): Promise<void> {
    let requeued = 0;
    for (const m of messages) {
      const requeue = this.allowRequeue && requeues.has(m);
      if (requeue) requeued++;
      // A NotificationMessage settles at once: no microtask turn per message of the batch then.
      const settling = this.settleMessage(m, requeue, requeues.get(m));
      if (settling) await settling;
    }
    this.dispatched(messages, requeued, startedAt);
  }

  /**
   * Acknowledges or requeues one message. The seam's NotificationMessage (every driver's) settles
   * at once, without a promise; another IncomingMessage through its async methods. Never rejects.
   */
  private settleMessage(m: IncomingMessage, requeue: boolean, reason: unknown): Promise<void> | void {
    try {
      if (Object.getPrototypeOf(m) === NotificationMessage.prototype) return (m as NotificationMessage).settle(requeue, reason);
      return Promise.resolve(requeue ? m.requeue(reason) : m.acknowledge()).catch((err: unknown) => this.settleFailed(m, requeue, err));
    } catch (err) {
      this.settleFailed(m, requeue, err);
    }
  }

  /** The contract says settling never throws; a driver bug must not stop the listener either. */
  private settleFailed(m: IncomingMessage, requeue: boolean, err: unknown): void {
    this.logger.error('could not settle a notification', { err, requeue, messageId: m.msgId });
  }

  /** Emits `dispatched` (and publishes it on the diagnostics channel) when someone listens. */
  private dispatched(messages: IncomingMessage[], requeued: number, startedAt: number): void {
    if (this.events.listenerCount('dispatched') === 0 && !dispatchChannel.hasSubscribers) return;
    const priorities = [...new Set(messages.map((m) => m.notification.priority.toLowerCase()))];
    const event = { priorities, messages: messages.length, acknowledged: messages.length - requeued, requeued, durationMs: performance.now() - startedAt, contexts: messages.map((m) => m.ctx) };
    this.events.emit('dispatched', event);
    if (dispatchChannel.hasSubscribers) dispatchChannel.publish(event);
  }
}

/**
 * A listener calling endpoint methods once per notification: `(ctx, publisherId, eventType, payload, metadata)`.
 * Every endpoint needs a priority method: the types reject one that certainly has none, and
 * construction throws InvalidArgument (naming its index) for any that has none.
 */
export function getNotificationListener<Ctx = Context, const E extends ReadonlyArray<NotificationEndpoint<Ctx> | object> = ReadonlyArray<NotificationEndpoint<Ctx> | object>>(
  transport: Transport,
  targets: ReadonlyArray<Target | TargetInit>,
  endpoints: E & CheckedEndpoints<E>,
  options: NotificationListenerOptions<Ctx> = {},
): NotificationListener {
  const batchOptions = options as BatchNotificationListenerOptions<Ctx> | null;
  if (batchOptions !== null && typeof batchOptions === 'object' && (batchOptions.batchSize !== undefined || batchOptions.batchTimeout !== undefined)) {
    throw new InvalidArgument('options', 'no batchSize/batchTimeout (use getBatchNotificationListener)', options);
  }
  return new NotificationListener(transport, targets, endpoints, options, false);
}

/**
 * A listener calling endpoint methods with one array per priority group of each polled batch.
 * Endpoints are checked as for `getNotificationListener()`.
 */
export function getBatchNotificationListener<
  Ctx = Context,
  const E extends ReadonlyArray<BatchNotificationEndpoint<Ctx> | object> = ReadonlyArray<BatchNotificationEndpoint<Ctx> | object>,
>(
  transport: Transport,
  targets: ReadonlyArray<Target | TargetInit>,
  endpoints: E & CheckedEndpoints<E>,
  options: BatchNotificationListenerOptions<Ctx> = {},
): NotificationListener {
  return new NotificationListener(transport, targets, endpoints, options, true);
}

function checkTargets(targets: unknown): readonly Target[] {
  if (!Array.isArray(targets) || targets.length === 0) throw new InvalidArgument('targets', 'a non-empty array of Targets', targets);
  return Object.freeze(
    targets.map((t) => {
      const target = Target.from(t);
      validateNotificationTarget(target);
      return target;
    }),
  );
}

function checkPool(pool: unknown): string | undefined {
  if (pool === undefined) return undefined;
  if (typeof pool !== 'string' || pool.length === 0 || /[\s\0]/.test(pool)) throw new InvalidArgument('pool', 'a non-empty name without whitespace', pool);
  return pool;
}

function checkBoolean(field: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw new InvalidArgument(field, 'a boolean', value);
  return value;
}

function checkPositiveInteger(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw new InvalidArgument(field, 'a positive integer', value);
  return value;
}
