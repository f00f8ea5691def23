// The Kafka driver: oslo.messaging's Kafka notifications (oslo-wire.md §2) with at-least-once
// listeners, pools as consumer groups, requeue through retry topics and dead letters; and RPC,
// which oslo has not over Kafka (kafka-rpc.ts).
import { setMaxListeners } from 'node:events';
import { BaseDriver, type ConnectionState, type DriverInit, type ListenOptions, type NotificationListenOptions, type NotificationSendOptions, type SendOptions, type TargetAndPriority } from '../../contract/base-driver.js';
import type { DriverCapabilities } from '../../contract/capabilities.js';
import type { DeadLetterStore } from '../../contract/dead-letters.js';
import type { IncomingMessage, RpcIncomingMessage } from '../../contract/incoming-message.js';
import type { ResolvedPoolQuery } from '../../contract/addressing.js';
import type { Inspection, PoolView } from '../../contract/inspection.js';
import type { Listener } from '../../contract/listener.js';
import type { Context, DriverMessage } from '../../contract/types.js';
import { encodeNotification } from '../../contract/wire.js';
import { MessagingError } from '../../core/errors.js';
import { retryAfterFirst } from '../../core/retry.js';
import type { Target } from '../../core/target.js';
import { KafkaConnection } from './connection.js';
import { KafkaDeadLetters } from './dead-letters.js';
import { inspectKafkaPools, KAFKA_INSPECTION, listKafkaRpcTopics } from './inspection.js';
import { KafkaNotificationListener } from './kafka-listener.js';
import { KafkaRpc, KafkaRpcServer } from './kafka-rpc.js';
import { resolveOptions, type ResolvedKafkaOptions } from './options.js';
import { clientId, notificationTopic, withVhost } from './topology.js';

let transports = 0;

export class KafkaDriver extends BaseDriver {
  readonly name = 'kafka';
  readonly capabilities: DriverCapabilities;
  /** The resolved options (the SASL password is non-enumerable). */
  readonly options: ResolvedKafkaOptions;
  private readonly conn: KafkaConnection;
  private listenerCount = 0;
  /** Requests out, replies in (the transport's reply topic) and out. */
  private readonly rpc: KafkaRpc;
  /** Aborted by cleanup(): produce retries stop waiting at once. */
  private readonly closing = new AbortController();

  constructor(init: DriverInit) {
    super(init);
    // Every produce or reply waiting out a retry backoff listens on it (removed after): many at once while topics fail is no leak.
    setMaxListeners(0, this.closing.signal);
    this.options = resolveOptions(init.url, init.options);
    // Records stay in their topic, so a group that starts from the earliest offset finds what was
    // sent before it existed; with `latest` (oslo) they are missed.
    this.capabilities = Object.freeze({ rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: this.options.offsetReset === 'earliest', stopHandsOver: false, deadLetters: true });
    this.conn = new KafkaConnection(this.options, this.logger, clientId(++transports), (err) => this.noteConnectionError(err));
    this.rpc = new KafkaRpc(this.conn, this.options, this.logger, this.replies, this.closing.signal);
  }

  /** As the producer's requests show it: kafkajs reconnects on its own after a failed one. */
  protected override connectionState(): ConnectionState {
    return { connected: this.conn.isConnected, blocked: false, reconnecting: this.conn.isFailing };
  }

  protected doSend(target: Target, ctx: Context, message: DriverMessage, options: SendOptions): Promise<unknown> {
    return this.rpc.send(target, this.exchangeFor(target), ctx, message, options);
  }

  protected async doSendNotification(target: Target, ctx: Context, message: DriverMessage, options: NotificationSendOptions): Promise<void> {
    // oslo's Kafka layout whatever the version: the envelope, a nested `_context`, no key unless asked.
    const value = encodeNotification(message, ctx, options.version, { contextLayout: 'nested' }, this.options.maxMessageBytes);
    const topic = withVhost(target.topic as string, this.options.vhost);
    const key = recordKey(this.options.key, message, topic);
    const record = { topic, key, value };
    await retryAfterFirst(
      this.conn.produce(record),
      () => this.conn.produce(record),
      () => ({
        retry: options.retry,
        signal: this.closing.signal,
        isRetriable: (e) => !this.closed && e instanceof MessagingError && e.retriable,
        onRetry: ({ attempt, delayMs, error }) => this.logger.warn('Producing a notification failed; retrying', { attempt, delayMs, topic, err: error }),
      }),
    );
  }

  protected doListen(target: Target, options: ListenOptions): Promise<Listener<RpcIncomingMessage>> {
    const n = ++this.listenerCount;
    const logger = this.logger.child({ listener: n, kind: 'rpc', topic: target.topic, server: target.server });
    const source = new KafkaRpcServer(this.conn, this.rpc, target.topic as string, target.server as string, this.exchangeFor(target), this.options, logger);
    return this.openListener(source, () => source.subscribe(), { ...options, prefetchSize: this.options.maxPollRecords, logger });
  }

  protected async doListenForNotifications(pairs: readonly TargetAndPriority[], options: NotificationListenOptions): Promise<Listener<IncomingMessage>> {
    const topics = [...new Set(pairs.map(([t, p]) => notificationTopic(t.topic as string, p, this.options.vhost)))];
    const group = options.pool ?? this.options.consumerGroup;
    const n = ++this.listenerCount;
    const logger = this.logger.child({ listener: n, group });
    const source = new KafkaNotificationListener(this.conn, topics, group, this.options, logger, this.rpc, this.deliveryStats);
    this.reportLag(source);
    return this.openListener(source, () => source.subscribe(), { ...options, prefetchSize: this.options.maxPollRecords, logger });
  }

  /** The records of `<address>.dlq`, with removal markers (dead-letters.ts). */
  override deadLetters(): DeadLetterStore {
    return new KafkaDeadLetters({ vhost: this.options.vhost, conn: this.conn, logger: this.logger.child({ deadLetters: true }) });
  }

  /** Topics and named groups' backlogs; groups are not listed and their members not told (inspection.ts). */
  override inspection(): Inspection {
    return KAFKA_INSPECTION;
  }

  /** The default group and `query.pools` on each address's topic, where they committed offsets; creates nothing. */
  protected override async doInspectPools(query: ResolvedPoolQuery): Promise<PoolView[]> {
    return inspectKafkaPools(await this.conn.getClient(), query, this.options);
  }

  /** The topics RPC servers made (request and fanout topics); Kafka has no exchanges, so `exchange` is not used. */
  protected override async doListRpcTopics(): Promise<string[]> {
    return listKafkaRpcTopics(await this.conn.getClient(), this.options.vhost);
  }

  protected override cleanupStarted(): void {
    this.closing.abort();
  }

  protected async close(): Promise<void> {
    // One shutdownTimeout for the replies still being produced and the producer's last requests.
    const deadline = Date.now() + this.options.shutdownTimeout;
    await this.rpc.close(this.options.shutdownTimeout);
    await this.conn.close(Math.max(0, deadline - Date.now()));
    this.logger.debug('Kafka driver cleaned up');
  }

  /** `util.inspect` shows the redacted form only. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toString();
  }
}

/** The record key a notification gets, per the `key` option. */
function recordKey(choice: ResolvedKafkaOptions['key'], notification: Record<string, unknown>, topic: string): string | undefined {
  if (choice === 'none') return undefined;
  if (choice === 'publisher') return typeof notification.publisher_id === 'string' ? notification.publisher_id : undefined;
  if (choice === 'event') return typeof notification.event_type === 'string' ? notification.event_type : undefined;
  const key = choice(notification, topic);
  return typeof key === 'string' ? key : undefined;
}
