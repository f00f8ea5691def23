// The Kafka driver's dead letters (`tidings dead-letters`): the records of `<address>.dlq`. A
// Kafka topic cannot delete one record, so removal is a marker record in the same topic naming
// the ids it removes; every operation reads the whole topic (up to its end) and skips removed ids.
import type { DeadLetter, DeadLetterQuery, DeadLetterStore } from '../../contract/dead-letters.js';
import { InvalidArgument } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { IncomingRecord } from './client.js';
import type { KafkaConnection } from './connection.js';
import type { ResolvedKafkaOptions } from './options.js';
import { deadLetterTopic, HEADERS, retryTopic, withVhost } from './topology.js';

/** Ids per removal marker: keeps one marker's header well under any broker's record size. */
const IDS_PER_MARKER = 500;
const ID = /^\d+:\d+$/;

/** A dead letter and where it lives. */
interface Held extends DeadLetter {
  /** The topic it was first published to. */
  readonly originalTopic: string;
  readonly record: IncomingRecord;
}

/**
 * Dead letters of one Kafka transport. Ids are `partition:offset` in the dead-letter topic.
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
  constructor(
    private readonly conn: KafkaConnection,
    private readonly options: ResolvedKafkaOptions,
    private readonly logger: Logger,
  ) {}

  async list(query: DeadLetterQuery): Promise<DeadLetter[]> {
    const { letters } = await this.read(query, 100);
    // The record and original topic are non-enumerable: a copy holds the DeadLetter fields only.
    return letters.map((l) => ({ ...l }));
  }

  async replay(query: DeadLetterQuery): Promise<number> {
    const { topic, letters } = await this.read(query, undefined);
    if (letters.length === 0) return 0;
    await Promise.all(
      letters.map((l) =>
        this.conn.produce({
          topic: l.pool === undefined ? l.originalTopic : retryTopic(l.originalTopic, l.pool),
          key: l.record.key ?? undefined,
          value: l.body,
          headers: { [HEADERS.originalTopic]: l.originalTopic },
        }),
      ),
    );
    await this.remove(topic, letters);
    this.logger.info('Dead letters replayed', { topic, count: letters.length });
    return letters.length;
  }

  async purge(query: DeadLetterQuery): Promise<number> {
    const { topic, letters } = await this.read(query, undefined);
    await this.remove(topic, letters);
    this.logger.info('Dead letters purged', { topic, count: letters.length });
    return letters.length;
  }

  /** The live dead letters the query names, oldest first, at most `limit` (the query's, else `defaultLimit`). */
  private async read(query: DeadLetterQuery, defaultLimit: number | undefined): Promise<{ topic: string; letters: Held[] }> {
    checkQuery(query);
    const topic = deadLetterTopic(withVhost(query.address, this.options.vhost));
    const client = await this.conn.getClient();
    const records = await client.readTopic(topic);
    const removed = new Set<string>();
    for (const r of records) for (const id of r.headers[HEADERS.removes]?.split(',') ?? []) removed.add(id);
    const wanted = query.ids === undefined ? undefined : new Set(query.ids);
    const letters: Held[] = [];
    for (const record of records) {
      const id = `${record.partition}:${record.offset}`;
      if (record.headers[HEADERS.removes] !== undefined || removed.has(id) || (wanted && !wanted.has(id))) continue;
      letters.push(letterOf(id, query.address, record));
    }
    letters.sort((a, b) => (a.deadAt < b.deadAt ? -1 : a.deadAt > b.deadAt ? 1 : 0));
    const limit = query.limit ?? defaultLimit;
    return { topic, letters: limit === undefined ? letters : letters.slice(0, limit) };
  }

  /** Writes the markers removing `letters`; resolves once the broker acknowledged them. */
  private async remove(topic: string, letters: readonly Held[]): Promise<void> {
    const markers: Promise<void>[] = [];
    for (let i = 0; i < letters.length; i += IDS_PER_MARKER) {
      const ids = letters.slice(i, i + IDS_PER_MARKER).map((l) => l.id);
      markers.push(this.conn.produce({ topic, value: '', headers: { [HEADERS.removes]: ids.join(',') } }));
    }
    await Promise.all(markers);
  }
}

function letterOf(id: string, address: string, record: IncomingRecord): Held {
  const h = record.headers;
  const deliveries = Number(h[HEADERS.deliveries]);
  const letter: Record<string, unknown> = {
    id,
    address,
    body: record.value?.toString('utf8') ?? '',
    error: h[HEADERS.reason] ?? 'unknown',
    deadAt: h[HEADERS.deadAt] ?? '',
    deliveries: Number.isInteger(deliveries) ? deliveries : 0,
  };
  if (h[HEADERS.group] !== undefined) letter.pool = h[HEADERS.group];
  if (h[HEADERS.consumer] !== undefined) letter.consumer = h[HEADERS.consumer];
  Object.defineProperty(letter, 'record', { value: record, enumerable: false });
  Object.defineProperty(letter, 'originalTopic', { value: h[HEADERS.originalTopic] ?? record.topic.replace(/\.dlq$/, ''), enumerable: false });
  return letter as unknown as Held;
}

function checkQuery(query: DeadLetterQuery): void {
  if (typeof query.address !== 'string' || query.address === '') throw new InvalidArgument('address', 'a non-empty address such as notifications.info', query.address);
  if (query.ids !== undefined) {
    for (const id of query.ids) if (typeof id !== 'string' || !ID.test(id)) throw new InvalidArgument('ids', 'Kafka dead-letter ids of the form <partition>:<offset>', id);
  }
  if (query.limit !== undefined && (!Number.isInteger(query.limit) || query.limit < 1)) throw new InvalidArgument('limit', 'a positive integer', query.limit);
}
