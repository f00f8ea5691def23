// The RabbitMQ driver's dead letters (`tidings dead-letters`): notifications a listener moved to
// `<address>.dlq` with x-tidings-* headers (amqp-listener.ts). A queue cannot be read without
// taking, so every operation takes them with basic.get on a channel of its own without
// acknowledging; what it does not remove goes back when that channel closes.
import { createHash } from 'node:crypto';
import type { Channel, GetMessage } from 'amqplib';
import type { DeadLetter, DeadLetterQuery, DeadLetterStore } from '../../contract/dead-letters.js';
import { InvalidArgument, MessageDeliveryFailure } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { abortableSleep } from '../../core/retry.js';
import { keepingEncoding } from './compression.js';
import type { AmqpConnection } from './connection.js';
import { isNotFound, toMessagingError } from './errors.js';
import type { Publisher } from './publisher.js';
import { deadLetterQueueName, HEADERS } from './topology.js';

/** What the store needs from its driver. */
export interface AmqpDeadLetterDeps {
  /** The driver's publisher connection: each operation opens a channel of its own on it. */
  readonly conn: AmqpConnection;
  /** The driver's confirmed publisher (replays). */
  readonly publisher: Publisher;
  readonly logger: Logger;
}

/** One dead letter taken from its queue, unacknowledged. */
interface Found {
  readonly letter: DeadLetter;
  readonly message: GetMessage;
}

/**
 * Dead letters of one address: the messages of the queue `<address>.dlq`, oldest first (a queue
 * is FIFO). Ids are the `x-tidings-id` each was dead-lettered with.
 *
 * - `list` takes them without acknowledging and gives them back by closing its channel: the
 *   queue holds them as before (flagged redelivered), but a concurrent `list` does not see the
 *   ones taken meanwhile.
 * - `replay` publishes each body (confirmed) to the queue of the pool that gave up on it (the
 *   address's own queue without a pool) with no delivery count, so only that pool sees it again
 *   and it gets `maxDeliveries` afresh; then acknowledges it in the dead-letter queue. A crash in
 *   between leaves it in both places (listeners dedupe on `_unique_id`), never in neither.
 * - `purge` acknowledges them.
 *
 * Taking hides a letter from everyone else until the channel closes, so operations on one queue
 * take turns within this store (a console polling `list` while a replay runs), and a `replay` or
 * `purge` by ids that finds some missing looks again for up to {@link MISSING_IDS_WAIT_MS}: another
 * connection's `list` (the CLI, another console) may be holding them for a moment.
 *
 * The `exchange` of a query means nothing here (queues belong to the vhost) and is ignored.
 * Each pass reads at most the messages the queue held when it began.
 */
export class AmqpDeadLetters implements DeadLetterStore {
  /** The last operation on each dead-letter queue, settled or not: the next one waits for it. */
  private readonly turns = new Map<string, Promise<void>>();

  constructor(private readonly deps: AmqpDeadLetterDeps) {}

  list(query: DeadLetterQuery): Promise<DeadLetter[]> {
    return this.withTaken(query, query.limit ?? 100, async (found) => found.map((f) => f.letter));
  }

  replay(query: DeadLetterQuery): Promise<number> {
    return this.withTaken(query, query.limit, async (found, ch) => {
      const sent = await Promise.allSettled(
        found.map(({ letter, message }) => this.deps.publisher.publish('', letter.pool ?? letter.address, message.content, { headers: keepingEncoding(message.properties, { [HEADERS.address]: letter.address }), mandatory: true })),
      );
      let replayed = 0;
      let failure: unknown;
      sent.forEach((r, i) => {
        if (r.status === 'fulfilled') {
          ch.ack(found[i].message);
          replayed++;
        } else failure ??= r.reason;
      });
      if (replayed > 0) this.deps.logger.info('Dead letters replayed', { queue: deadLetterQueueName(query.address), count: replayed });
      if (failure !== undefined) {
        throw new MessageDeliveryFailure(`Replayed ${replayed} of ${found.length} dead letters; the others stay: ${failure instanceof Error ? failure.message : String(failure)}`, { cause: failure });
      }
      return replayed;
    });
  }

  purge(query: DeadLetterQuery): Promise<number> {
    return this.withTaken(query, query.limit, async (found, ch) => {
      for (const { message } of found) ch.ack(message);
      if (found.length > 0) this.deps.logger.info('Dead letters purged', { queue: deadLetterQueueName(query.address), count: found.length });
      return found.length;
    });
  }

  /**
   * Takes the dead letters `query` names (at most `limit`) on a channel of its own, runs `act`
   * on them, then closes the channel: what `act` did not acknowledge goes back to the queue.
   * Resolves after the close, so the broker has the acknowledgements and the returns.
   */
  private withTaken<T>(query: DeadLetterQuery, limit: number | undefined, act: (found: Found[], ch: Channel) => Promise<T>): Promise<T> {
    checkQuery(query);
    const queue = deadLetterQueueName(query.address);
    const result = (this.turns.get(queue) ?? Promise.resolve()).then(() => this.takeAndAct(query, limit, act));
    // Settles with the operation, whatever its outcome; the last one forgets the queue.
    const release = () => {
      if (this.turns.get(queue) === turn) this.turns.delete(queue);
    };
    const turn = result.then(release, release);
    this.turns.set(queue, turn);
    return result;
  }

  private async takeAndAct<T>(query: DeadLetterQuery, limit: number | undefined, act: (found: Found[], ch: Channel) => Promise<T>): Promise<T> {
    const model = await this.deps.conn.ensureOpen();
    let ch: Channel;
    try {
      ch = await model.createChannel();
    } catch (err) {
      throw toMessagingError(err, 'Could not open a channel for the dead letters');
    }
    ch.on('error', (err: Error) => this.deps.logger.debug('AMQP dead-letter channel error', { err }));
    try {
      const found = await this.take(ch, query, limit);
      return await act(found ?? [], ch);
    } finally {
      await ch.close().catch(() => undefined);
    }
  }

  /** The dead letters of the query, oldest first; undefined when the address has no dead-letter queue. */
  private async take(ch: Channel, query: DeadLetterQuery, limit: number | undefined): Promise<Found[] | undefined> {
    const queue = deadLetterQueueName(query.address);
    const count = async (): Promise<number | undefined> => {
      try {
        return (await ch.checkQueue(queue)).messageCount;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw toMessagingError(err, `Could not read the dead letters in ${queue}`);
      }
    };
    let held = await count();
    if (held === undefined) return undefined;
    const wanted = query.ids === undefined ? undefined : new Set(query.ids);
    const missing = new Set(wanted);
    const found: Found[] = [];
    const full = () => limit !== undefined && found.length >= limit;
    const deadline = Date.now() + MISSING_IDS_WAIT_MS;
    for (let pass = 0; ; pass++) {
      for (let i = 0; i < held && !full(); i++) {
        const message = await ch.get(queue, { noAck: false });
        if (message === false) break;
        const letter = toLetter(query.address, message);
        if (wanted !== undefined && !wanted.has(letter.id)) continue;
        missing.delete(letter.id);
        found.push({ letter, message });
      }
      // What this channel took stays taken, so a further pass reads only what came back meanwhile.
      if (missing.size === 0 || full() || Date.now() >= deadline) return found;
      await abortableSleep(Math.min(25 * 2 ** pass, 100));
      held = (await count()) ?? 0;
    }
  }
}

/** How long a replay or purge by ids keeps looking for ids another connection may be holding. */
export const MISSING_IDS_WAIT_MS = 1_000;

function toLetter(address: string, message: GetMessage): DeadLetter {
  const h: Record<string, unknown> = message.properties.headers ?? {};
  const text = (key: string): string | undefined => (typeof h[key] === 'string' && h[key] !== '' ? (h[key] as string) : undefined);
  const deliveries = h[HEADERS.deliveries];
  const pool = text(HEADERS.pool);
  const consumer = text(HEADERS.consumer);
  return {
    id: text(HEADERS.id) ?? `sha-${createHash('sha256').update(message.content).digest('hex').slice(0, 32)}`,
    address,
    ...(pool !== undefined ? { pool } : {}),
    body: message.content.toString('utf8'),
    error: text(HEADERS.error) ?? 'no error recorded',
    ...(consumer !== undefined ? { consumer } : {}),
    deadAt: text(HEADERS.deadAt) ?? new Date(0).toISOString(),
    deliveries: typeof deliveries === 'number' && Number.isSafeInteger(deliveries) && deliveries >= 0 ? deliveries : 0,
  };
}

function checkQuery(query: DeadLetterQuery): void {
  if (typeof query.address !== 'string' || query.address === '') throw new InvalidArgument('address', 'a non-empty address such as notifications.info', query.address);
  if (query.ids !== undefined) {
    for (const id of query.ids) if (typeof id !== 'string' || id === '' || id.length > 100) throw new InvalidArgument('ids', 'RabbitMQ dead-letter ids as listed', id);
  }
  if (query.limit !== undefined && (!Number.isInteger(query.limit) || query.limit < 1)) throw new InvalidArgument('limit', 'a positive integer', query.limit);
}
