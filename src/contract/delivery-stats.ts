// What a driver's listeners counted of their deliveries: redeliveries and dead letters per
// address. Kept in plain numbers on rare paths (a redelivery, a dead letter), read by the
// OpenTelemetry module when its meter collects (`BaseDriver.deliveryStats`).

/** Why a message was set aside instead of being delivered again. */
export type DeadLetterReason = 'max_deliveries' | 'malformed';

/** The counts of one address (and pool). */
export interface DeliveryCount {
  /** The address the messages came from (`<topic>.<priority>`, an RPC topic, a stream). */
  readonly address: string;
  /** The pool (consumer group), when the driver knows it. */
  readonly pool?: string;
  /** Messages received that the broker had delivered before (to this or another consumer). */
  readonly redeliveries: number;
  /** Messages set aside after `maxDeliveries` failed deliveries. */
  readonly deadLettered: number;
  /** Messages rejected as malformed (not requeued; set aside where the driver keeps dead letters). */
  readonly malformed: number;
  /** Dead letters deleted, oldest first, to keep the dead letters within `dead_letter_max_len`. */
  readonly deadLettersDropped: number;
}

interface Counts {
  address: string;
  pool?: string;
  redeliveries: number;
  deadLettered: number;
  malformed: number;
  deadLettersDropped: number;
}

/** A driver's delivery counters; every listener of the driver adds to the same one. */
export class DeliveryStats {
  private readonly counts = new Map<string, Counts>();

  /** One message received that was delivered before. */
  redelivered(address: string, pool?: string): void {
    this.of(address, pool).redeliveries++;
  }

  /** One message set aside: after `maxDeliveries`, or rejected as malformed. */
  deadLettered(address: string, reason: DeadLetterReason, pool?: string): void {
    const counts = this.of(address, pool);
    if (reason === 'malformed') counts.malformed++;
    else counts.deadLettered++;
  }

  /** `count` of the oldest dead letters deleted past `dead_letter_max_len`, counted on the address whose dead letter pushed them out. */
  deadLettersDropped(address: string, count: number, pool?: string): void {
    if (count > 0) this.of(address, pool).deadLettersDropped += count;
  }

  /** Every address counted so far, with its totals since the driver was created. */
  snapshot(): DeliveryCount[] {
    return [...this.counts.values()].map((c) => ({ ...c }));
  }

  private of(address: string, pool: string | undefined): Counts {
    const key = pool === undefined ? address : `${address}\0${pool}`;
    let counts = this.counts.get(key);
    if (counts === undefined) {
      counts = { address, redeliveries: 0, deadLettered: 0, malformed: 0, deadLettersDropped: 0 };
      if (pool !== undefined) counts.pool = pool;
      this.counts.set(key, counts);
    }
    return counts;
  }
}

/** How far a consumer group is behind on one address (`BaseDriver.consumerLag()`). */
export interface ConsumerLag {
  /** The address (a Kafka topic, a Redis stream). */
  readonly address: string;
  /** The pool (consumer group). */
  readonly pool?: string;
  /** Messages on the address the group has not read or not committed yet. */
  readonly lag: number;
}

/** A listener that can tell how far its group is behind (`BaseDriver.reportLag`). */
export interface LagSource {
  /** True once cleaned up: no longer asked. */
  readonly closed: boolean;
  /** The lag of each address it reads. */
  lag(): Promise<ConsumerLag[]>;
}
