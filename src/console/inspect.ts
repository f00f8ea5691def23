// What the console asks a driver about its pools and topics (BaseDriver.inspection(),
// inspectPools(), listRpcTopics()), and the sampler behind the lag chart's history.
import { NotSupportedError, type Logger, type Transport } from '../index.js';
import type { BaseDriver } from '../contract/base-driver.js';
import { NO_INSPECTION, type Inspection, type PoolQuery, type PoolView } from '../contract/inspection.js';

/** The transport's driver seen through its inspection methods (BaseDriver.inspection, inspectPools, listRpcTopics). */
export class DriverInspector {
  private readonly driver: BaseDriver;

  constructor(transport: Transport) {
    this.driver = transport.driver;
  }

  /** What the driver can tell; all false when a driver's own inspection() breaks its contract and throws. */
  inspection(): Inspection {
    try {
      return { ...NO_INSPECTION, ...this.driver.inspection() };
    } catch {
      return NO_INSPECTION;
    }
  }

  /** The pools of `query`. @throws NotSupportedError when the driver cannot inspect pools. */
  inspectPools(query: PoolQuery): Promise<PoolView[]> {
    return this.driver.inspectPools(query);
  }

  /** The RPC topics the broker knows of; undefined when it cannot list them. */
  listRpcTopics(exchange?: string): Promise<string[] | undefined> {
    return this.driver.listRpcTopics(exchange);
  }
}

/** One sample of one pool, for the lag chart. */
export interface PoolSample {
  /** When it was taken, epoch ms. */
  readonly at: number;
  /** The address, `<topic>.<priority>`. */
  readonly address: string;
  /** The pool as PoolView names it. */
  readonly pool: string;
  /** Messages waiting; null = the driver cannot tell. */
  readonly backlog: number | null;
  /** Consumers attached; null = the driver cannot tell. */
  readonly consumers: number | null;
}

/** Most samples kept per topic, whatever refreshMs and the number of pools: memory stays bounded. */
const MAX_SAMPLES_PER_TOPIC = 20_000;

/**
 * Samples the pools of the console's notification topics every `intervalMs` and keeps the last
 * `historyMs` of them (and at most MAX_SAMPLES_PER_TOPIC per topic). One round at a time: a slow
 * broker delays the next round instead of piling rounds up.
 */
export class PoolSampler {
  private readonly samples = new Map<string, PoolSample[]>();
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly inspector: DriverInspector,
    private readonly topics: readonly string[],
    private readonly pools: readonly string[],
    private readonly intervalMs: number,
    private readonly historyMs: number,
    private readonly logger: Logger,
  ) {
    for (const topic of topics) this.samples.set(topic, []);
  }

  /** Takes a first round now, then one every intervalMs. Nothing when the driver cannot inspect pools. */
  start(): void {
    if (this.topics.length === 0 || this.stopped) return;
    this.schedule(0);
  }

  /** Stops sampling and waits for a round in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.round;
  }

  /** The samples of `topic`, oldest first; undefined for a topic the console does not sample. */
  history(topic: string): PoolSample[] | undefined {
    const kept = this.samples.get(topic);
    if (kept === undefined) return undefined;
    this.expire(kept);
    return [...kept];
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.round = this.sampleAll().finally(() => {
        this.round = undefined;
        if (!this.stopped) this.schedule(this.intervalMs);
      });
    }, delayMs);
    this.timer.unref();
  }

  private async sampleAll(): Promise<void> {
    for (const topic of this.topics) {
      if (this.stopped) return;
      try {
        const at = Date.now();
        const views = await this.inspector.inspectPools({ topic, pools: this.pools });
        const kept = this.samples.get(topic)!;
        for (const v of views) kept.push({ at, address: v.address, pool: v.pool, backlog: v.backlog ?? null, consumers: v.consumers ?? null });
        this.expire(kept);
      } catch (err) {
        if (err instanceof NotSupportedError) {
          this.stopped = true;
          return;
        }
        this.logger.debug('console: could not sample pools', { topic, err });
      }
    }
  }

  private expire(kept: PoolSample[]): void {
    const oldest = Date.now() - this.historyMs;
    let drop = 0;
    while (drop < kept.length && kept[drop].at < oldest) drop++;
    if (kept.length - drop > MAX_SAMPLES_PER_TOPIC) drop = kept.length - MAX_SAMPLES_PER_TOPIC;
    if (drop > 0) kept.splice(0, drop);
  }
}
