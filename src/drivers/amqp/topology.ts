// The exchanges and queues oslo.messaging 14 declares (oslo-wire.md §1.2), as pure functions of
// the options, so both sides of a mixed Python/TypeScript deployment declare identical objects.
import type { Options } from 'amqplib';
import { fanoutAddress, newFanoutQueueName, notificationQueueName, serverAddress, topicAddress } from '../../contract/addressing.js';
import type { AmqpOptions } from './options.js';

export interface ExchangeDecl {
  readonly name: string;
  readonly type: 'topic' | 'fanout';
  readonly options: Options.AssertExchange;
}

export interface QueueDecl {
  readonly name: string;
  readonly options: Options.AssertQueue;
}

export interface BindingDecl {
  readonly exchange: ExchangeDecl;
  readonly routingKey: string;
}

/**
 * What must exist before a publish: an exchange and, for notifications, the notifier's default
 * queue bound to it (store-and-forward). The Publisher remembers declarations by identity, so
 * `PublishTopology` hands out one object per name.
 */
export interface Declaration {
  readonly exchange: ExchangeDecl;
  readonly queue?: QueueDecl;
  readonly routingKey?: string;
}

/** A queue with the exchanges it is bound to: what one consumer subscribes to. */
export interface ConsumerSpec {
  readonly queue: QueueDecl;
  readonly bindings: readonly BindingDecl[];
  /** Delete the queue when its listener is cleaned up (private fanout queues, as oslo does). */
  readonly deleteOnCleanup?: boolean;
  /**
   * A stream (`rabbit_stream_fanout`): consumed from an offset (`x-stream-offset`), which the
   * listener keeps; its deliveries are acknowledged, never rejected (RabbitMQ closes the
   * connection on a `basic.reject` of a stream delivery: 540 NOT_IMPLEMENTED).
   */
  readonly stream?: boolean;
}

type TopologyOptions = Pick<
  AmqpOptions,
  | 'durableQueues'
  | 'autoDelete'
  | 'haQueues'
  | 'quorumQueue'
  | 'transientQuorumQueue'
  | 'quorumDeliveryLimit'
  | 'quorumMaxMemoryLength'
  | 'quorumMaxMemoryBytes'
  | 'transientQueuesTtl'
  | 'notificationStoreAndForward'
  | 'notificationQueueMaxLength'
  | 'notificationQueueTtl'
  | 'poolQueuePerTopic'
  | 'serverQueueExpires'
  | 'deadLetterMaxLen'
  | 'streamFanout'
>;

/** Durable when `amqp_durable_queues` or `rabbit_quorum_queue` (quorum queues must be durable). */
function isDurable(o: TopologyOptions): boolean {
  return o.durableQueues || o.quorumQueue;
}

/** `x-ha-policy` / quorum arguments shared by every queue kind (impl_rabbit `_get_queue_arguments`). */
export function queueArguments(o: TopologyOptions, quorum = o.quorumQueue): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  if (o.haQueues) args['x-ha-policy'] = 'all';
  if (quorum) {
    args['x-queue-type'] = 'quorum';
    if (o.quorumDeliveryLimit > 0) args['x-delivery-limit'] = o.quorumDeliveryLimit;
    if (o.quorumMaxMemoryLength > 0) args['x-max-in-memory-length'] = o.quorumMaxMemoryLength;
    if (o.quorumMaxMemoryBytes > 0) args['x-max-in-memory-bytes'] = o.quorumMaxMemoryBytes;
  }
  return args;
}

/** The control exchange or `Target.exchange`: topic, durable per options. */
export function topicExchange(name: string, o: TopologyOptions): ExchangeDecl {
  return { name, type: 'topic', options: { durable: isDurable(o), autoDelete: o.autoDelete, internal: false } };
}

/** `<topic>_fanout`: fanout, auto-delete, durable only with `rabbit_transient_quorum_queue` (as oslo 14.7+). */
export function fanoutExchange(topic: string, o: Pick<TopologyOptions, 'transientQuorumQueue'>): ExchangeDecl {
  return { name: fanoutAddress(topic), type: 'fanout', options: { durable: o.transientQuorumQueue, autoDelete: true, internal: false } };
}

/** `<topic>`, `<topic>.<server>` and notification queues: no x-expires (oslo). */
export function topicQueue(name: string, o: TopologyOptions): QueueDecl {
  return { name, options: { durable: isDurable(o), autoDelete: o.autoDelete, exclusive: false, arguments: queueArguments(o) } };
}

/**
 * The default queue of a notification address (`<topic>.<priority>`), which notifiers and
 * un-pooled listeners both declare: a topic queue, bounded by `x-max-length` / `x-message-ttl`
 * when `notification_queue_max_length` / `notification_queue_ttl_ms` ask for it. oslo sets
 * neither; both sides of one queue MUST declare the same (RabbitMQ refuses a different one).
 */
export function notificationQueue(name: string, o: TopologyOptions): QueueDecl {
  const q = topicQueue(name, o);
  if (o.notificationQueueMaxLength > 0) q.options.arguments!['x-max-length'] = o.notificationQueueMaxLength;
  if (o.notificationQueueTtl > 0) q.options.arguments!['x-message-ttl'] = o.notificationQueueTtl;
  return q;
}

/**
 * Reply and fanout queues: x-expires = transient TTL. `rabbit_quorum_queue` does not apply to
 * them; `rabbit_transient_quorum_queue` makes them durable quorum queues with the quorum
 * arguments (oslo 14.7+ `_get_queue_arguments`, same key order).
 */
export function transientQueue(name: string, o: TopologyOptions): QueueDecl {
  const args = queueArguments(o, o.transientQuorumQueue);
  if (o.transientQueuesTtl > 0) args['x-expires'] = o.transientQueuesTtl;
  return { name, options: { durable: o.transientQuorumQueue, autoDelete: false, exclusive: false, arguments: args } };
}

/**
 * `<topic>_fanout` with `rabbit_stream_fanout`: the one stream every server of the topic reads,
 * durable, never deleted by a listener, `x-max-age` = the transient TTL in seconds (oslo's
 * `"<n>s"`: a TTL in ms rounds up to a whole second; 0 = kept for ever). oslo 14.7+
 * `_get_queue_arguments` declares these arguments and no others (no quorum or `x-ha-policy`):
 * RabbitMQ compares `x-max-age` too, so both sides MUST agree on the TTL.
 */
export function streamFanoutQueue(topic: string, o: Pick<TopologyOptions, 'transientQueuesTtl'>): QueueDecl {
  const args: Record<string, unknown> = { 'x-queue-type': 'stream' };
  if (o.transientQueuesTtl > 0) args['x-max-age'] = `${Math.ceil(o.transientQueuesTtl / 1000)}s`;
  return { name: fanoutAddress(topic), options: { durable: true, autoDelete: false, exclusive: false, arguments: args } };
}

/**
 * Where a new stream consumer starts: `next`, the messages published after it subscribed. oslo
 * 14.7+ starts at `last`, the stream's last chunk, so a restarted server runs that chunk's casts
 * again (the last one at least), and a cast that crashes its server runs again at every restart.
 */
export const STREAM_START = 'next';

/**
 * Consumer arguments: on a stream `x-stream-offset` alone (`offset`: the next one to read, or
 * STREAM_START), as oslo; elsewhere `x-cancel-on-ha-failover` with `enable_cancel_on_failover`.
 */
export function consumerArguments(o: Pick<AmqpOptions, 'enableCancelOnFailover'>, stream?: { offset: number | undefined }): { arguments?: Record<string, unknown> } {
  if (stream) return { arguments: { 'x-stream-offset': stream.offset ?? STREAM_START } };
  return o.enableCancelOnFailover ? { arguments: { 'x-cancel-on-ha-failover': true } } : {};
}

/** The headers tidings writes on the copies it re-publishes (requeues, dead letters, replays). */
export const HEADERS = Object.freeze({
  /** How many times the notification was delivered before this copy (an integer). */
  deliveries: 'x-tidings-deliveries',
  /** The address it was first published to (`<topic>.<priority>`): a copy goes through the default exchange. */
  address: 'x-tidings-address',
  /** A dead letter's id (32 hex digits). */
  id: 'x-tidings-id',
  /** The pool that gave up on it, when it was consumed in one: its queue is where a replay goes. */
  pool: 'x-tidings-pool',
  /** Why it was dead-lettered: the last handler error's message, `requeued N times`, or `malformed: …`. */
  error: 'x-tidings-reason',
  /** When it was dead-lettered, ISO 8601. */
  deadAt: 'x-tidings-dead-at',
  /** The consumer that held it last: `<host>/<pid>/<consumer tag>`. */
  consumer: 'x-tidings-consumer',
});

/** Where notifications of `address` go after `maxDeliveries` or when malformed: `<address>.dlq` (Kafka's name). */
export function deadLetterQueueName(address: string): string {
  return `${address}.dlq`;
}

/** The address whose dead letters `queue` holds: `<address>.dlq` -> `<address>`. */
export function deadLetterOrigin(queue: string): string {
  return queue.replace(/\.dlq$/, '');
}

/**
 * A dead-letter queue: durable (dead letters outlive a broker restart), quorum when
 * `rabbit_quorum_queue` is on, at most `dead_letter_max_len` messages (`x-max-length`, the
 * oldest dropped). Python oslo never declares these, so no argument of theirs must match.
 */
export function deadLetterQueue(address: string, o: TopologyOptions): QueueDecl {
  const args: Record<string, unknown> = {};
  if (o.quorumQueue) args['x-queue-type'] = 'quorum';
  if (o.deadLetterMaxLen > 0) args['x-max-length'] = o.deadLetterMaxLen;
  return { name: deadLetterQueueName(address), options: { durable: true, autoDelete: false, exclusive: false, arguments: args } };
}

/** `<topic>.<server>`: a topic queue, with `x-expires` when `server_queue_expires_ms` asks for it. */
export function serverQueue(name: string, o: TopologyOptions): QueueDecl {
  const q = topicQueue(name, o);
  if (o.serverQueueExpires > 0) q.options.arguments!['x-expires'] = o.serverQueueExpires;
  return q;
}

/**
 * An RPC server's three subscriptions (oslo `listen`): shared topic, server queue, private fanout
 * (`fanoutQueue`, default `<topic>_fanout_<hex>`), or with `rabbit_stream_fanout` the topic's
 * shared stream instead of a private queue.
 */
export function rpcServerSpecs(exchange: string, topic: string, server: string, o: TopologyOptions, fanoutQueue = newFanoutQueueName(topic)): ConsumerSpec[] {
  const ex = topicExchange(exchange, o);
  const topicKey = topicAddress(topic);
  const serverKey = serverAddress(topic, server);
  return [
    { queue: topicQueue(topicKey, o), bindings: [{ exchange: ex, routingKey: topicKey }] },
    { queue: serverQueue(serverKey, o), bindings: [{ exchange: ex, routingKey: serverKey }] },
    o.streamFanout
      ? { queue: streamFanoutQueue(topic, o), bindings: [{ exchange: fanoutExchange(topic, o), routingKey: topic }], stream: true }
      : { queue: transientQueue(fanoutQueue, o), bindings: [{ exchange: fanoutExchange(topic, o), routingKey: topic }], deleteOnCleanup: true },
  ];
}

/**
 * The queue of a pooled listener for `address` with `pool_queue_per_topic`: `<pool>:<topic>.<priority>`,
 * one per address, so that one pool name on two topics is two queues. The colon keeps it apart
 * from every `<topic>.<priority>` queue of a dotted topic name.
 */
export function perTopicPoolQueueName(pool: string, address: string): string {
  return `${pool}:${address}`;
}

/**
 * The queue a notification listener of `pool` (undefined: the default pool) consumes for `address`:
 * the address's own queue without a pool; with one the queue named exactly the pool (oslo: one
 * queue for every address of the pool), or with `poolQueuePerTopic` perTopicPoolQueueName.
 */
export function notificationQueueFor(address: string, pool: string | undefined, o: Pick<TopologyOptions, 'poolQueuePerTopic'>): string {
  return pool !== undefined && o.poolQueuePerTopic ? perTopicPoolQueueName(pool, address) : notificationQueueName(address, pool);
}

/**
 * Notification subscriptions: one queue per `<topic>.<priority>` without a pool; with a pool one
 * queue named exactly the pool, bound once per pair (oslo), or with `poolQueuePerTopic` one
 * queue per pair (perTopicPoolQueueName). Queues sharing a name get one consumer.
 */
export function notificationSpecs(pairs: ReadonlyArray<{ exchange: string; routingKey: string }>, pool: string | undefined, o: TopologyOptions): ConsumerSpec[] {
  const byQueue = new Map<string, BindingDecl[]>();
  for (const { exchange, routingKey } of pairs) {
    const name = notificationQueueFor(routingKey, pool, o);
    const list = byQueue.get(name) ?? [];
    if (!list.some((b) => b.exchange.name === exchange && b.routingKey === routingKey)) list.push({ exchange: topicExchange(exchange, o), routingKey });
    byQueue.set(name, list);
  }
  return [...byQueue].map(([name, bindings]) => ({ queue: pool === undefined ? notificationQueue(name, o) : topicQueue(name, o), bindings }));
}

/** Bound on memoised declarations per kind; past it the memo starts over (names are unbounded input). */
const MEMO_LIMIT = 10_000;

/**
 * The declarations a driver publishes with, one object per exchange (and per notification
 * topic), a pure function of the options: sends build no declaration objects and the
 * Publisher's declared set is keyed by identity.
 */
export class PublishTopology {
  private readonly topics = new Map<string, Declaration>();
  private readonly fanouts = new Map<string, Declaration>();
  private readonly notifications = new Map<string, Map<string, Declaration>>();

  constructor(private readonly options: TopologyOptions) {}

  /** A request to a topic exchange (`<topic>` or `<topic>.<server>` routing keys). */
  topic(exchange: string): Declaration {
    return memo(this.topics, exchange, () => ({ exchange: topicExchange(exchange, this.options) }));
  }

  /** A fanout cast: the `<topic>_fanout` exchange. */
  fanout(topic: string): Declaration {
    return memo(this.fanouts, topic, () => ({ exchange: fanoutExchange(topic, this.options) }));
  }

  /** A notification to `address` on `exchange`, with the default queue of that address bound (unless `notification_store_and_forward` is off). */
  notification(exchange: string, address: string): Declaration {
    let byAddress = this.notifications.get(exchange);
    if (byAddress === undefined) {
      byAddress = new Map();
      this.notifications.set(exchange, byAddress);
    }
    const exchangeOnly = !this.options.notificationStoreAndForward;
    return memo(byAddress, address, () => (exchangeOnly ? this.topic(exchange) : { exchange: this.topic(exchange).exchange, queue: notificationQueue(address, this.options), routingKey: address }));
  }
}

function memo<V>(map: Map<string, V>, key: string, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    if (map.size >= MEMO_LIMIT) map.clear();
    value = make();
    map.set(key, value);
  }
  return value;
}
