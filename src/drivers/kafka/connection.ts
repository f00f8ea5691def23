// The client of one transport: loads the chosen client library on first use and coalesces
// produced records into shared produce requests (one per event-loop turn, or per `linger`).
import type { Logger } from '../../core/logger.js';
import { InvalidState } from '../../core/errors.js';
import { settledWithin } from '../../core/lifecycle.js';
import { topicFailureOf } from './errors.js';
import { loadClient, type KafkaClientAdapter, type OutgoingRecord } from './client/index.js';
import type { ResolvedKafkaOptions } from './options.js';

interface Queued {
  record: OutgoingRecord;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class KafkaConnection {
  private client?: Promise<KafkaClientAdapter>;
  private queue: Queued[] = [];
  private scheduled = false;
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;
  /** The client's state as its produce requests show it: `failing` after a failed one (the library reconnects). */
  private state: 'idle' | 'ready' | 'failing' = 'idle';

  constructor(
    private readonly options: ResolvedKafkaOptions,
    private readonly logger: Logger,
    /** The client id the brokers see (also recorded on the dead letters this transport writes). */
    readonly clientId: string,
    /** Told every failed load or produce request, for `transport.health()`. */
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** True once the client is loaded and its last produce request (if any) succeeded. */
  get isConnected(): boolean {
    return this.state === 'ready';
  }

  /** True after a failed produce request until one succeeds again (the client library reconnects). */
  get isFailing(): boolean {
    return this.state === 'failing';
  }

  /** The client adapter, loaded (and its library imported) on first use. */
  getClient(): Promise<KafkaClientAdapter> {
    if (this.closed) return Promise.reject(new InvalidState('The Kafka transport was cleaned up'));
    this.client ??= loadClient(this.options, this.logger, this.clientId).then(
      (client) => {
        if (this.state === 'idle') this.state = 'ready';
        return client;
      },
      (err: unknown) => {
        this.client = undefined;
        this.onError(err);
        throw err;
      },
    );
    return this.client;
  }

  /**
   * Produces one record; resolves once the broker acknowledged it (per `acks`). Records produced
   * in the same turn (or within `linger`) share a request: a notifier sending in a loop pays one
   * round trip per batch, not per record.
   */
  produce(record: OutgoingRecord): Promise<void> {
    if (this.closed) return Promise.reject(new InvalidState('The Kafka transport was cleaned up'));
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ record, resolve, reject });
      if (this.queue.length >= this.options.producerBatchSize) {
        this.flush();
      } else if (!this.scheduled) {
        this.scheduled = true;
        if (this.options.linger > 0) setTimeout(this.flush, this.options.linger);
        else setImmediate(this.flush);
      }
    });
  }

  /**
   * Produces one record in a request of its own, sent now. For a retry: a produce request fails
   * as a whole when one of its topics does (a reply topic the broker does not know fails every
   * reply coalesced with it), so a record that failed once must not share a request again.
   */
  produceAlone(record: OutgoingRecord): Promise<void> {
    if (this.closed) return Promise.reject(new InvalidState('The Kafka transport was cleaned up'));
    return new Promise<void>((resolve, reject) => this.send([{ record, resolve, reject }]));
  }

  /** Sends what is queued, in requests of at most `producerBatchSize` records. */
  private readonly flush = (): void => {
    this.scheduled = false;
    while (this.queue.length > 0) this.send(this.queue.splice(0, this.options.producerBatchSize));
  };

  /** Sends one produce request and settles its records. */
  private send(batch: Queued[]): void {
    const sending = this.getClient()
      .then((client) => client.send(batch.map((q) => q.record)))
      .then(
        () => {
          this.state = 'ready';
          batch.forEach((q) => q.resolve());
        },
        (err: unknown) => {
          // A topic the broker does not know or refuses (a forged call's reply topic) is not the client failing.
          if (topicFailureOf(err) === undefined) {
            if (this.client !== undefined) this.state = 'failing';
            this.onError(err);
          }
          batch.forEach((q) => q.reject(err));
        },
      );
    this.inFlight.add(sending);
    void sending.finally(() => this.inFlight.delete(sending));
  }

  /** Sends what is queued, waits for outstanding produce requests (up to `timeoutMs`), then closes the client. */
  async close(timeoutMs: number): Promise<void> {
    if (this.queue.length > 0) this.flush();
    this.closed = true;
    if (this.inFlight.size > 0) await settledWithin(this.inFlight, timeoutMs);
    const client = this.client;
    this.client = undefined;
    await client?.then((c) => c.close()).catch((err: unknown) => this.logger.debug('Closing the Kafka client failed', { err }));
  }
}
