// What the Redis listener is built with and works on: its deliveries, the streams it reads, its
// driver's services, an RPC server's registration, and the sweep of one stream (also run by the
// driver). The listener itself: redis-listener.ts.
import type { DeliveryStats } from '../../contract/delivery-stats.js';
import type { ReplySender } from '../../contract/messages.js';
import type { Logger } from '../../core/logger.js';
import { runScript, type RedisClient } from './connection.js';
import type { ResolvedRedisOptions } from './options.js';
import type { TopicKeys } from './topology.js';

/** A delivered stream entry or request list element: what settles it, and what `unwrap()` gives. */
export interface RedisDelivery {
  /** The stream key, or the request list's key for a popped element. */
  readonly stream: string;
  /** The entry id; empty for a list element. */
  readonly id: string;
  /** How many times it was delivered, this time included. */
  readonly deliveries: number;
  /** A list element's fields as a stream entry would have them (`b`, `x`): what its dead letter keeps. */
  readonly fields?: readonly string[];
}

/** One stream a listener reads, with the keys of its topic shard. */
export interface StreamSpec {
  readonly key: string;
  readonly topic: TopicKeys;
  /** The oslo address it carries (`<topic>.<priority>`, `<topic>`, `<topic>.<server>`), for the counters. */
  readonly address: string;
  /** Where a group created by this listener starts: `0` (everything kept) or `$` (from now on). */
  /** Where the group starts when this listener creates it: `0`, `$` or an entry id. */
  readonly createAt: string;
  /** An RPC server's own stream (`<topic>.<server>`): removed on cleanup when nobody else reads it and nothing is unread. */
  readonly ownStream?: boolean;
  /** The request list of the same RPC address (`<topic>`, `<topic>.<server>`), popped beside the stream. */
  readonly list?: string;
}

/** What a listener needs from its driver. */
export interface ListenerDeps {
  readonly options: ResolvedRedisOptions;
  readonly logger: Logger;
  /** The driver's shared command connection. */
  commands(): RedisClient;
  /** A new connection for one blocking reader. */
  newReader(name: string): RedisClient;
  readonly replies: ReplySender;
  /** The driver's delivery counters. */
  readonly stats: DeliveryStats;
}

/** An RPC server's entry in its topic's live-server hash, its fanout inbox and its own stream. */
export interface ServerRegistration {
  readonly servers: string;
  readonly inbox: string;
  /** The hash of named servers' streams (expiry per stream) and this server's `<topic>.<server>` stream. */
  readonly serverStreams: string;
  readonly ownStream: string;
}

/**
 * GC of one stream (the `tidingsSweep` script): `own` is the sweeping pool's group ('' for none).
 * Resolves with the idle pools holding trimming back, as `[name, entries-behind, ...]`.
 */
export function sweepStream(cmd: RedisClient, stream: string, topic: TopicKeys, own: string, o: ResolvedRedisOptions): Promise<Array<string | number>> {
  return runScript<Array<string | number>>(cmd, 'tidingsSweep', [stream, topic.poolsSeen], [own, Date.now(), o.consumerTtl, o.poolTtl, o.notificationQueueMaxLength, o.notificationQueueTtl]);
}
