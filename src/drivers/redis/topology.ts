// Key names of the Redis driver. Every key of one topic (and shard) carries one hash tag
// `{<exchange>:<topic>}` so that a Lua script touching several of them works in Redis Cluster.
// oslo's addresses (src/contract/addressing.ts) name the parts; groups are pools.
import { notificationAddress, serverAddress, topicAddress } from '../../contract/addressing.js';
import type { Priority } from '../../contract/types.js';

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

/** The pool a group belongs to (undefined for the default and the servers' group). */
export function poolOfGroup(group: string): string | undefined {
  return group.startsWith('pool:') ? group.slice('pool:'.length) : undefined;
}

/** Hash slots of a Redis Cluster. */
const SLOTS = 16384;

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let b = 0; b < 8; b++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/** The Cluster slot of a hash tag (CRC16/XMODEM of its UTF-8 bytes mod 16384), as `CLUSTER KEYSLOT {tag}` computes it. */
export function tagSlot(tag: string): number {
  let crc = 0;
  for (const byte of Buffer.from(tag)) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff];
  return crc % SLOTS;
}

/** The Cluster slot of a key: that of its `{hash tag}` when it has a non-empty one, else of the whole key (CLUSTER KEYSLOT). */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return tagSlot(key.slice(open + 1, close));
  }
  return tagSlot(key);
}

/** Above this many shards the tags are not placed on the slot ring (the search would cost more than it gives). */
const PLACED_SHARDS_MAX = 64;

/**
 * The hash tag of shard `shard` of `shards`. Shard 0 is the unsharded tag (`<exchange>:<topic>`), so a
 * topic keeps its keys when sharding is turned on. Plain `#<i>` suffixes would land where CRC16 puts
 * them: three shards all on different masters of a 3-master cluster only 2 times in 9. So shard `i`
 * is placed on the slot ring: shard 0's slot falls in one of `shards` equal arcs, shard `i` goes `i`
 * arcs further, in the middle half of its arc (the first `#<i>` or `#<i>.<k>` suffix that lands there).
 * A cluster whose masters own equal contiguous slot ranges (what `redis-cli --cluster create` makes)
 * with as many masters as shards thus holds one shard per master, on every transport alike: the
 * placement depends on the names only, never on the live topology.
 */
export function shardTag(exchange: string, topic: string, shard: number, shards: number): string {
  const first = `${exchange}:${topic}`;
  if (shard === 0) return first;
  if (shards > PLACED_SHARDS_MAX) return `${first}#${shard}`;
  const width = SLOTS / shards;
  const arc = (Math.floor(tagSlot(first) / width) + shard) % shards;
  const lo = arc * width + width / 4;
  const hi = arc * width + (3 * width) / 4;
  // Each try lands in the window with probability 1 / (2 * shards): a few hundred tries at most.
  for (let k = 0; k < 1_000_000; k++) {
    const tag = k === 0 ? `${first}#${shard}` : `${first}#${shard}.${k}`;
    const slot = tagSlot(tag);
    if (slot >= lo && slot < hi) return tag;
  }
  return `${first}#${shard}`;
}

/** The keys of one topic (one shard of it) on one exchange. */
export class TopicKeys {
  /** `<prefix>:{<shard tag>}` (see {@link shardTag}): the common start of every key of this topic shard. */
  readonly base: string;

  constructor(prefix: string, exchange: string, readonly topic: string, readonly shard = 0, shards = 1) {
    this.base = `${prefix}:{${shardTag(exchange, topic, shard, shards)}}`;
  }

  private topicStreamKey?: string;
  private topicListKey?: string;

  /** The stream every server of the topic shares (`<topic>`). */
  get topicStream(): string {
    return (this.topicStreamKey ??= `${this.base}:rpc:${topicAddress(this.topic)}`);
  }

  /** The stream of one named server (`<topic>.<server>`). */
  serverStream(server: string): string {
    return `${this.base}:rpc:${serverAddress(this.topic, server)}`;
  }

  /**
   * The request list every server of the topic pops (`<topic>`). Requests from tidings of this
   * version go here; the stream ({@link topicStream}) is still read for older senders, and its
   * existence says a server ever listened (a request to a topic without it is dropped).
   */
  get topicList(): string {
    return (this.topicListKey ??= `${this.base}:req:${topicAddress(this.topic)}`);
  }

  /** The request list of one named server (`<topic>.<server>`); its stream is the existence mark. */
  serverList(server: string): string {
    return `${this.base}:req:${serverAddress(this.topic, server)}`;
  }

  /** The hash of live RPC servers: fanout inbox key -> expiry (epoch ms). */
  get servers(): string {
    return `${this.base}:servers`;
  }

  /** The hash of named servers' streams: `<topic>.<server>` stream key -> expiry (epoch ms), refreshed by every live server of that name. */
  get serverStreams(): string {
    return `${this.base}:server-streams`;
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
  return Array.from({ length: shards }, (_, i) => new TopicKeys(prefix, exchange, topic, i, shards));
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
  return `${globLiteral(prefix)}:*`;
}

/** Escapes Redis glob characters so that a name matches only itself in a SCAN MATCH pattern. */
function globLiteral(name: string): string {
  return name.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/** The SCAN MATCH pattern of every RPC stream (`TopicKeys.topicStream`, `serverStream`) of `exchange`. */
export function rpcStreamPattern(prefix: string, exchange: string): string {
  return `${globLiteral(prefix)}:{${globLiteral(exchange)}:*}:rpc:*`;
}

/**
 * The topic whose shared RPC stream `key` is (`TopicKeys.topicStream` of any shard), or undefined
 * for any other key (a named server's stream, another exchange's).
 */
export function rpcTopicOfStream(prefix: string, exchange: string, key: string): string | undefined {
  const start = `${prefix}:{${exchange}:`;
  if (!key.startsWith(start)) return undefined;
  const rest = key.slice(start.length);
  const cut = rest.indexOf('}:rpc:');
  if (cut < 0) return undefined;
  const tagTopic = rest.slice(0, cut);
  const topic = rest.slice(cut + '}:rpc:'.length);
  return topic !== '' && (tagTopic === topicAddress(topic) || tagTopic.startsWith(`${topicAddress(topic)}#`)) ? topic : undefined;
}
