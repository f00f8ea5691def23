// Every name the Kafka driver uses: topics for oslo's addresses (oslo-wire.md §2) and for RPC,
// the retry and dead-letter topics tidings adds per consumer group, consumer groups, client ids
// and the headers tidings puts on records.
import { createHash, randomUUID } from 'node:crypto';
import { fanoutAddress, isReplyAddress, newReplyAddress, notificationAddress, requestAddress } from '../../contract/addressing.js';
import type { Priority } from '../../contract/types.js';

/** Kafka's limit on a topic name's length. */
const MAX_TOPIC_LENGTH = 249;
/** Characters Kafka refuses in topic names. */
const INVALID = /[^a-zA-Z0-9._-]/g;

/** Headers tidings puts on records it re-publishes (retry and dead-letter topics). */
export const HEADERS = Object.freeze({
  /** How many times the record was delivered before this copy (decimal). */
  deliveries: 'x-tidings-deliveries',
  /** The topic the record was first published to. */
  originalTopic: 'x-tidings-original-topic',
  /** On a retry copy requeued with a backoff: when it is due, ms since the epoch (decimal). */
  notBefore: 'x-tidings-not-before',
  /** The consumer group that gave up on it (dead letters). */
  group: 'x-tidings-group',
  /**
   * Why it was dead-lettered (a dead letter's `error`): the last handler error's message, or
   * `requeued N times`. The header keeps its first name, so dead letters stored before still show why.
   */
  error: 'x-tidings-reason',
  /** When it was dead-lettered, ISO 8601. */
  deadAt: 'x-tidings-dead-at',
  /** The client id of the transport that dead-lettered it. */
  consumer: 'x-tidings-consumer',
  /** On a removal marker in a dead-letter topic: the ids (`partition:offset`, comma-separated) it removes. */
  removes: 'x-tidings-removes',
  /**
   * On an RPC request: the exchange it was sent through. Kafka has no exchanges: servers skip
   * requests of another exchange (commit past them), and their groups are per exchange, so every
   * exchange's servers see every request of the topic. A record without it (another producer) is for all.
   */
  exchange: 'x-tidings-exchange',
});

/** The client id the brokers see for the `n`th transport of this process (also kept on its dead letters). */
export function clientId(n: number): string {
  return `tidings-${process.pid}-${n}`;
}

/**
 * The topic a notification of `priority` on `topic` goes to: oslo's `<topic>.<priority>`, plus
 * `.<vhost>` when the URL has one. oslo appends the vhost only when producing; tidings appends
 * it on both sides so that its listeners see its notifiers (and oslo's notifiers) on a vhost URL.
 */
export function notificationTopic(topic: string, priority: Priority | string, vhost: string): string {
  return withVhost(notificationAddress(topic, priority), vhost);
}

/** oslo's Notifier already sends to `<topic>.<priority>`; only the vhost is added. */
export function withVhost(address: string, vhost: string): string {
  return vhost ? `${address}.${vhost}` : address;
}

/** A group's retry topic for `topic`: requeued records go there and come back to the same group. */
export function retryTopic(topic: string, group: string): string {
  return safeTopic(`${topic}.retry.${group}`);
}

/**
 * The consumer group that reads a group's retry topics: a group of their own, so that the
 * group's consumers of the busy `<topic>.<priority>` topics do not fetch the (nearly always
 * empty) retry partitions with every request.
 */
export function retryGroup(group: string): string {
  return `${group}.retry`;
}

/** Where records end that were delivered `maxDeliveries` times: `<topic>.dlq`. */
export function deadLetterTopic(topic: string): string {
  return safeTopic(`${topic}.dlq`);
}

/** The topic of RPC requests to `topic` (every server's) or to one `server`: `<topic>[.<server>]` (+ `.<vhost>`). */
export function requestTopic(topic: string, server: string | undefined, vhost: string): string {
  return safeTopic(withVhost(requestAddress(topic, server), vhost));
}

/** The topic of fanout casts to `topic`: `<topic>_fanout` (+ `.<vhost>`), read by every server without a group. */
export function fanoutTopic(topic: string, vhost: string): string {
  return safeTopic(withVhost(fanoutAddress(topic), vhost));
}

/** The consumer group of the RPC servers reading `requestTopicName` through `exchange`: each request to one of them. */
export function serverGroup(exchange: string, requestTopicName: string): string {
  return `tidings-rpc.${exchange}.${requestTopicName}`;
}

/** A new transport's reply topic, `reply_<hex>` (oslo's reply address), read directly from its end. */
export function newReplyTopic(): string {
  return newReplyAddress();
}

/** True for a topic named like newReplyTopic: the only topics a server produces replies to. */
export function isReplyTopic(name: string): boolean {
  return isReplyAddress(name);
}

/**
 * A throwaway consumer group for reading a topic once (the dead-letter store, platformatic's
 * direct reader): it never commits, so Kafka drops it once it is empty.
 */
export function readerGroup(): string {
  return `tidings-reader-${randomUUID()}`;
}

/** The name tidings' subscription-aware partition assigner announces in its groups (kafkajs). */
export const PARTITION_ASSIGNER = 'TidingsSubscriptionRoundRobin';

/** The topic whose dead letters `deadTopic` holds, for a dead letter that does not name it: `<topic>.dlq` -> `<topic>`. */
export function deadLetterOrigin(deadTopic: string): string {
  return deadTopic.replace(/\.dlq$/, '');
}

/** A valid Kafka topic name: refused characters become `_`, an over-long name keeps a hash of the rest. */
function safeTopic(name: string): string {
  const clean = name.replace(INVALID, '_');
  if (clean.length <= MAX_TOPIC_LENGTH) return clean;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 16);
  return `${clean.slice(0, MAX_TOPIC_LENGTH - 17)}_${hash}`;
}
