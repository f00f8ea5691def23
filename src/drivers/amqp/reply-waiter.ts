// The caller side of RPC on RabbitMQ: one `reply_<hex>` queue per transport with one consumer
// (oslo amqpdriver.py ReplyWaiter); replies go to the transport's calls (BaseDriver.replies).
import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { newReplyAddress } from '../../contract/addressing.js';
import type { CallRegistry } from '../../contract/pending-replies.js';
import type { Logger } from '../../core/logger.js';
import type { AmqpConnection } from './connection.js';
import { toMessagingError } from './errors.js';
import type { ResolvedAmqpOptions } from './options.js';
import { readBody } from './compression.js';
import { consumerArguments, transientQueue } from './topology.js';

export class ReplyWaiter {
  /** Where a malformed reply came from, for its log line (one object, not one per reply). */
  private readonly logFields: Readonly<{ queue: string }>;
  private channel?: Channel;
  private channelGeneration = -1;
  private settingUp?: Promise<void>;
  private removeHook?: () => void;
  private closed = false;

  constructor(
    private readonly conn: AmqpConnection,
    private readonly options: ResolvedAmqpOptions,
    private readonly logger: Logger,
    private readonly calls: CallRegistry,
    /** Created once, reused for the transport's lifetime (oslo `reply_<uuid hex>`, or the queue manager's name). */
    readonly queue: string = newReplyAddress(),
  ) {
    this.logFields = Object.freeze({ queue });
  }

  /**
   * Makes sure the reply queue exists and is consumed on the current connection. Calls MUST
   * await it before publishing, so that after a reconnect the consumer is back first.
   */
  readonly ensureConsuming = (): Promise<void> => {
    if (this.isConsuming()) return Promise.resolve();
    this.removeHook ??= this.conn.addOpenHook((model, generation) => this.setup(model, generation).catch((err) => this.logger.error('Could not restore the reply consumer', { queue: this.queue, err })));
    this.settingUp ??= (async () => {
      try {
        const model = await this.conn.ensureOpen();
        const generation = this.conn.current?.generation ?? -1;
        if (!(this.channel && this.channelGeneration === generation)) await this.setup(model, generation);
      } finally {
        this.settingUp = undefined;
      }
    })();
    return this.settingUp;
  };

  /** True when the reply queue is consumed on the current connection (`ensureConsuming` has nothing to do). */
  readonly isConsuming = (): boolean => {
    const generation = this.conn.openGeneration;
    return generation !== undefined && this.channel !== undefined && this.channelGeneration === generation;
  };

  /** Cancels the consumer (BaseDriver.cleanup fails the calls still waiting). */
  async close(): Promise<void> {
    this.closed = true;
    this.removeHook?.();
    const ch = this.channel;
    this.channel = undefined;
    // The queue is left to its x-expires, as oslo does: deleting it would make servers still
    // answering our calls retry their replies for missing_consumer_retry_timeout (60 s).
    if (ch) await this.conn.teardown(() => ch.close());
  }

  private async setup(model: ChannelModel, generation: number): Promise<void> {
    if (this.closed) return;
    let ch: Channel;
    try {
      ch = await model.createChannel();
      ch.on('error', (err: Error) => this.logger.warn('AMQP reply channel error', { queue: this.queue, err }));
      ch.on('close', () => this.onChannelClosed(ch));
      const q = transientQueue(this.queue, this.options);
      await ch.assertQueue(q.name, q.options);
      await ch.consume(q.name, (m) => this.onMessage(ch, m), { noAck: false, ...consumerArguments(this.options) });
    } catch (err) {
      throw toMessagingError(err, `Could not consume the reply queue ${this.queue}`);
    }
    this.channel = ch;
    this.channelGeneration = generation;
    this.logger.debug('Consuming replies', { queue: this.queue, generation });
  }

  /** A channel closed while its connection lives (e.g. queue deleted): consume again. */
  private onChannelClosed(ch: Channel): void {
    if (this.channel !== ch) return;
    this.channel = undefined;
    if (this.closed || !this.conn.isOpen) return;
    setTimeout(() => {
      if (!this.closed && this.conn.isOpen && !this.channel) this.ensureConsuming().catch((err) => this.logger.error('Could not re-consume the reply queue', { queue: this.queue, err }));
    }, 100).unref?.();
  }

  private onMessage(ch: Channel, raw: ConsumeMessage | null): void {
    if (raw === null) {
      // Cancelled by the broker (queue deleted): consume again on a fresh channel.
      this.logger.warn('Reply consumer cancelled by the broker; re-declaring', { queue: this.queue });
      ch.close().catch(() => undefined);
      return;
    }
    try {
      ch.ack(raw);
    } catch {
      // channel closing: the reply is redelivered or lost with it
    }
    let body: Buffer;
    try {
      body = readBody(raw.content, raw.properties, this.options.maxMessageBytes);
    } catch (err) {
      this.logger.warn('Dropping a malformed reply', { ...this.logFields, bytes: raw.content.length, reason: (err as Error).message });
      return;
    }
    this.calls.acceptBody(body, this.logFields);
  }
}
