// Notification listeners (oslo notify/listener.py): a thin shape over the one server lifecycle
// (src/server) that subscribes to the (target, priority) pairs the endpoints handle, dispatches,
// then acknowledges or requeues each message.
import type { EventEmitter } from 'eventemitter3';
import { GuardedEventEmitter } from '../core/events.js';
import { InvalidArgument, InvalidState, type HandlerTimeout } from '../core/errors.js';
import { silentLogger, type Logger } from '../core/logger.js';
import { toLogger, type LoggerLike } from '../core/logger-adapters.js';
import { Target, validateNotificationTarget, type TargetInit } from '../core/target.js';
import type { Serializer } from '../core/serializer.js';
import type { CloseOptions } from '../core/lifecycle.js';
import type { Transport } from '../transport.js';
import type { IncomingMessage } from '../contract/incoming-message.js';
import { NotificationMessage } from '../contract/messages.js';
import type { Listener } from '../contract/listener.js';
import type { Context, Priority } from '../contract/types.js';
import type { TargetAndPriority } from '../contract/base-driver.js';
import { MessageHandlingServer } from '../server/message-handling-server.js';
import { checkHandlerTimeout, type Expiry, type HandlerRun } from '../server/handler-run.js';
import {
  BatchNotificationDispatcher,
  NotificationDispatcher,
  NotificationResult,
  type BatchNotificationEndpoint,
  type DispatchOutcome,
  type NotificationEndpoint,
} from './dispatcher.js';
import type { CheckedEndpoints } from './endpoint-check.js';
import { dispatchChannel, type NotificationHandlerTimeoutEvent, type NotificationListenerEvents } from './instrumentation.js';
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
  /**
   * Longest a notification's handlers (a batch's, for a batch listener) may run, ms. Past it the
   * message is requeued (with `allowRequeue`) or acknowledged as if the handler had thrown,
   * `metadata.signal` aborts, the executor slot is freed and a late settle is ignored; the
   * handler's promise is left to finish on its own. @default undefined (no limit)
   */
  handlerTimeout?: number;
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

/**
 * A running subscription. Lifecycle (the one of src/server, shared with the RPC server):
 * `start()` → `stop()` → `wait()`, after which it may be started again; out of order
 * (`stop()` before `start()`, `wait()` before `stop()`, `start()` after `stop()` without
 * `wait()`) rejects with InvalidState. Repeating a step is harmless.
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
  /** Longest a handler (a batch) may run, ms; undefined = no limit. */
  readonly handlerTimeout: number | undefined;
  /** What the running handlers can use, twice over: drivers MAY bound their prefetch to it (ListenOptions.prefetchHint). */
  private readonly prefetchHint: number;
  /** Typed events: `started`, `stopped`, `dispatched`, `handlerError`, `handlerTimeout`. A listener that throws is logged, never breaks dispatch. */
  readonly events: EventEmitter<NotificationListenerEvents>;

  private readonly lifecycle: MessageHandlingServer<IncomingMessage>;
  private readonly dispatcher: NotificationDispatcher;
  private readonly logger: Logger;

  /** Use `getNotificationListener()` / `getBatchNotificationListener()`. */
  constructor(
    private readonly transport: Transport,
    targets: ReadonlyArray<Target | TargetInit>,
    endpoints: readonly object[],
    options: BatchNotificationListenerOptions<any>,
    batch: boolean,
  ) {
    if (!transport || typeof transport !== 'object' || !('driver' in transport)) {
      throw new InvalidArgument('transport', 'a Transport from getNotificationTransport()', transport);
    }
    if (options === null || typeof options !== 'object') throw new InvalidArgument('options', 'an object', options);
    this.targets = checkTargets(targets);
    this.pool = checkPool(options.pool);
    this.allowRequeue = checkBoolean('allowRequeue', options.allowRequeue ?? NOTIFICATION_LISTENER_DEFAULTS.allowRequeue);
    const executorSize = checkPositiveInteger('executorSize', options.executorSize ?? NOTIFICATION_LISTENER_DEFAULTS.executorSize);
    this.handlerTimeout = checkHandlerTimeout(options.handlerTimeout);
    if (batch) {
      this.batchSize = checkPositiveInteger('batchSize', options.batchSize ?? BATCH_NOTIFICATION_LISTENER_DEFAULTS.batchSize);
      this.batchTimeout = checkPositiveInteger('batchTimeout', options.batchTimeout ?? BATCH_NOTIFICATION_LISTENER_DEFAULTS.batchTimeout);
    } else {
      this.batchSize = 1;
      this.batchTimeout = undefined;
    }
    this.prefetchHint = 2 * executorSize * this.batchSize;
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
    this.lifecycle = new MessageHandlingServer<IncomingMessage>({
      listen: () => this.listen(),
      ...(batch
        ? { batch: true, dispatch: (messages: IncomingMessage[], run?: HandlerRun) => this.processBatch(messages, run) }
        : { dispatch: (message: IncomingMessage, run?: HandlerRun) => this.processOne(message, run) }),
      executorSize,
      handlerTimeout: this.handlerTimeout,
      expire: (work, error, expiry) => this.expire(Array.isArray(work) ? work : [work], error, expiry),
      registry: transport,
      events: this.events,
      logger: this.logger,
      subject: 'Notification listener',
      unit: 'handler',
      label: 'notification listener',
    });
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
    const state = this.lifecycle.state;
    if (state !== 'idle') throw new InvalidState(`Cannot add an on() handler to a notification listener that is ${state}; add handlers before start()`);
    this.dispatcher.addEventRoute(eventRoute(pattern, optionsOrHandler, handler));
    return this;
  }

  /** True between a completed `start()` and `stop()`. */
  get running(): boolean {
    return this.lifecycle.state === 'running';
  }

  /** Handlers (batches, for a batch listener) running right now. */
  get inFlight(): number {
    return this.lifecycle.inFlight;
  }

  /** Subscribes; resolves once a notification sent afterwards will be received. */
  start(): Promise<void> {
    return this.lifecycle.start();
  }

  /** Stops taking notifications, hands the ones already received to the endpoints, then resolves. */
  stop(): Promise<void> {
    return this.lifecycle.stop();
  }

  /** Waits for in-flight handlers, then releases the broker subscription. Call after `stop()`. */
  wait(): Promise<void> {
    return this.lifecycle.wait();
  }

  /** The lifecycle's set-up: a subscription to every (target, priority) pair some handler takes. */
  private async listen(): Promise<Listener<IncomingMessage>> {
    if (this.priorities.length === 0) throw new InvalidArgument('endpoints', 'a non-empty array of endpoint objects, or handlers added with on()', []);
    const pairs: TargetAndPriority[] = this.targets.flatMap((t) => this.priorities.map((p) => [t, p] as const));
    const listener = await this.transport.driver.listenForNotifications(pairs, { pool: this.pool, batchSize: this.batchSize, batchTimeout: this.batchTimeout, prefetchHint: this.prefetchHint });
    this.logger.debug('notification listener started', { targets: this.targets.map(String), priorities: this.priorities });
    return listener;
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
    return this.lifecycle.close(options);
  }

  /** `await using listener = getNotificationListener(...)` closes it with the default deadline. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /**
   * One notification of a plain listener: dispatched, then settled. Synchronous while its
   * handlers return plain values and the driver's message settles at once (every driver's
   * NotificationMessage does): no promise per notification then.
   */
  private processOne(message: IncomingMessage, run?: HandlerRun): Promise<void> | void {
    const startedAt = performance.now();
    const outcome = this.dispatcher.dispatchWithReason(message, run?.signal);
    if (outcome instanceof Promise) return outcome.then((o) => this.settleOne(message, o, startedAt, run));
    return this.settleOne(message, outcome, startedAt, run);
  }

  private settleOne(message: IncomingMessage, outcome: DispatchOutcome, startedAt: number, run?: HandlerRun): Promise<void> | void {
    // Past its handlerTimeout the message was settled already: this late outcome is dropped.
    if (run !== undefined && !run.claim()) return;
    const requeue = this.allowRequeue && outcome.result === NotificationResult.REQUEUE;
    const settling = this.settleMessage(message, requeue, outcome.reason);
    if (settling) return settling.then(() => this.dispatched([message], requeue ? 1 : 0, startedAt));
    this.dispatched([message], requeue ? 1 : 0, startedAt);
  }

  private async processBatch(messages: IncomingMessage[], run?: HandlerRun): Promise<void> {
    const startedAt = performance.now();
    // Each message to requeue, with the handler error that asked for it (the driver records it in its dead letters).
    const requeues = await (this.dispatcher as BatchNotificationDispatcher).dispatchBatchWithReasons(messages, run?.signal);
    if (run !== undefined && !run.claim()) return;
    await this.settle(messages, requeues, startedAt);
  }

  /**
   * The lifecycle gave up on `messages` at the handlerTimeout: settled as when a handler throws
   * (requeued with `allowRequeue`, the HandlerTimeout as the reason, else acknowledged).
   */
  private expire(messages: IncomingMessage[], error: HandlerTimeout, expiry: Expiry): Record<string, unknown> {
    for (const m of messages) void this.settleMessage(m, this.allowRequeue, error);
    const eventTypes = [...new Set(messages.map((m) => m.notification.event_type))];
    const event: NotificationHandlerTimeoutEvent = { eventTypes, messages: messages.length, requeued: this.allowRequeue, messageIds: messages.map((m) => m.msgId), ...expiry };
    this.events.emit('handlerTimeout', event);
    return { eventTypes, messages: messages.length, requeued: this.allowRequeue };
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
