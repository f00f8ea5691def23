// The caller side of RPC: one `reply_<hex>` queue per transport with one consumer, replies
// routed to waiting calls by `_msg_id` (oslo amqpdriver.py ReplyWaiter).
import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { decodeBody } from '../../driver/envelope.js';
import { deserializeRemoteError, type RemoteErrorRegistry } from '../../driver/remote-error.js';
import { AbortError, MessagingTimeout } from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { AmqpConnection } from './connection.js';
import { toMessagingError } from './errors.js';
import type { ResolvedAmqpOptions } from './options.js';
import { replyQueueName, transientQueue } from './topology.js';

export interface WaitOptions {
  /** Overall deadline, ms; undefined = none. */
  timeout?: number;
  /** Call-monitor window, ms: restarted by each heartbeat. */
  callMonitorTimeout?: number;
  signal?: AbortSignal;
  /** Why the request has not reached the broker yet, if it has not: a timeout then says so. */
  undelivered?: () => unknown;
}

interface PendingCall {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  result: unknown;
  timer?: ReturnType<typeof setTimeout>;
  monitor?: ReturnType<typeof setTimeout>;
  monitorMs?: number;
  signal?: AbortSignal;
  onAbort?: () => void;
  undelivered?: () => unknown;
}

export class ReplyWaiter {
  /** Created once, reused for the transport's lifetime (oslo `reply_<uuid hex>`). */
  readonly queue = replyQueueName();
  private channel?: Channel;
  private channelGeneration = -1;
  private settingUp?: Promise<void>;
  private removeHook?: () => void;
  private closed = false;
  private readonly calls = new Map<string, PendingCall>();

  constructor(
    private readonly conn: AmqpConnection,
    private readonly options: ResolvedAmqpOptions,
    private readonly logger: Logger,
    private readonly allowedRemoteExmods: readonly string[],
    private readonly remoteErrors: RemoteErrorRegistry,
  ) {}

  /** Calls waiting for a reply. */
  get size(): number {
    return this.calls.size;
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
    const cur = this.conn.current;
    return cur !== undefined && this.channel !== undefined && this.channelGeneration === cur.generation;
  };

  /** True while the call `msgId` waits for its outcome. */
  isWaiting(msgId: string): boolean {
    return this.calls.has(msgId);
  }

  /** Registers a call before its request is published; resolves with the final result. */
  wait(msgId: string, opts: WaitOptions): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      const call: PendingCall = { resolve, reject, result: null, undelivered: opts.undelivered };
      if (opts.timeout !== undefined) {
        call.timer = setTimeout(() => this.finish(msgId, timeoutError(`Timed out waiting for a reply to message ID ${msgId}`, call)), opts.timeout);
      }
      if (opts.callMonitorTimeout !== undefined) {
        call.monitorMs = opts.callMonitorTimeout;
        call.monitor = setTimeout(() => this.onMonitorExpired(msgId), opts.callMonitorTimeout);
      }
      if (opts.signal?.aborted) return reject(new AbortError('The call was aborted', { cause: opts.signal.reason }));
      if (opts.signal) {
        call.signal = opts.signal;
        call.onAbort = () => this.finish(msgId, new AbortError('The call was aborted', { cause: opts.signal?.reason }));
        opts.signal.addEventListener('abort', call.onAbort, { once: true });
      }
      this.calls.set(msgId, call);
    });
  }

  /** Ends a waiting call with an error (e.g. its request could not be published). */
  fail(msgId: string, err: Error): void {
    this.finish(msgId, err);
  }

  /** Rejects every waiting call and cancels the consumer. */
  async close(err: Error): Promise<void> {
    this.closed = true;
    this.removeHook?.();
    for (const id of [...this.calls.keys()]) this.finish(id, err);
    const ch = this.channel;
    this.channel = undefined;
    // The queue is left to its x-expires, as oslo does: deleting it would make servers still
    // answering our calls retry their replies for missing_consumer_retry_timeout (60 s).
    if (ch) await ch.close().catch(() => undefined);
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
      await ch.consume(q.name, (m) => this.onMessage(ch, m), { noAck: false, ...this.consumeArgs() });
    } catch (err) {
      throw toMessagingError(err, `Could not consume the reply queue ${this.queue}`);
    }
    this.channel = ch;
    this.channelGeneration = generation;
    this.logger.debug('Consuming replies', { queue: this.queue, generation });
  }

  private consumeArgs(): { arguments?: Record<string, unknown> } {
    return this.options.enableCancelOnFailover ? { arguments: { 'x-cancel-on-ha-failover': true } } : {};
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
    let data: Record<string, unknown>;
    try {
      data = decodeBody(raw.content);
    } catch (err) {
      this.logger.warn('Dropping a malformed reply', { queue: this.queue, err });
      return;
    }
    const msgId = data._msg_id;
    const call = typeof msgId === 'string' ? this.calls.get(msgId) : undefined;
    if (!call) {
      this.logger.debug('No calling threads waiting for msg_id', { msgId });
      return;
    }
    const id = msgId as string;
    const failure = data.failure;
    const ending = data.ending === true;
    if (failure !== null && failure !== undefined && failure !== '' && failure !== false) {
      const err = deserializeRemoteError(failure, this.allowedRemoteExmods, this.remoteErrors);
      if (ending) return this.finish(id, err);
      call.result = err;
      return;
    }
    const result = data.result ?? null;
    if (result !== null) call.result = result;
    if (ending) {
      if (call.result instanceof Error) return this.finish(id, call.result);
      return this.finish(id, undefined, call.result);
    }
    if (result === null && call.monitor) {
      // A call-monitor heartbeat: the server is still working on it.
      clearTimeout(call.monitor);
      call.monitor = setTimeout(() => this.onMonitorExpired(id), call.monitorMs);
    }
  }

  private onMonitorExpired(msgId: string): void {
    const call = this.calls.get(msgId);
    if (call) this.finish(msgId, timeoutError(`Timed out waiting for a reply to message ID ${msgId}: no call-monitor heartbeat in time`, call));
  }

  private finish(msgId: string, err?: Error, value?: unknown): void {
    const call = this.calls.get(msgId);
    if (!call) return;
    this.calls.delete(msgId);
    if (call.timer) clearTimeout(call.timer);
    if (call.monitor) clearTimeout(call.monitor);
    if (call.onAbort) call.signal?.removeEventListener('abort', call.onAbort);
    if (err) call.reject(err);
    else call.resolve(value);
  }
}

/** A call's timeout; when its request never reached the broker, it says why. */
function timeoutError(message: string, call: PendingCall): MessagingTimeout {
  const undelivered = call.undelivered?.();
  if (undelivered === undefined) return new MessagingTimeout(message);
  const why = undelivered instanceof Error ? undelivered.message : String(undelivered);
  return new MessagingTimeout(`${message}; the request never reached the broker: ${why}`, { cause: undelivered });
}
