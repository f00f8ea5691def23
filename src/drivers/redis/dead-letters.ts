// The Redis driver's dead letters (`tidings dead-letters`): entries that the claim script or a
// malformed-entry reject moved to a topic shard's `:dead` stream with x-* metadata (scripts/index.ts).
import type { DeadLetter, DeadLetterQuery, DeadLetterStore } from '../../contract/dead-letters.js';
import { isPriority } from '../../contract/types.js';
import { InvalidArgument } from '../../core/errors.js';
import { runScript, type RedisClient } from './connection.js';
import { parseDeadLetterFields } from './entry-fields.js';
import { toMessagingError } from './errors.js';
import { BODY_FIELD, hashTagOf, TopicKeys, topicShards } from './topology.js';

/** Entries read per XRANGE page while filtering a dead-letter stream. */
const PAGE = 500;

/** What the store needs from its driver. */
export interface RedisDeadLetterDeps {
  readonly keyPrefix: string;
  readonly shards: number;
  readonly defaultExchange: string;
  /** The driver's command connection. */
  commands(): RedisClient;
}

/** One dead-letter entry with what replay and purge need. */
interface Found {
  readonly letter: DeadLetter;
  /** The dead-letter stream holding it. */
  readonly dead: string;
  /** Its entry id in that stream. */
  readonly entryId: string;
  /** The stream it came from (`x-stream`), one of the queried address's streams. */
  readonly origin: string;
  /** The fields it had on that stream. */
  readonly original: readonly string[];
  /** True when its metadata is not what the driver writes: listed, never replayed. */
  readonly malformed: boolean;
}

function fieldMap(fields: readonly string[]): Map<string, string> {
  const m = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) if (!m.has(fields[i])) m.set(fields[i], fields[i + 1]);
  return m;
}

/** Stream ids `ms-seq` in stream order. */
function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number);
  const [bm, bs] = b.split('-').map(Number);
  return am !== bm ? am - bm : as - bs;
}

/**
 * Dead letters of one address, over every shard of its topic. Ids are the dead-letter stream's
 * entry ids; on a sharded topic (`shards` > 1) a letter of shard n > 0 is `<n>/<entry id>`.
 */
export class RedisDeadLetters implements DeadLetterStore {
  constructor(private readonly deps: RedisDeadLetterDeps) {}

  async list(query: DeadLetterQuery): Promise<DeadLetter[]> {
    return (await this.find(query, query.limit ?? 100)).map((f) => f.letter);
  }

  /**
   * Puts each letter's original fields back on the stream it came from as a new entry, then
   * removes the letter; both in one script (the keys share a hash tag), so a crash leaves it in
   * one place. Every group of that stream sees the new entry: a pool that had in fact handled it
   * drops it by `_unique_id` while it is in its dedup window.
   */
  async replay(query: DeadLetterQuery): Promise<number> {
    const cmd = this.deps.commands();
    let n = 0;
    for (const f of await this.find(query, query.limit)) {
      if (f.malformed) continue;
      try {
        if (hashTagOf(f.dead) === hashTagOf(f.origin)) {
          n += Number(await runScript(cmd, 'tidingsReplay', [f.dead, f.origin], [f.entryId]));
        } else {
          // Keys in different slots (never written so by this driver): add first, then delete.
          await cmd.xadd(f.origin, '*', ...(f.original.length > 0 ? f.original : [BODY_FIELD, '']));
          n += await cmd.xdel(f.dead, f.entryId);
        }
      } catch (err) {
        throw toMessagingError(err, `Could not replay dead letter ${f.letter.id} to ${f.origin} (${n} replayed before it)`);
      }
    }
    return n;
  }

  async purge(query: DeadLetterQuery): Promise<number> {
    const cmd = this.deps.commands();
    const found = await this.find(query, query.limit);
    const byStream = new Map<string, string[]>();
    for (const f of found) byStream.set(f.dead, [...(byStream.get(f.dead) ?? []), f.entryId]);
    let n = 0;
    try {
      for (const [dead, ids] of byStream) {
        for (let i = 0; i < ids.length; i += PAGE) n += await cmd.xdel(dead, ...ids.slice(i, i + PAGE));
        // An emptied dead-letter stream is not kept as an empty key.
        if ((await cmd.xlen(dead)) === 0) await cmd.unlink(dead);
      }
    } catch (err) {
      throw toMessagingError(err, `Could not purge dead letters of ${query.address} (${n} purged)`);
    }
    return n;
  }

  /** The letters of the query's address, oldest first (by dead-letter entry id across shards), at most `limit`. */
  private async find(query: DeadLetterQuery, limit: number | undefined): Promise<Found[]> {
    if (typeof query.address !== 'string' || query.address === '') throw new InvalidArgument('address', 'a non-empty address such as notifications.info', query.address);
    const exchange = query.exchange ?? this.deps.defaultExchange;
    const cut = query.address.lastIndexOf('.');
    const priority = cut > 0 ? query.address.slice(cut + 1) : '';
    // `<topic>.<priority>` is a notification address; anything else is an RPC topic (its shared,
    // per-server and fanout streams all dead-letter into the topic's stream).
    const notify = isPriority(priority);
    const topic = notify ? query.address.slice(0, cut) : query.address;
    const shards = topicShards(this.deps.keyPrefix, exchange, topic, this.deps.shards);
    const cmd = this.deps.commands();
    const wanted = query.ids ? new Set(query.ids) : undefined;
    const out: Found[] = [];
    try {
      for (const keys of shards) {
        const matches = notify ? exact(keys.notificationStream(priority)) : rpcOf(keys);
        const idOf = (entryId: string) => (keys.shard === 0 ? entryId : `${keys.shard}/${entryId}`);
        if (wanted) {
          for (const id of wanted) {
            const entryId = keys.shard === 0 ? id : id.startsWith(`${keys.shard}/`) ? id.slice(`${keys.shard}/`.length) : undefined;
            if (entryId === undefined || !/^\d+-\d+$/.test(entryId)) continue;
            for (const [eid, fields] of (await cmd.xrange(keys.deadLetters, entryId, entryId)) as [string, string[]][]) {
              const f = toFound(keys, eid, idOf(eid), fields, query.address);
              if (f && matches(f.origin)) out.push(f);
            }
          }
          continue;
        }
        // Only the first `limit` per shard can be among the oldest `limit` overall.
        let start = '-';
        let got = 0;
        while (limit === undefined || got < limit) {
          const page = (await cmd.xrange(keys.deadLetters, start, '+', 'COUNT', PAGE)) as [string, string[]][];
          for (const [eid, fields] of page) {
            const f = toFound(keys, eid, idOf(eid), fields, query.address);
            if (!f || !matches(f.origin)) continue;
            out.push(f);
            if (limit !== undefined && ++got >= limit) break;
          }
          if (page.length < PAGE) break;
          start = `(${page[page.length - 1][0]}`;
        }
      }
    } catch (err) {
      throw toMessagingError(err, `Could not read the dead letters of ${query.address}`);
    }
    out.sort((a, b) => compareIds(a.entryId, b.entryId));
    return limit === undefined ? out : out.slice(0, limit);
  }
}

function exact(stream: string): (origin: string) => boolean {
  return (origin) => origin === stream;
}

/** The topic's RPC streams: shared, per-server and fanout inboxes. */
function rpcOf(keys: TopicKeys): (origin: string) => boolean {
  const shared = keys.topicStream;
  const server = keys.serverStream('');
  const inbox = keys.inbox('');
  return (origin) => origin === shared || origin.startsWith(server) || origin.startsWith(inbox);
}

function toFound(keys: TopicKeys, entryId: string, id: string, fields: readonly string[], queried: string): Found | undefined {
  const parsed = parseDeadLetterFields(fields);
  if (parsed === undefined) return undefined;
  const original = fieldMap(parsed.original);
  const { stream: origin, group, consumer } = parsed;
  const notifyBase = `${keys.base}:notify:`;
  const rpcBase = `${keys.base}:rpc:`;
  const address = origin.startsWith(notifyBase) ? origin.slice(notifyBase.length) : origin.startsWith(rpcBase) ? origin.slice(rpcBase.length) : queried;
  const letter: DeadLetter = {
    id,
    address,
    ...(group.startsWith('pool:') ? { pool: group.slice('pool:'.length) } : {}),
    body: original.get(BODY_FIELD) ?? '',
    // A count or time tidings could not have written: shown as such, and never replayed.
    error: parsed.malformed === undefined ? parsed.error || 'no error recorded' : `malformed dead letter: ${parsed.malformed}`,
    ...(consumer ? { consumer } : {}),
    deadAt: new Date(parsed.time ?? 0).toISOString(),
    deliveries: parsed.deliveries ?? 0,
  };
  return { letter, dead: keys.deadLetters, entryId, origin, original: parsed.original, malformed: parsed.malformed !== undefined };
}
