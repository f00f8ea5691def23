// The Kafka driver's dead letters (`tidings dead-letters`): notifications the listener moved to
// `<address>.dlq` with x-tidings-* headers (kafka-listener.ts). A Kafka topic cannot delete one
// record, so removal is a marker record in the same topic naming the ids it removes; every
// operation reads the whole topic (up to its end) and skips removed ids.
import { DEAD_LETTERS_DROPPED, type DeadLetter, type DeadLetterQuery, type DeadLetterStore } from '../../contract/dead-letters.js';
import { InvalidArgument } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { IncomingRecord } from './client/index.js';
import type { KafkaConnection } from './connection.js';
import { deadLetterOrigin, deadLetterTopic, HEADERS, retryTopic, withVhost } from './topology.js';

/** Ids per removal marker: keeps one marker's header well under any broker's record size. */
const IDS_PER_MARKER = 500;
const ID = /^\d+:\d+$/;

/** What the store needs from its driver. */
export interface KafkaDeadLetterDeps {
  /** The URL's virtual host, appended to topic names. */
  readonly vhost: string;
  /** The driver's client (its producer and admin). */
  readonly conn: KafkaConnection;
  readonly logger: Logger;
}

/** One dead-letter record with what replay and purge need. */
interface Found {
  readonly letter: DeadLetter;
  /** The dead-letter topic holding it. */
  readonly dead: string;
  /** The record in that topic. */
  readonly record: IncomingRecord;
  /** The topic it came from (`x-tidings-original-topic`). */
  readonly origin: string;
}

/**
 * Dead letters of one address: the records of `<address>.dlq`. Ids are `partition:offset` in
 * that topic.
 *
 * - `list` reads `<address>.dlq` from its start to its end (nothing committed) and leaves out
 *   ids a removal marker names; oldest (by the time they died) first.
 * - `replay` produces each body, with no delivery count (so it gets `maxDeliveries` afresh), to
 *   the retry topic of the pool that gave up on it (`<address>.retry.<pool>`), which only that
 *   pool reads: the other pools already handled it and do not see it twice. A dead letter that
 *   names no pool goes to the address itself. Once the broker acknowledged every copy, a marker
 *   removes them; a crash in between leaves them in both places (listeners dedupe on
 *   `_unique_id`), never in neither.
 * - `purge` writes the marker only.
 *
 * The `exchange` of a query means nothing on Kafka and is ignored. Markers are records with an
 * empty value and the `x-tidings-removes` header; they stay until the topic's retention drops
 * them, as do the removed records.
 */
export class KafkaDeadLetters implements DeadLetterStore {
  constructor(private readonly deps: KafkaDeadLetterDeps) {}

  async list(query: DeadLetterQuery): Promise<DeadLetter[]> {
    return (await this.find(query, query.limit ?? 100)).map((f) => f.letter);
  }

  async replay(query: DeadLetterQuery): Promise<number> {
    const found = await this.find(query, query.limit);
    if (found.length === 0) return 0;
    await Promise.all(
      found.map(({ letter, record, origin }) =>
        this.deps.conn.produce({
          topic: letter.pool === undefined ? origin : retryTopic(origin, letter.pool),
          key: record.key ?? undefined,
          value: letter.body,
          headers: { [HEADERS.originalTopic]: origin },
        }),
      ),
    );
    await this.remove(found);
    this.deps.logger.info('Dead letters replayed', { topic: found[0].dead, count: found.length });
    return found.length;
  }

  async purge(query: DeadLetterQuery): Promise<number> {
    const found = await this.find(query, query.limit);
    await this.remove(found);
    if (found.length > 0) this.deps.logger.info('Dead letters purged', { topic: found[0].dead, count: found.length });
    return found.length;
  }

  /**
   * Keeps the newest `maxLen` live dead letters of the dead-letter topic `dead` (the
   * `dead_letter_max_len` option): the oldest beyond are removed with a marker (Kafka keeps
   * their records until the topic's retention drops them) and logged. Returns how many.
   */
  async trim(dead: string, maxLen: number): Promise<number> {
    const live = await this.findIn(dead, deadLetterOrigin(dead), undefined);
    if (live.length <= maxLen) return 0;
    const dropped = live.slice(0, live.length - maxLen);
    await this.remove(dropped);
    this.deps.logger.warn(DEAD_LETTERS_DROPPED, { topic: dead, dropped: dropped.length, maxLen, oldestDeadAt: dropped[0].letter.deadAt });
    return dropped.length;
  }

  /** The live dead letters of the query's address, oldest first, at most `limit`. */
  private async find(query: DeadLetterQuery, limit: number | undefined): Promise<Found[]> {
    checkQuery(query);
    const found = await this.findIn(deadLetterTopic(withVhost(query.address, this.deps.vhost)), query.address, query.ids);
    return limit === undefined ? found : found.slice(0, limit);
  }

  /** The live dead letters of the dead-letter topic `dead` (of `address`), oldest first; only `ids` when given. */
  private async findIn(dead: string, address: string, ids: readonly string[] | undefined): Promise<Found[]> {
    const client = await this.deps.conn.getClient();
    const records = await client.readTopic(dead);
    const removed = new Set<string>();
    for (const r of records) for (const id of r.headers[HEADERS.removes]?.split(',') ?? []) removed.add(id);
    const wanted = ids === undefined ? undefined : new Set(ids);
    const out: Found[] = [];
    for (const record of records) {
      const id = `${record.partition}:${record.offset}`;
      if (record.headers[HEADERS.removes] !== undefined || removed.has(id) || (wanted && !wanted.has(id))) continue;
      out.push(toFound(dead, id, address, record));
    }
    out.sort((a, b) => (a.letter.deadAt < b.letter.deadAt ? -1 : a.letter.deadAt > b.letter.deadAt ? 1 : 0));
    return out;
  }

  /** Writes the markers removing `found` from its topic; resolves once the broker acknowledged them. */
  private async remove(found: readonly Found[]): Promise<void> {
    const markers: Promise<void>[] = [];
    for (let i = 0; i < found.length; i += IDS_PER_MARKER) {
      const ids = found.slice(i, i + IDS_PER_MARKER).map((f) => f.letter.id);
      markers.push(this.deps.conn.produce({ topic: found[i].dead, value: '', headers: { [HEADERS.removes]: ids.join(',') } }));
    }
    await Promise.all(markers);
  }
}

function toFound(dead: string, id: string, address: string, record: IncomingRecord): Found {
  const h = record.headers;
  const deliveries = Number(h[HEADERS.deliveries]);
  const pool = h[HEADERS.group];
  const consumer = h[HEADERS.consumer];
  const letter: DeadLetter = {
    id,
    address,
    ...(pool !== undefined ? { pool } : {}),
    body: record.value?.toString('utf8') ?? '',
    error: h[HEADERS.error] ?? 'no error recorded',
    ...(consumer !== undefined ? { consumer } : {}),
    deadAt: h[HEADERS.deadAt] ?? new Date(0).toISOString(),
    deliveries: Number.isInteger(deliveries) ? deliveries : 0,
  };
  // A replay goes to `origin`: a header naming a topic whose dead letters are not these is not obeyed.
  const named = h[HEADERS.originalTopic];
  return { letter, dead, record, origin: named !== undefined && deadLetterTopic(named) === dead ? named : deadLetterOrigin(dead) };
}

function checkQuery(query: DeadLetterQuery): void {
  if (typeof query.address !== 'string' || query.address === '') throw new InvalidArgument('address', 'a non-empty address such as notifications.info', query.address);
  if (query.ids !== undefined) {
    for (const id of query.ids) if (typeof id !== 'string' || !ID.test(id)) throw new InvalidArgument('ids', 'Kafka dead-letter ids of the form <partition>:<offset>', id);
  }
  if (query.limit !== undefined && (!Number.isInteger(query.limit) || query.limit < 1)) throw new InvalidArgument('limit', 'a positive integer', query.limit);
}
