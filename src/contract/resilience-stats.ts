// Counts of the RPC clients' resilience features on one transport (retries, calls refused,
// circuit states), read by the OpenTelemetry metrics when the meter collects. Clients without
// a retry policy, breaker or bulkhead never touch it.

/** A circuit breaker's state: `closed` (calls pass), `open` (calls refused), `half-open` (probes pass). */
export type CircuitState = 'closed' | 'open' | 'half-open';

/** What the stats read off a circuit breaker. */
export interface CircuitView {
  /** The breaker's target, as `topic`, `topic.server` or with the exchange. */
  readonly destination: string;
  /** Its state now. */
  readonly state: CircuitState;
}

/** Counts for one destination since the transport opened. */
export interface ResilienceCounts {
  /** The target, as in CircuitView. */
  readonly destination: string;
  /** Attempts made again after a timeout or delivery failure. */
  readonly retries: number;
  /** Calls refused because the target's circuit was open. */
  readonly circuitRejections: number;
  /** Calls refused because the client's bulkhead was full. */
  readonly bulkheadRejections: number;
}

interface Counts {
  retries: number;
  circuitRejections: number;
  bulkheadRejections: number;
}

const STATE_RANK: Readonly<Record<CircuitState, number>> = { closed: 0, 'half-open': 1, open: 2 };

/** One per transport (`Transport.resilienceStats`); clients on it record into it. */
export class ResilienceStats {
  private readonly counts = new Map<string, Counts>();
  /** Held weakly: a breaker of a client dropped by its user is not kept alive by its metrics. */
  private readonly circuits = new Set<WeakRef<CircuitView>>();

  /** One more retry of a call to `destination`. */
  retried(destination: string): void {
    this.of(destination).retries++;
  }

  /** One more call to `destination` refused by an open circuit or a full bulkhead. */
  rejected(destination: string, reason: 'circuit' | 'bulkhead'): void {
    const c = this.of(destination);
    if (reason === 'circuit') c.circuitRejections++;
    else c.bulkheadRejections++;
  }

  /** Reports `circuit`'s state from now on (while it is alive). */
  track(circuit: CircuitView): void {
    this.circuits.add(new WeakRef(circuit));
  }

  /** The counts per destination. */
  snapshot(): ResilienceCounts[] {
    return [...this.counts].map(([destination, c]) => ({ destination, ...c }));
  }

  /** The state of each destination's circuit: the worst when several clients have one. */
  circuitStates(): CircuitView[] {
    const worst = new Map<string, CircuitState>();
    for (const ref of this.circuits) {
      const circuit = ref.deref();
      if (circuit === undefined) {
        this.circuits.delete(ref);
        continue;
      }
      const seen = worst.get(circuit.destination);
      const state = circuit.state;
      if (seen === undefined || STATE_RANK[state] > STATE_RANK[seen]) worst.set(circuit.destination, state);
    }
    return [...worst].map(([destination, state]) => ({ destination, state }));
  }

  private of(destination: string): Counts {
    let c = this.counts.get(destination);
    if (c === undefined) this.counts.set(destination, (c = { retries: 0, circuitRejections: 0, bulkheadRejections: 0 }));
    return c;
  }
}
