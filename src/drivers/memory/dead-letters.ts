// The memory:// driver's dead letters (`tidings dead-letters --url memory://...` in the same
// process): notifications requeued `maxDeliveries` times and malformed messages, kept per virtual
// host (every transport of it sees the same letters), bounded: the oldest go first.
import type { DeadLetter, DeadLetterQuery, DeadLetterStore } from '../../contract/dead-letters.js';
import { InvalidArgument } from '../../core/errors.js';
import type { MemoryBroker } from './memory-broker.js';

/** Most dead letters one virtual host keeps; a new one past it drops the oldest. */
export const MEMORY_DEAD_LETTER_CAP = 10_000;

/** One letter with where it was published: replay publishes the body there again. */
interface Kept {
  readonly letter: DeadLetter;
  readonly exchange: string;
  readonly routingKey: string;
}

/** The letters of one broker, oldest first. */
interface Box {
  readonly kept: Kept[];
  nextId: number;
}

const boxes = new WeakMap<MemoryBroker, Box>();

function boxOf(broker: MemoryBroker): Box {
  let box = boxes.get(broker);
  if (!box) boxes.set(broker, (box = { kept: [], nextId: 1 }));
  return box;
}

/** What a listener records of a message it sets aside. */
export interface SetAside {
  readonly address: string;
  readonly pool?: string;
  readonly body: string;
  readonly error: string;
  readonly deliveries: number;
  readonly exchange: string;
  readonly routingKey: string;
}

/** Keeps `m` among `broker`'s dead letters. Returns true when the oldest one was dropped to make room. */
export function keepDeadLetter(broker: MemoryBroker, m: SetAside): boolean {
  const box = boxOf(broker);
  const letter: DeadLetter = { id: String(box.nextId++), address: m.address, ...(m.pool === undefined ? {} : { pool: m.pool }), body: m.body, error: m.error, deadAt: new Date().toISOString(), deliveries: m.deliveries };
  box.kept.push({ letter, exchange: m.exchange, routingKey: m.routingKey });
  if (box.kept.length <= MEMORY_DEAD_LETTER_CAP) return false;
  box.kept.shift();
  return true;
}

/** The dead letters of one memory:// virtual host, by address (and exchange when the query names one). */
export class MemoryDeadLetters implements DeadLetterStore {
  constructor(private readonly broker: MemoryBroker) {}

  async list(query: DeadLetterQuery): Promise<DeadLetter[]> {
    return this.find(query, query.limit ?? 100).map((k) => k.letter);
  }

  /**
   * Publishes each body again where it was published (every queue bound there gets it, as every
   * group of a Redis stream does: a pool that had handled it drops it by `_unique_id` while it is
   * in its dedup window), then forgets it; a letter nothing is bound for any more stays.
   */
  async replay(query: DeadLetterQuery): Promise<number> {
    let n = 0;
    for (const k of this.find(query, query.limit)) {
      if (this.broker.publish(k.exchange, k.routingKey, k.letter.body) === 0) continue;
      this.forget(k);
      n++;
    }
    return n;
  }

  async purge(query: DeadLetterQuery): Promise<number> {
    const found = this.find(query, query.limit);
    for (const k of found) this.forget(k);
    return found.length;
  }

  private find(query: DeadLetterQuery, limit: number | undefined): Kept[] {
    if (typeof query.address !== 'string' || query.address === '') throw new InvalidArgument('address', 'a non-empty address such as notifications.info', query.address);
    const ids = query.ids ? new Set(query.ids) : undefined;
    const out = boxOf(this.broker).kept.filter((k) => k.letter.address === query.address && (query.exchange === undefined || k.exchange === query.exchange) && (!ids || ids.has(k.letter.id)));
    return limit === undefined ? out : out.slice(0, limit);
  }

  private forget(k: Kept): void {
    const kept = boxOf(this.broker).kept;
    const i = kept.indexOf(k);
    if (i >= 0) kept.splice(i, 1);
  }
}
