// oslo's names for where messages go (oslo-wire.md §1.2), once for every driver: a driver maps
// them onto its broker's objects (queues, streams, topics) and keeps the declare arguments.
import { InvalidArgument } from '../core/errors.js';
import { newHexId } from './envelope.js';
import type { PoolQuery } from './inspection.js';
import { isPriority, PRIORITIES, type Priority } from './types.js';

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

/** A PoolQuery with its defaults applied and its fields checked. */
export interface ResolvedPoolQuery {
  /** The notification topic. */
  readonly topic: string;
  /** The exchange: the query's, else the transport's control exchange. */
  readonly exchange: string;
  /** The priorities looked at, without duplicates, in the query's order (else PRIORITIES). */
  readonly priorities: readonly Priority[];
  /** The addresses `<topic>.<priority>`, one per priority, in the order of `priorities`. */
  readonly addresses: readonly string[];
  /** The named pools, without duplicates. */
  readonly pools: readonly string[];
}

/**
 * Applies the defaults of a PoolQuery and checks it: a non-empty topic, known priorities, non-empty
 * pool names; throws InvalidArgument naming the field otherwise.
 */
export function resolvePoolQuery(query: PoolQuery, defaultExchange: string): ResolvedPoolQuery {
  if (query === null || typeof query !== 'object') throw new InvalidArgument('query', 'a PoolQuery object', query);
  const { topic, exchange, priorities, pools } = query;
  if (typeof topic !== 'string' || topic === '') throw new InvalidArgument('topic', 'a non-empty string', topic);
  if (exchange !== undefined && (typeof exchange !== 'string' || exchange === '')) throw new InvalidArgument('exchange', 'a non-empty string', exchange);
  if (priorities !== undefined && (!Array.isArray(priorities) || !priorities.every(isPriority))) throw new InvalidArgument('priorities', `an array of ${PRIORITIES.join(', ')}`, priorities);
  if (pools !== undefined && (!Array.isArray(pools) || !pools.every((p) => typeof p === 'string' && p !== ''))) throw new InvalidArgument('pools', 'an array of non-empty strings', pools);
  const chosen = [...new Set((priorities as readonly Priority[] | undefined) ?? PRIORITIES)];
  return { topic, exchange: exchange ?? defaultExchange, priorities: chosen, addresses: chosen.map((p) => notificationAddress(topic, p)), pools: [...new Set(pools ?? [])] };
}
