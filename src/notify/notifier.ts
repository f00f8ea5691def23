// The Notifier façade (oslo notify/notifier.py): builds the §1.10 body once and hands it to
// every configured driver; resolves only when all of them delivered it.
import { randomUUID } from 'node:crypto';
import type { EventEmitter } from 'eventemitter3';
import { GuardedEventEmitter } from '../core/events.js';
import { InvalidArgument, MessageDeliveryFailure, MessagingError } from '../core/errors.js';
import { checkRetry } from '../core/checks.js';
import { silentLogger, type Logger } from '../core/logger.js';
import { toLogger, type LoggerLike } from '../core/logger-adapters.js';
import { NoOpSerializer, type Serializer } from '../core/serializer.js';
import { assertJsonSafe, isPlainObject } from '../core/json-check.js';
import type { Transport } from '../transport.js';
import type { Context, Priority } from '../contract/types.js';
import { sendChannel, type NotifierEvents } from './instrumentation.js';
import { composeMiddleware, middlewareFor, type Chain, type NotifierInvocation, type NotifierMiddleware } from '../middleware/middleware.js';
import {
  LogNotifierDriver,
  MessagingNotifierDriver,
  NOTIFIER_DRIVER_NAMES,
  NoopNotifierDriver,
  SECRET_KEY_PATTERN,
  TestNotificationSink,
  TestNotifierDriver,
  type NotificationBody,
  type NotifierDriver,
  type NotifierDriverName,
  type WirePriority,
} from './notifier-drivers.js';

/** Options of `new Notifier()`. */
export interface NotifierOptions<Ctx = Context> {
  /** Sender identity, e.g. `compute.host1`; `null` on the wire when absent. @default null */
  publisherId?: string | null;
  /** Driver name(s), or custom NotifierDriver objects. @default 'messagingv2' */
  driver?: NotifierDriverName | NotifierDriver | ReadonlyArray<NotifierDriverName | NotifierDriver>;
  /** Each notification goes to `<topic>.<priority>` for every topic. @default ['notifications'] */
  topics?: readonly string[];
  /** Connection retries: undefined or -1 = forever, 0 = none, N = N retries. @default undefined */
  retry?: number;
  /** Turns the context and payload into JSON values. @default NoOpSerializer */
  serializer?: Serializer<Ctx>;
  /** Where the `log` driver writes and failures are reported; pino, bunyan, winston and console are adapted. @default the transport's logger */
  logger?: LoggerLike;
  /** The list the `test` driver appends to. @default a new sink per Notifier */
  testSink?: TestNotificationSink;
  /**
   * Context keys that look like secrets (`auth_token`, `password`, ... per SECRET_KEY_PATTERN)
   * are dropped before sending: a notification bus is read by many consumers, and oslo 14
   * likewise drops `auth_token`. Set true to send the context untouched.
   * @default false
   */
  sendSecretContextKeys?: boolean;
  /** Interceptors around each notification, inside the transport's `middleware.notifier`; shared by `prepare()`d children. @default [] */
  middleware?: readonly NotifierMiddleware<any>[];
}

/** Defaults of NotifierOptions. */
export const NOTIFIER_DEFAULTS = Object.freeze({
  /** No publisher id: `null` on the wire. */
  publisherId: null,
  /** oslo's `messagingv2`: the broker, in the 2.0 envelope. */
  driver: 'messagingv2' as NotifierDriverName,
  /** oslo's default notification topic. */
  topics: Object.freeze(['notifications']) as readonly string[],
  /** Secret-looking context keys are dropped. */
  sendSecretContextKeys: false,
});

/** Overrides for `prepare()`. */
export interface NotifierPrepareOptions {
  /** Another publisher id (`null` clears it). */
  publisherId?: string | null;
  /** Another connection retry count. */
  retry?: number;
}

interface NotifierCore<Ctx> {
  readonly drivers: readonly NotifierDriver[];
  readonly driverNames: readonly string[];
  readonly serializer: Serializer<Ctx>;
  readonly logger: Logger;
  readonly sendSecretContextKeys: boolean;
  readonly chain?: Chain<SendInvocation, void>;
  readonly topics: readonly string[];
}

/** A notification on its way through the middlewares, with the (possibly prepared) notifier that sends it. */
interface SendInvocation extends NotifierInvocation<any> {
  readonly notifier: Notifier<any>;
}

/**
 * Sends notifications. Each method resolves once every driver delivered the notification
 * (for `messaging`/`messagingv2`: the broker accepted it on every topic).
 *
 * Deliberately stricter than oslo, which only logs a driver failure: here a failure REJECTS
 * with the driver's `MessagingError` (e.g. `MessageDeliveryFailure` once `retry` is used up),
 * so callers know a notification was lost. Bad input rejects with `InvalidArgument` and
 * nothing is sent.
 */
export class Notifier<Ctx = Context> {
  /** Sent as `publisher_id`. */
  readonly publisherId: string | null;
  /** Connection retries per notification; undefined = forever. */
  readonly retry: number | undefined;
  /** Typed events (`sent`, `failed`), shared with `prepare()`d children. A listener that throws is logged, never fails a send. */
  readonly events: EventEmitter<NotifierEvents>;
  /** What the `test` driver recorded (empty when it is not configured). */
  readonly testNotifications: TestNotificationSink;
  private readonly core: NotifierCore<Ctx>;

  constructor(transport: Transport, options: NotifierOptions<Ctx> = {}) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) throw new InvalidArgument('options', 'an object', options);
    if (!transport || typeof transport !== 'object' || !('driver' in transport)) {
      throw new InvalidArgument('transport', 'a Transport from getNotificationTransport()', transport);
    }
    this.publisherId = checkPublisherId(options.publisherId ?? NOTIFIER_DEFAULTS.publisherId);
    this.retry = checkRetry(options.retry);
    const topics = checkTopics(options.topics ?? NOTIFIER_DEFAULTS.topics);
    const serializer = options.serializer ?? (new NoOpSerializer() as unknown as Serializer<Ctx>);
    const logger = toLogger(options.logger, transport.logger ?? silentLogger);
    this.testNotifications = options.testSink ?? new TestNotificationSink();
    this.events = new GuardedEventEmitter<NotifierEvents>(logger);
    const requested = options.driver ?? NOTIFIER_DEFAULTS.driver;
    const list = Array.isArray(requested) ? [...requested] : [requested as NotifierDriverName | NotifierDriver];
    const drivers = list.map((d, i) => createDriver(d, `driver${Array.isArray(requested) ? `[${i}]` : ''}`, transport, topics, logger, this.testNotifications));
    const sendSecretContextKeys = options.sendSecretContextKeys ?? NOTIFIER_DEFAULTS.sendSecretContextKeys;
    if (typeof sendSecretContextKeys !== 'boolean') throw new InvalidArgument('sendSecretContextKeys', 'a boolean', sendSecretContextKeys);
    const chain = composeMiddleware(middlewareFor(transport, 'notifier', options.middleware), (inv: SendInvocation) => inv.notifier.send(inv.ctx, inv.eventType, inv.payload, inv.priority));
    this.core = Object.freeze({ drivers, driverNames: Object.freeze(drivers.map((d) => d.name)), serializer, logger, sendSecretContextKeys, chain, topics });
  }

  /** Names of the configured drivers, in order. */
  get drivers(): readonly string[] {
    return this.core.driverNames;
  }

  /** False only when the drivers are exactly `['noop']` (oslo `is_enabled`). */
  isEnabled(): boolean {
    return !(this.core.driverNames.length === 1 && this.core.driverNames[0] === 'noop');
  }

  /** A cheap child sharing drivers, serializer, events and test sink, with another publisher id or retry. */
  prepare(overrides: NotifierPrepareOptions = {}): Notifier<Ctx> {
    if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides)) throw new InvalidArgument('prepare options', 'an object', overrides);
    const child = Object.create(Notifier.prototype) as Notifier<Ctx>;
    Object.assign(child, {
      core: this.core,
      events: this.events,
      testNotifications: this.testNotifications,
      publisherId: 'publisherId' in overrides ? checkPublisherId(overrides.publisherId ?? null) : this.publisherId,
      retry: 'retry' in overrides ? checkRetry(overrides.retry) : this.retry,
    });
    return child;
  }

  /** Sends `payload` as `eventType` with priority `AUDIT`, to `<topic>.audit` for every topic. See the class for when it resolves and rejects. */
  audit(ctx: Ctx, eventType: string, payload: unknown): Promise<void> {
    return this.notify(ctx, eventType, payload, 'audit');
  }
  /** Sends `payload` as `eventType` with priority `DEBUG`, to `<topic>.debug` for every topic. */
  debug(ctx: Ctx, eventType: string, payload: unknown): Promise<void> {
    return this.notify(ctx, eventType, payload, 'debug');
  }
  /** Sends `payload` as `eventType` with priority `INFO`, to `<topic>.info` for every topic. */
  info(ctx: Ctx, eventType: string, payload: unknown): Promise<void> {
    return this.notify(ctx, eventType, payload, 'info');
  }
  /** Sends `payload` as `eventType` with priority `WARN`, to `<topic>.warn` for every topic. */
  warn(ctx: Ctx, eventType: string, payload: unknown): Promise<void> {
    return this.notify(ctx, eventType, payload, 'warn');
  }
  /** Alias of `warn()`: priority `WARN`. */
  warning(ctx: Ctx, eventType: string, payload: unknown): Promise<void> {
    return this.notify(ctx, eventType, payload, 'warn');
  }
  /** Sends `payload` as `eventType` with priority `ERROR`, to `<topic>.error` for every topic. */
  error(ctx: Ctx, eventType: string, payload: unknown): Promise<void> {
    return this.notify(ctx, eventType, payload, 'error');
  }
  /** Sends `payload` as `eventType` with priority `CRITICAL`, to `<topic>.critical` for every topic. */
  critical(ctx: Ctx, eventType: string, payload: unknown): Promise<void> {
    return this.notify(ctx, eventType, payload, 'critical');
  }
  /** Sends `payload` as `eventType` with priority `SAMPLE`, to `<topic>.sample` for every topic. */
  sample(ctx: Ctx, eventType: string, payload: unknown): Promise<void> {
    return this.notify(ctx, eventType, payload, 'sample');
  }

  private notify(ctx: Ctx, eventType: string, payload: unknown, priority: Priority): Promise<void> {
    const chain = this.core.chain;
    if (!chain) return this.send(ctx, eventType, payload, priority);
    try {
      checkEventType(eventType);
    } catch (err) {
      return Promise.reject(err);
    }
    return chain({ eventType, priority, publisherId: this.publisherId, topics: this.core.topics, ctx, payload, notifier: this });
  }

  private async send(ctx: Ctx, eventType: string, payload: unknown, priority: Priority): Promise<void> {
    const startedAt = performance.now();
    const body = this.buildBody(ctx, eventType, payload, priority);
    const serializedCtx = this.core.serializer.serializeContext(ctx);
    const wireCtx = this.core.sendSecretContextKeys ? serializedCtx : withoutSecrets(serializedCtx);
    checkJson('context', wireCtx, true);
    const { drivers, logger } = this.core;
    let failures: Array<{ driver: string; error: unknown }> = [];
    if (drivers.length === 1) {
      // The usual single driver: no allSettled bookkeeping per notification.
      const sending = drivers[0].notify(wireCtx, body, priority, this.retry);
      try {
        await sending;
      } catch (error) {
        failures = [{ driver: drivers[0].name, error }];
      }
    } else {
      const results = await Promise.allSettled(drivers.map((d) => d.notify(wireCtx, body, priority, this.retry)));
      failures = results.flatMap((r, i) => (r.status === 'rejected' ? [{ driver: drivers[i].name, error: r.reason as unknown }] : []));
    }
    if (failures.length === 0) {
      if (this.events.listenerCount('sent') > 0 || sendChannel.hasSubscribers) {
        const sent = { messageId: body.message_id, eventType, priority, publisherId: body.publisher_id, durationMs: performance.now() - startedAt, context: wireCtx };
        this.events.emit('sent', sent);
        if (sendChannel.hasSubscribers) sendChannel.publish(sent);
      }
      return;
    }
    const event = { messageId: body.message_id, eventType, priority, publisherId: body.publisher_id };
    for (const f of failures) logger.error('notification not delivered', { err: f.error, driver: f.driver, ...event });
    const first = failures[0].error;
    const error =
      first instanceof MessagingError
        ? first
        : new MessageDeliveryFailure(`Notification ${body.message_id} not delivered by the ${failures[0].driver} driver`, { cause: first });
    if (this.events.listenerCount('failed') > 0 || sendChannel.hasSubscribers) {
      const failed = { ...event, durationMs: performance.now() - startedAt, context: wireCtx, error };
      this.events.emit('failed', failed);
      if (sendChannel.hasSubscribers) sendChannel.publish(failed);
    }
    throw error;
  }

  private buildBody(ctx: Ctx, eventType: string, payload: unknown, priority: Priority): NotificationBody {
    checkEventType(eventType);
    const serialized = this.core.serializer.serializeEntity(ctx, payload);
    checkJson('payload', serialized, false);
    return {
      message_id: randomUUID(),
      publisher_id: this.publisherId,
      event_type: eventType,
      priority: priority.toUpperCase() as WirePriority,
      payload: serialized,
      timestamp: currentTimestamp(),
    };
  }
}

let lastTimestampMs = NaN;
let lastTimestamp = '';

/** formatTimestamp of now; notifications sent within one millisecond share the formatted string. */
function currentTimestamp(): string {
  const now = Date.now();
  if (now !== lastTimestampMs) {
    lastTimestamp = formatTimestamp(new Date(now));
    lastTimestampMs = now;
  }
  return lastTimestamp;
}

/** Python's `str(datetime.utcnow())`: `YYYY-MM-DD HH:MM:SS.ffffff`, the fraction omitted when it is 0. */
export function formatTimestamp(date: Date): string {
  const iso = date.toISOString();
  const base = `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
  const ms = date.getUTCMilliseconds();
  return ms === 0 ? base : `${base}.${String(ms * 1000).padStart(6, '0')}`;
}

function createDriver(
  spec: NotifierDriverName | NotifierDriver,
  field: string,
  transport: Transport,
  topics: readonly string[],
  logger: Logger,
  sink: TestNotificationSink,
): NotifierDriver {
  switch (spec) {
    case 'messaging':
      return new MessagingNotifierDriver(transport, topics, 1.0);
    case 'messagingv2':
      return new MessagingNotifierDriver(transport, topics, 2.0);
    case 'log':
      return new LogNotifierDriver(logger);
    case 'noop':
      return new NoopNotifierDriver();
    case 'test':
      return new TestNotifierDriver(sink);
  }
  if (spec && typeof spec === 'object' && typeof spec.notify === 'function' && typeof spec.name === 'string') return spec;
  throw new InvalidArgument(field, `one of ${NOTIFIER_DRIVER_NAMES.map((n) => `'${n}'`).join(', ')} or a NotifierDriver`, spec);
}

/** `ctx` without its secret-looking keys (a copy only when something is dropped). */
function withoutSecrets(ctx: Context): Context {
  if (!isPlainObject(ctx)) return ctx;
  let out: Context | undefined;
  for (const k of Object.keys(ctx)) {
    if (SECRET_KEY_PATTERN.test(k)) {
      out ??= { ...ctx };
      delete out[k];
    }
  }
  return out ?? ctx;
}

function checkEventType(eventType: unknown): void {
  if (typeof eventType !== 'string' || eventType.length === 0) throw new InvalidArgument('eventType', 'a non-empty string', eventType);
}

function checkPublisherId(value: unknown): string | null {
  if (value === null) return null;
  if (typeof value !== 'string' || value.length === 0) throw new InvalidArgument('publisherId', 'a non-empty string or null', value);
  return value;
}


function checkTopics(value: unknown): readonly string[] {
  if (!Array.isArray(value) || value.length === 0) throw new InvalidArgument('topics', 'a non-empty array of topic names', value);
  value.forEach((t, i) => {
    if (typeof t !== 'string' || t.length === 0 || /[\s\0]/.test(t)) throw new InvalidArgument(`topics[${i}]`, 'a non-empty topic name without whitespace', t);
  });
  return Object.freeze([...value]);
}

function checkJson(field: string, value: unknown, requireObject: boolean): void {
  if (requireObject && !isPlainObject(value)) throw new InvalidArgument(field, 'a plain object', value);
  if (value === undefined) throw new InvalidArgument(field, 'a JSON value (undefined is not one)', value);
  assertJsonSafe(value, field);
}
