// Where a Notifier sends: the broker (oslo `messaging` 1.0 / `messagingv2` 2.0), a log, an
// in-memory list for tests, or nowhere (oslo notify/messaging.py, _impl_log.py, _impl_test.py, _impl_noop.py).
import { SECRET_KEY_PATTERN } from '../core/secrets.js';
import { Target } from '../core/target.js';
import type { Logger, LogLevel } from '../core/logger.js';
import type { Transport } from '../transport.js';
import { notificationAddress } from '../contract/addressing.js';
import type { Context, Priority } from '../contract/types.js';

/** Priorities as they appear in the body (`priority` field): upper-case. */
export type WirePriority = Uppercase<Priority>;

/** The notification body, in the shape oslo.messaging's Notifier builds it. */
export interface NotificationBody {
  /** `randomUUID()`, with dashes. */
  message_id: string;
  /** The notifier's publisher id, or null. */
  publisher_id: string | null;
  /** e.g. `compute.instance.create.end`. */
  event_type: string;
  /** Upper-case, e.g. `INFO`. */
  priority: WirePriority;
  /** The payload after `serializer.serializeEntity`; any JSON value. */
  payload: unknown;
  /** `YYYY-MM-DD HH:MM:SS[.ffffff]`, naive UTC. */
  timestamp: string;
  [key: string]: unknown;
}

/**
 * One destination of a Notifier. `notify()` MUST resolve only once the notification is
 * delivered as far as this driver goes (broker accepted, log written, record kept) and MUST
 * reject with a `MessagingError` when it is not.
 */
export interface NotifierDriver {
  /** Shown in logs and in `Notifier.drivers`. */
  readonly name: string;
  /** Delivers one notification; see the interface for when it resolves and rejects. */
  notify(ctx: Context, message: NotificationBody, priority: Priority, retry: number | undefined): Promise<void>;
}

/** Built-in drivers, by the names oslo uses. */
export type NotifierDriverName = 'messaging' | 'messagingv2' | 'log' | 'noop' | 'test';
export const NOTIFIER_DRIVER_NAMES: readonly NotifierDriverName[] = Object.freeze(['messaging', 'messagingv2', 'log', 'noop', 'test']);

/** Sends to `<topic>.<priority>` for every topic, as the raw dict (1.0) or the envelope (2.0). */
export class MessagingNotifierDriver implements NotifierDriver {
  readonly name: string;
  /** The `<topic>.<priority>` targets of each priority, built once (Targets are immutable). */
  private readonly targets = new Map<Priority, readonly Target[]>();

  constructor(
    private readonly transport: Transport,
    private readonly topics: readonly string[],
    private readonly version: 1.0 | 2.0,
  ) {
    this.name = version === 1.0 ? 'messaging' : 'messagingv2';
  }

  async notify(ctx: Context, message: NotificationBody, priority: Priority, retry: number | undefined): Promise<void> {
    const targets = this.targetsOf(priority);
    const options = { version: this.version, retry };
    if (targets.length === 1) return this.transport.driver.sendNotification(targets[0], ctx, message, options);
    await Promise.all(targets.map((target) => this.transport.driver.sendNotification(target, ctx, message, options)));
  }

  private targetsOf(priority: Priority): readonly Target[] {
    let targets = this.targets.get(priority);
    if (!targets) {
      targets = Object.freeze(this.topics.map((topic) => new Target({ topic: notificationAddress(topic, priority) })));
      this.targets.set(priority, targets);
    }
    return targets;
  }
}

/** One record kept by the `test` driver: oslo's `(ctxt, message, priority, retry)`. */
export interface TestNotificationRecord {
  /** The context as it would have been sent (secret keys dropped). */
  ctx: Context;
  /** The notification body. */
  message: NotificationBody;
  /** Upper-case, as oslo's test driver records it. */
  priority: WirePriority;
  /** The notifier's `retry`. */
  retry: number | undefined;
}

/**
 * The in-memory list behind the `test` driver, for asserting on what an application sent.
 * Each Notifier has its own (shared with its `prepare()`d children) unless one is passed in.
 */
export class TestNotificationSink {
  /** Every notification recorded, oldest first. */
  readonly records: TestNotificationRecord[] = [];

  /** How many notifications were recorded. */
  get length(): number {
    return this.records.length;
  }

  /** Records whose event type equals `eventType`. */
  byEventType(eventType: string): TestNotificationRecord[] {
    return this.records.filter((r) => r.message.event_type === eventType);
  }

  /** Forgets every record. */
  clear(): void {
    this.records.length = 0;
  }
}

export class TestNotifierDriver implements NotifierDriver {
  readonly name = 'test';

  constructor(readonly sink: TestNotificationSink) {}

  async notify(ctx: Context, message: NotificationBody, _priority: Priority, retry: number | undefined): Promise<void> {
    this.sink.records.push({ ctx, message, priority: message.priority, retry });
  }
}

const LOG_LEVELS: Readonly<Record<Priority, LogLevel>> = Object.freeze({
  audit: 'info',
  debug: 'debug',
  info: 'info',
  warn: 'warn',
  error: 'error',
  critical: 'error',
  sample: 'info',
});

/** Writes one structured record per notification; secrets in the payload are masked. The context is never logged. */
export class LogNotifierDriver implements NotifierDriver {
  readonly name = 'log';

  constructor(private readonly logger: Logger) {}

  async notify(_ctx: Context, message: NotificationBody, priority: Priority): Promise<void> {
    this.logger[LOG_LEVELS[priority]]('notification', {
      eventType: message.event_type,
      publisherId: message.publisher_id,
      priority: message.priority,
      messageId: message.message_id,
      timestamp: message.timestamp,
      payload: maskSecrets(message.payload),
    });
  }
}

export class NoopNotifierDriver implements NotifierDriver {
  readonly name = 'noop';

  async notify(): Promise<void> {}
}

export { SECRET_KEY_PATTERN };

/** A copy of `value` with the values of secret-looking keys masked, recursively (cycles become `[Circular]`). */
export function maskSecrets(value: unknown, seen: WeakSet<object> = new WeakSet()): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (seen.has(value)) return '[Circular]';
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((v) => maskSecrets(v, seen));
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEY_PATTERN.test(k) ? '***' : maskSecrets(v, seen);
    return out;
  } finally {
    seen.delete(value);
  }
}
