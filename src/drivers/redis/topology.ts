// Key names of the Redis driver. Every key of one topic (and shard) carries one hash tag
// `{<exchange>:<topic>}` so that a Lua script touching several of them works in Redis Cluster.
// oslo's addresses (src/driver/addressing.ts) name the parts; groups are pools.
import { notificationAddress, serverAddress, topicAddress } from '../../driver/addressing.js';
import type { Priority } from '../../driver/types.js';

/** The consumer group of RPC servers on every RPC stream (shared topic, named server, fanout inbox). */
export const SERVER_GROUP = 'servers';
/** The group every un-pooled notification listener of a stream shares; notifiers create it. */
export const DEFAULT_GROUP = 'default';
/** The field of a stream entry that holds the message body. */
export const BODY_FIELD = 'b';
/** The field of an RPC request entry holding its deadline (epoch ms) when the call has a timeout. */
export const DEADLINE_FIELD = 'x';

/** The group of a pool: prefixed so that no pool name can be the default group. */
export function poolGroup(pool: string | undefined): string {
  return pool === undefined ? DEFAULT_GROUP : `pool:${pool}`;
}

/** The keys of one topic (one shard of it) on one exchange. */
export class TopicKeys {
  /** `<prefix>:{<exchange>:<topic>[#<shard>]}`: the common start of every key of this topic shard. */
  readonly base: string;

  constructor(prefix: string, exchange: string, readonly topic: string, readonly shard = 0) {
    this.base = `${prefix}:{${exchange}:${topic}${shard > 0 ? `#${shard}` : ''}}`;
  }

  /** The stream every server of the topic shares (`<topic>`). */
  get topicStream(): string {
    return `${this.base}:rpc:${topicAddress(this.topic)}`;
  }

  /** The stream of one named server (`<topic>.<server>`). */
  serverStream(server: string): string {
    return `${this.base}:rpc:${serverAddress(this.topic, server)}`;
  }

  /** The hash of live RPC servers: fanout inbox key -> expiry (epoch ms). */
  get servers(): string {
    return `${this.base}:servers`;
  }

  /** One server's fanout inbox stream; fanout casts are copied to every live inbox. */
  inbox(instance: string): string {
    return `${this.base}:fanout:${instance}`;
  }

  /** The notification stream of one priority (`<topic>.<priority>`). */
  notificationStream(priority: Priority | string): string {
    return `${this.base}:notify:${notificationAddress(this.topic, priority)}`;
  }

  /** Where messages go after `maxDeliveries`, or when malformed: one stream per topic shard. */
  get deadLetters(): string {
    return `${this.base}:dead`;
  }

  /** The last error of a requeued message, by `<stream> <group> <id>`, for its dead letter. */
  get errors(): string {
    return `${this.base}:errors`;
  }

  /** When each pool of the topic was last seen (epoch ms), for `poolTtl`. */
  get poolsSeen(): string {
    return `${this.base}:pools`;
  }
}

/** The keys of a topic over `shards` shards (shard 0 has the unsharded name). */
export function topicShards(prefix: string, exchange: string, topic: string, shards: number): TopicKeys[] {
  return Array.from({ length: shards }, (_, i) => new TopicKeys(prefix, exchange, topic, i));
}

/** The reply list of a transport: `_reply_q` is `reply_<hex>`, the key adds the prefix. */
export function replyKey(prefix: string, replyQueue: string): string {
  return `${prefix}:reply:{${replyQueue}}`;
}

/** The hash tag of a key (what Redis Cluster hashes), for grouping keys a command may read together. */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

/** Every key of a prefix, for tools and tests: `SCAN MATCH` pattern. */
export function keyPattern(prefix: string): string {
  return `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}:*`;
}
