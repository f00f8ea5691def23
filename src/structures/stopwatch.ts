// A countdown used wherever several waits must share one deadline (batch polling, retries).

/** Measures elapsed time against an optional duration. `durationMs` undefined = no limit. */
export class StopWatch {
  private readonly startedAt: number;

  constructor(
    /** The limit, ms; undefined = none. */
    readonly durationMs?: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.startedAt = now();
  }

  /** Milliseconds since the watch was created. */
  elapsed(): number {
    return this.now() - this.startedAt;
  }

  /** Milliseconds left, never negative; `undefined` when the watch has no limit. */
  leftover(): number | undefined {
    if (this.durationMs === undefined) return undefined;
    return Math.max(0, this.durationMs - this.elapsed());
  }
}
