// The Kafka driver: oslo.messaging's Kafka notifications (oslo-wire.md §2) with at-least-once
// listeners, pools as consumer groups, requeue through retry topics and dead letters. oslo has no
// RPC over Kafka; neither has this driver yet (capability `rpc` false).
import { BaseDriver, type DriverInit, type ListenOptions, type NotificationListenOptions, type NotificationSendOptions, type SendOptions, type TargetAndPriority } from '../../driver/base-driver.js';
import { requireCapability, type DriverCapabilities } from '../../driver/capabilities.js';
import type { DeadLetterStore } from '../../driver/dead-letters.js';
import type { IncomingMessage, RpcIncomingMessage } from '../../driver/incoming-message.js';
import type { Listener } from '../../driver/listener.js';
import type { Context, DriverMessage } from '../../driver/types.js';
import { encodeNotification } from '../../driver/wire.js';
import { MessagingError } from '../../errors.js';
import { withRetry } from '../../retry.js';
import type { Target } from '../../target.js';
import { recordKey } from './client.js';
import { KafkaConnection } from './connection.js';
import { KafkaDeadLetters } from './kafka-dead-letters.js';
import { KafkaNotificationListener } from './kafka-listener.js';
import { resolveOptions, type ResolvedKafkaOptions } from './options.js';
import { notificationTopic, withVhost } from './topology.js';

let transports = 0;

export class KafkaDriver extends BaseDriver {
  readonly name = 'kafka';
  readonly capabilities: DriverCapabilities;
  /** The resolved options (the SASL password is non-enumerable). */
  readonly options: ResolvedKafkaOptions;
  private readonly conn: KafkaConnection;
  private listenerCount = 0;
  /** Aborted by cleanup(): produce retries stop waiting at once. */
  private readonly closing = new AbortController();

  constructor(init: DriverInit) {
    super(init);
    this.options = resolveOptions(init.url, init.options);
    // Records stay in their topic, so a group that starts from the earliest offset finds what was
    // sent before it existed; with `latest` (oslo) they are missed.
    this.capabilities = Object.freeze({ rpc: false, fanout: false, requeue: true, pools: true, callMonitor: false, durableNotifications: this.options.offsetReset === 'earliest' });
    this.conn = new KafkaConnection(this.options, this.logger, `tidings-${process.pid}-${++transports}`);
  }

  protected doSend(_target: Target, _ctx: Context, _message: DriverMessage, _options: SendOptions): Promise<unknown> {
    return Promise.reject(notSupported(this, 'RPC'));
  }

  protected async doSendNotification(target: Target, ctx: Context, message: DriverMessage, options: NotificationSendOptions): Promise<void> {
    // oslo's Kafka layout whatever the version: the envelope, a nested `_context`, no key unless asked.
    const value = encodeNotification(message, ctx, options.version, { contextLayout: 'nested' });
    const topic = withVhost(target.topic as string, this.options.vhost);
    const key = recordKey(this.options.key, message, topic);
    await withRetry(() => this.conn.produce({ topic, key, value }), {
      retry: options.retry,
      signal: this.closing.signal,
      isRetriable: (e) => !this.closed && e instanceof MessagingError && e.retriable,
      onRetry: ({ attempt, delayMs, error }) => this.logger.warn('Producing a notification failed; retrying', { attempt, delayMs, topic, err: error }),
    });
  }

  protected doListen(_target: Target, _options: ListenOptions): Promise<Listener<RpcIncomingMessage>> {
    return Promise.reject(notSupported(this, 'RPC'));
  }

  protected async doListenForNotifications(pairs: readonly TargetAndPriority[], options: NotificationListenOptions): Promise<Listener<IncomingMessage>> {
    const topics = [...new Set(pairs.map(([t, p]) => notificationTopic(t.topic as string, p, this.options.vhost)))];
    const group = options.pool ?? this.options.consumerGroup;
    const n = ++this.listenerCount;
    const logger = this.logger.child({ listener: n, group });
    const source = new KafkaNotificationListener(this.conn, topics, group, this.options, logger);
    return this.openListener(source, () => source.subscribe(), { ...options, prefetchSize: this.options.maxPollRecords, logger });
  }

  /** The records of `<address>.dlq`, with removal markers (kafka-dead-letters.ts). */
  override deadLetters(): DeadLetterStore {
    return new KafkaDeadLetters(this.conn, this.options, this.logger.child({ deadLetters: true }));
  }

  protected override cleanupStarted(): void {
    this.closing.abort();
  }

  protected async close(): Promise<void> {
    await this.conn.close(this.options.shutdownTimeout);
    this.logger.debug('Kafka driver cleaned up');
  }

  /** `util.inspect` shows the redacted form only. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toString();
  }
}

function notSupported(driver: KafkaDriver, what: string): MessagingError {
  try {
    requireCapability(driver.name, driver.capabilities, 'rpc', what);
  } catch (err) {
    return err as MessagingError;
  }
  return new MessagingError(`${what} is not supported by the kafka driver`);
}
