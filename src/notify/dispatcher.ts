// Routes received notifications to endpoint methods named after their priority (oslo
// notify/dispatcher.py): plain (one message per call) and batch (one array per priority group).
import { InvalidArgument } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { toLogger, type LoggerLike } from '../core/logger-adapters.js';
import { NoOpSerializer, type Serializer } from '../core/serializer.js';
import { isThenable } from '../core/types.js';
import { PRIORITIES, isPriority, type Context, type Priority } from '../contract/types.js';
import type { IncomingMessage } from '../contract/incoming-message.js';
import { NotificationFilter } from './filter.js';
import { requirePriorityMethod } from './endpoint-check.js';
import { checkMiddleware, composeMiddleware, type Chain, type ListenerInvocation, type ListenerMiddleware } from '../middleware/middleware.js';
import { runEventRoute, type EventRoute } from './event-routes.js';
import { NotificationResult, ReceivedMetadata, type NotificationBatchItem, type NotificationHandlerResult, type NotificationMetadata } from '../contract/handlers.js';

export { NotificationResult, type NotificationBatchItem, type NotificationHandlerResult, type NotificationMetadata };

type Awaitable<T> = T | Promise<T>;
type PlainHandler<Ctx> = (ctx: Ctx, publisherId: string | null, eventType: string, payload: any, metadata: NotificationMetadata) => Awaitable<NotificationHandlerResult>;
type BatchHandler<Ctx> = (messages: NotificationBatchItem<Ctx>[]) => Awaitable<NotificationHandlerResult>;

/**
 * A notification endpoint: a plain object or class instance with methods named after the
 * priorities it handles. Each method gets `(ctx, publisherId, eventType, payload, metadata)`.
 */
export interface NotificationEndpoint<Ctx = Context> {
  /** Screens notifications before any of this endpoint's methods run. */
  filterRule?: NotificationFilter;
  /** Handles `audit` notifications (security-relevant actions). */
  audit?: PlainHandler<Ctx>;
  /** Handles `debug` notifications. */
  debug?: PlainHandler<Ctx>;
  /** Handles `info` notifications, the usual priority. */
  info?: PlainHandler<Ctx>;
  /** Handles `warn` notifications (sent by `Notifier.warn()` and `warning()`). */
  warn?: PlainHandler<Ctx>;
  /** Handles `error` notifications. */
  error?: PlainHandler<Ctx>;
  /** Handles `critical` notifications. */
  critical?: PlainHandler<Ctx>;
  /** Handles `sample` notifications (metering samples). */
  sample?: PlainHandler<Ctx>;
}

/** A batch endpoint: each method gets one array of notifications of its priority. */
export interface BatchNotificationEndpoint<Ctx = Context> {
  /** Screens notifications before they are put into this endpoint's batches. */
  filterRule?: NotificationFilter;
  /** Handles `audit` notifications (security-relevant actions). */
  audit?: BatchHandler<Ctx>;
  /** Handles `debug` notifications. */
  debug?: BatchHandler<Ctx>;
  /** Handles `info` notifications, the usual priority. */
  info?: BatchHandler<Ctx>;
  /** Handles `warn` notifications (sent by `Notifier.warn()` and `warning()`). */
  warn?: BatchHandler<Ctx>;
  /** Handles `error` notifications. */
  error?: BatchHandler<Ctx>;
  /** Handles `critical` notifications. */
  critical?: BatchHandler<Ctx>;
  /** Handles `sample` notifications (metering samples). */
  sample?: BatchHandler<Ctx>;
}

/** Facts about a handler failure, for logs and instrumentation (never the payload). */
export interface HandlerFailure {
  /** What the handler threw. */
  error: unknown;
  /** The priority (the method name) that failed. */
  priority: Priority;
  /** The endpoint's class name, or `endpoints[i]` for a plain object. */
  endpoint: string;
  /** Event types of the notification(s) handed to the method. */
  eventTypes: string[];
}

export interface DispatcherOptions {
  serializer?: Serializer<any>;
  /** pino, bunyan, winston and console are adapted. @default silentLogger */
  logger?: LoggerLike;
  /** Called after a handler threw (the failure is already logged). */
  onHandlerError?: (failure: HandlerFailure) => void;
  /** Interceptors around each handler run (the listener passes the transport's and its own). @default [] */
  middleware?: readonly ListenerMiddleware<any>[];
  /** Accept an empty endpoints array (a listener may get `on()` handlers instead). @default false */
  allowEmpty?: boolean;
}

/** A handler run on its way through the middlewares, with the callback it ends in. */
interface HandlerInvocation extends ListenerInvocation<any> {
  readonly callback: Callback;
}

interface Callback {
  endpoint: object;
  name: string;
  method: (...args: any[]) => unknown;
  filter?: NotificationFilter;
}

interface Extracted {
  priority: string;
  item: NotificationBatchItem<unknown>;
}

/** What `exec` yields for a handler that threw: REQUEUE, with the error that caused it. */
class HandlerThrew {
  constructor(readonly error: unknown) {}
}

/** @internal A dispatch outcome with why a requeue was asked for (a handler's error), for the driver's dead letters. */
export interface DispatchOutcome {
  readonly result: NotificationResult;
  /** The error a handler threw (or decoding failed with); undefined when REQUEUE was returned. */
  readonly reason?: unknown;
}

/** Every endpoint handled it (or filtered it out): the outcome of nearly every notification, made once. */
const HANDLED: DispatchOutcome = Object.freeze({ result: NotificationResult.HANDLED });
/** An endpoint returned REQUEUE. */
const REQUEUED: DispatchOutcome = Object.freeze({ result: NotificationResult.REQUEUE });

/** Dispatches one notification at a time: endpoints in order until one asks to requeue. */
export class NotificationDispatcher {
  protected readonly callbacks = new Map<Priority, Callback[]>();
  protected readonly serializer: Serializer<any>;
  protected readonly logger: Logger;
  protected readonly onHandlerError?: (failure: HandlerFailure) => void;
  private readonly chain?: Chain<HandlerInvocation, NotificationHandlerResult>;
  private subscribed: readonly Priority[];

  constructor(endpoints: readonly object[], options: DispatcherOptions = {}) {
    if (!Array.isArray(endpoints) || (endpoints.length === 0 && !options.allowEmpty)) throw new InvalidArgument('endpoints', 'a non-empty array of endpoint objects', endpoints);
    this.serializer = options.serializer ?? new NoOpSerializer();
    this.logger = toLogger(options.logger);
    this.onHandlerError = options.onHandlerError;
    this.chain = composeMiddleware(checkMiddleware<ListenerMiddleware<any>>('middleware', options.middleware), async (inv: HandlerInvocation) => callHandler(inv.callback, inv.items, inv.batch));
    endpoints.forEach((endpoint, i) => {
      if (endpoint === null || typeof endpoint !== 'object') throw new InvalidArgument(`endpoints[${i}]`, 'an object', endpoint);
      const filter = (endpoint as { filterRule?: unknown }).filterRule;
      if (filter !== undefined && filter !== null && (typeof filter !== 'object' || typeof (filter as { match?: unknown }).match !== 'function')) {
        throw new InvalidArgument(`endpoints[${i}].filterRule`, 'a NotificationFilter', filter);
      }
      requirePriorityMethod(endpoint, i);
      const name = endpoint.constructor && endpoint.constructor !== Object ? endpoint.constructor.name : `endpoints[${i}]`;
      for (const priority of PRIORITIES) {
        const method = (endpoint as Record<string, unknown>)[priority];
        if (typeof method !== 'function') continue;
        const list = this.callbacks.get(priority) ?? [];
        list.push({ endpoint, name, method: method as Callback['method'], filter: (filter ?? undefined) as NotificationFilter | undefined });
        this.callbacks.set(priority, list);
      }
    });
    this.subscribed = Object.freeze(PRIORITIES.filter((p) => this.callbacks.has(p)));
  }

  /** Priorities some endpoint (or `on()` handler) handles: exactly what the listener subscribes to. */
  get supportedPriorities(): readonly Priority[] {
    return this.subscribed;
  }

  /** @internal Adds a `listener.on()` route after the endpoints of each of its priorities. */
  addEventRoute(route: EventRoute): void {
    const name = `on(${JSON.stringify(route.pattern)})`;
    const filter = new NotificationFilter({ eventType: route.eventType });
    for (const priority of route.priorities) {
      const refused = (error: unknown, eventType: string, messageId: string | undefined) => {
        // The schema's message may quote the payload: log only where it failed.
        this.logger.warn('notification payload refused by its schema; acknowledging', { endpoint: name, priority, eventType, field: (error as { field?: unknown }).field, messageId });
        this.report({ error, priority, endpoint: name, eventTypes: [eventType] });
      };
      const list = this.callbacks.get(priority) ?? [];
      list.push({ endpoint: route, name, method: this.eventMethod(route, refused), filter });
      this.callbacks.set(priority, list);
    }
    this.subscribed = Object.freeze(PRIORITIES.filter((p) => this.callbacks.has(p)));
  }

  /** The endpoint-style method of an `on()` route: one notification per call. */
  protected eventMethod(route: EventRoute, refused: (error: unknown, eventType: string, messageId: string | undefined) => void): Callback['method'] {
    return (ctx: unknown, publisherId: string | null, eventType: string, payload: unknown, metadata: NotificationMetadata) =>
      runEventRoute(route, { ctx, publisherId, eventType, payload, metadata }, (error) => refused(error, eventType, metadata.message_id));
  }

  /**
   * Runs the endpoints for one notification. Resolves HANDLED when every endpoint handled it
   * (or filtered it out, or the priority is unknown), REQUEUE when one returned REQUEUE or
   * threw. Never rejects: a failure while decoding the message also yields REQUEUE.
   */
  async dispatch(incoming: IncomingMessage): Promise<NotificationResult> {
    return (await this.dispatchWithReason(incoming)).result;
  }

  /**
   * @internal `dispatch`, also saying which error made it REQUEUE (the listener hands it to
   * `requeue(reason)`). Synchronous while every handler returns a plain value (no promise per
   * notification then); a promise once one returns a thenable or a middleware runs. `signal`
   * becomes `metadata.signal` (the listener's handlerTimeout).
   */
  dispatchWithReason(incoming: IncomingMessage, signal?: AbortSignal): DispatchOutcome | Promise<DispatchOutcome> {
    let extracted: Extracted;
    try {
      extracted = this.extract(incoming, signal);
    } catch (err) {
      this.logger.error('could not decode a notification for dispatch', { err, messageId: incoming.msgId });
      return { result: NotificationResult.REQUEUE, reason: err };
    }
    const { priority, item } = extracted;
    if (!isPriority(priority)) {
      this.logger.warn('unknown notification priority; acknowledging', { priority, messageId: item.metadata.message_id });
      return HANDLED;
    }
    const callbacks = this.callbacks.get(priority);
    return callbacks === undefined ? HANDLED : this.runFrom(callbacks, 0, priority, item);
  }

  /** Runs `callbacks` from index `from` on one item until one asks for a requeue (or throws). */
  private runFrom(callbacks: readonly Callback[], from: number, priority: Priority, item: NotificationBatchItem<unknown>): DispatchOutcome | Promise<DispatchOutcome> {
    for (let i = from; i < callbacks.length; i++) {
      const cb = callbacks[i];
      if (cb.filter && !matches(cb.filter, item)) continue;
      const ret = this.exec(cb, priority, [item], false);
      if (isThenable(ret)) return Promise.resolve(ret).then((value) => outcomeOf(value) ?? this.runFrom(callbacks, i + 1, priority, item));
      const outcome = outcomeOf(ret);
      if (outcome !== undefined) return outcome;
    }
    return HANDLED;
  }

  /**
   * Calls one handler (through the middlewares); a throw is logged, reported and turned into
   * HandlerThrew (REQUEUE with its error). A handler's plain return value comes back as it is,
   * a thenable as a promise that never rejects.
   */
  protected exec(cb: Callback, priority: Priority, items: NotificationBatchItem<unknown>[], batch: boolean): unknown {
    try {
      const ret = this.chain ? this.chain({ endpoint: cb.name, priority, batch, items, callback: cb }) : callHandler(cb, items, batch);
      if (isThenable(ret)) return Promise.resolve(ret).then(undefined, (error: unknown) => this.failed(error, cb, priority, items));
      return ret;
    } catch (error) {
      return this.failed(error, cb, priority, items);
    }
  }

  /** A handler threw or rejected: logged, reported, REQUEUE with its error. */
  private failed(error: unknown, cb: Callback, priority: Priority, items: NotificationBatchItem<unknown>[]): HandlerThrew {
    const eventTypes = [...new Set(items.map((i) => i.eventType))];
    this.logger.error('notification endpoint failed', { err: error, endpoint: cb.name, priority, eventTypes });
    this.report({ error, priority, endpoint: cb.name, eventTypes });
    return new HandlerThrew(error);
  }

  /** Hands a (logged) failure to `onHandlerError`. */
  protected report(failure: HandlerFailure): void {
    try {
      this.onHandlerError?.(failure);
    } catch {
      // an instrumentation hook must never change the outcome
    }
  }

  /** oslo `_extract_user_message`: context and payload through the serializer, priority lower-cased. */
  protected extract(incoming: IncomingMessage, signal?: AbortSignal): Extracted {
    const ctx = this.serializer.deserializeContext(incoming.ctx);
    const m = incoming.notification;
    const priority = m.priority.toLowerCase();
    const messageId = typeof m.message_id === 'string' ? m.message_id : undefined;
    const metadata = new ReceivedMetadata(messageId, typeof m.timestamp === 'string' ? m.timestamp : undefined, priority, incoming, signal);
    const item: NotificationBatchItem<unknown> = {
      ctx,
      publisherId: typeof m.publisher_id === 'string' ? m.publisher_id : null,
      eventType: m.event_type,
      payload: this.serializer.deserializeEntity(ctx, m.payload),
      metadata,
    };
    return { priority, item };
  }
}

/**
 * Dispatches a polled batch: notifications are grouped by priority and each endpoint method
 * gets one array per group (after its filter). REQUEUE or a throw requeues the whole group.
 */
export class BatchNotificationDispatcher extends NotificationDispatcher {
  /** An `on()` route gets the group's matching notifications one by one; REQUEUE or a throw stops it (and requeues the group). */
  protected override eventMethod(route: EventRoute, refused: (error: unknown, eventType: string, messageId: string | undefined) => void): Callback['method'] {
    return async (items: NotificationBatchItem<unknown>[]) => {
      for (const item of items) {
        const ret = await runEventRoute(route, item, (error) => refused(error, item.eventType, item.metadata.message_id));
        if (ret === NotificationResult.REQUEUE) return ret;
      }
      return undefined;
    };
  }

  /** Resolves with the messages to requeue (or to acknowledge when requeue is not allowed). Never rejects. */
  async dispatchBatch(incoming: readonly IncomingMessage[]): Promise<Set<IncomingMessage>> {
    return new Set((await this.dispatchBatchWithReasons(incoming)).keys());
  }

  /**
   * @internal `dispatchBatch`, with the error that made each message REQUEUE (undefined when
   * REQUEUE was returned). `signal`, the batch's one, is every item's `metadata.signal`.
   */
  async dispatchBatchWithReasons(incoming: readonly IncomingMessage[], signal?: AbortSignal): Promise<Map<IncomingMessage, unknown>> {
    const requeues = new Map<IncomingMessage, unknown>();
    const groups = new Map<string, { raw: IncomingMessage[]; items: NotificationBatchItem<unknown>[] }>();
    for (const message of incoming) {
      let extracted: Extracted;
      try {
        extracted = this.extract(message, signal);
      } catch (err) {
        this.logger.error('could not decode a notification for dispatch', { err, messageId: message.msgId });
        requeues.set(message, err);
        continue;
      }
      const group = groups.get(extracted.priority) ?? { raw: [], items: [] };
      group.raw.push(message);
      group.items.push(extracted.item);
      groups.set(extracted.priority, group);
    }
    for (const [priority, group] of groups) {
      if (!isPriority(priority)) {
        this.logger.warn('unknown notification priority; acknowledging', { priority, messages: group.raw.length });
        continue;
      }
      for (const cb of this.callbacks.get(priority) ?? []) {
        const items = cb.filter ? group.items.filter((item) => matches(cb.filter!, item)) : group.items.slice();
        if (items.length === 0) continue;
        const ret = await this.exec(cb, priority, items, true);
        if (ret === NotificationResult.REQUEUE || ret instanceof HandlerThrew) {
          const reason = ret instanceof HandlerThrew ? ret.error : undefined;
          for (const m of group.raw) requeues.set(m, reason);
          break;
        }
      }
    }
    return requeues;
  }
}

/** A batch method gets the array; a plain one `(ctx, publisherId, eventType, payload, metadata)` of the single item. */
function callHandler(cb: Callback, items: NotificationBatchItem<unknown>[], batch: boolean): Promise<NotificationHandlerResult> | NotificationHandlerResult {
  if (batch) return cb.method.call(cb.endpoint, items) as NotificationHandlerResult;
  const item = items[0];
  return cb.method.call(cb.endpoint, item.ctx, item.publisherId, item.eventType, item.payload, item.metadata) as NotificationHandlerResult;
}

/** The outcome a handler's return value decides (REQUEUE, or a throw), or undefined to go on with the next handler. */
function outcomeOf(ret: unknown): DispatchOutcome | undefined {
  if (ret instanceof HandlerThrew) return { result: NotificationResult.REQUEUE, reason: ret.error };
  if (ret === NotificationResult.REQUEUE) return REQUEUED;
  return undefined;
}


function matches(filter: NotificationFilter, item: NotificationBatchItem<unknown>): boolean {
  return filter.match(item.ctx, item.publisherId, item.eventType, item.metadata, item.payload);
}
