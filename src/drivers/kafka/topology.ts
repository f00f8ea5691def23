// Kafka topic names for oslo's addresses (oslo-wire.md §2): `<topic>.<priority>` (+ `.<vhost>`),
// and the topics tidings adds per consumer group: a retry topic for requeues and a dead-letter topic.
import { createHash } from 'node:crypto';
import { notificationAddress } from '../../contract/addressing.js';
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
  /** Why it was dead-lettered: the last handler error's message, or `requeued N times`. */
  reason: 'x-tidings-reason',
  /** When it was dead-lettered, ISO 8601. */
  deadAt: 'x-tidings-dead-at',
  /** The client id of the transport that dead-lettered it. */
  consumer: 'x-tidings-consumer',
  /** On a removal marker in a dead-letter topic: the ids (`partition:offset`, comma-separated) it removes. */
  removes: 'x-tidings-removes',
});

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

/** True for the retry and dead-letter topics tidings manages (they are never retried themselves). */
export function isDeadLetterTopic(topic: string): boolean {
  return topic.endsWith('.dlq');
}

/** A valid Kafka topic name: refused characters become `_`, an over-long name keeps a hash of the rest. */
export function safeTopic(name: string): string {
  const clean = name.replace(INVALID, '_');
  if (clean.length <= MAX_TOPIC_LENGTH) return clean;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 16);
  return `${clean.slice(0, MAX_TOPIC_LENGTH - 17)}_${hash}`;
}
