// oslo's names for where messages go (oslo-wire.md §1.2), once for every driver: a driver maps
// them onto its broker's objects (queues, streams, topics) and keeps the declare arguments.
import { newHexId } from './envelope.js';
import type { Priority } from './types.js';

/** The queue every server of a topic shares (round robin): `<topic>`. */
export function topicAddress(topic: string): string {
  return topic;
}

/** The queue of one named server: `<topic>.<server>`. */
export function serverAddress(topic: string, server: string): string {
  return `${topic}.${server}`;
}

/** Where a request goes: the server's queue when the target names one, else the topic's. */
export function requestAddress(topic: string, server: string | undefined): string {
  return server ? serverAddress(topic, server) : topicAddress(topic);
}

/** The fanout exchange of a topic: `<topic>_fanout`. */
export function fanoutAddress(topic: string): string {
  return `${topic}_fanout`;
}

/** One server's private queue on its topic's fanout: `<topic>_fanout_<hex>`. */
export function newFanoutQueueName(topic: string): string {
  return `${topic}_fanout_${newHexId()}`;
}

/** A transport's reply queue: `reply_<hex>`. */
export function newReplyAddress(): string {
  return `reply_${newHexId()}`;
}

/** `reply_` + uuid4 hex (32 lowercase hex), as newReplyAddress and Python oslo.messaging name them. */
const REPLY_ADDRESS = /^reply_[0-9a-f]{32}$/;

/**
 * True when `address` has the shape of a reply address (`newReplyAddress`): a `_reply_q` comes
 * from the wire, so a server replies only there, never to another service's queue or topic.
 */
export function isReplyAddress(address: string): boolean {
  return REPLY_ADDRESS.test(address);
}

/** A notification topic of one priority: `<topic>.<priority>`. */
export function notificationAddress(topic: string, priority: Priority | string): string {
  return `${topic}.${priority}`;
}

/**
 * The queue a notification listener consumes for `address` (`<topic>.<priority>`): the shared
 * one named like the address (which notifiers also declare: store-and-forward), or with a pool,
 * the queue named exactly like the pool, bound to every address of the listener.
 */
export function notificationQueueName(address: string, pool: string | undefined): string {
  return pool ?? address;
}
