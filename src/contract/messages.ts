// The concrete received messages every driver hands to the façades: an RPC request that replies
// once, and a notification that settles once. A driver supplies only its delivery handle, a
// reply sender and (through the inbound pipeline) a settler.
import type { Logger } from '../core/logger.js';
import { IncomingMessage, RpcIncomingMessage, type RpcReply } from './incoming-message.js';
import type { ReceivedNotification, RpcRequest } from './types.js';
import { encodeReply, type ParsedNotification, type ParsedRpcRequest } from './wire.js';

/**
 * Publishes an encoded reply body to a caller's reply address. MUST NOT throw or reject: a
 * reply that cannot be delivered is logged by the driver (the caller times out). SHOULD settle
 * without waiting out retries: the server's executor slot is held until it does, so a reply that
 * failed is retried in the background (bounded, and abandoned at cleanup).
 */
export interface ReplySender {
  /** Publishes `body` (an encoded reply to call `msgId`) to `replyQueue`. */
  sendReply(replyQueue: string, msgId: string, body: string): Promise<void> | void;
  /**
   * True when `address` is shaped like the reply addresses this driver creates (see
   * `BaseDriver.isReplyAddress`). A call with any other `_reply_q` is dropped before dispatch.
   */
  isReplyAddress(address: string): boolean;
  /** The driver's `maxMessageBytes`: a larger reply is replaced by an InvalidArgument failure reply. */
  readonly maxMessageBytes?: number;
  /**
   * True: replies go without oslo's 2.0 envelope (oslo's 1.0 form, the inner message itself), for
   * a driver no Python oslo reads (Redis). Every tidings reader takes both forms.
   */
  readonly bareReplies?: boolean;
}

/** An RPC request, acknowledged on receipt by the inbound pipeline (at-most-once, as oslo). */
export class RpcMessage<D = unknown> extends RpcIncomingMessage {
  readonly request: RpcRequest;
  readonly callMonitorTimeout?: number;
  readonly expectsReply: boolean;
  private readonly msgIdOfCall?: string;
  private readonly replyQueue?: string;
  private replied = false;

  constructor(
    parsed: ParsedRpcRequest,
    private readonly delivery: D,
    private readonly replies: ReplySender,
    private readonly logger: Logger,
    deliveryCount = 1,
  ) {
    super(parsed.ctx, parsed.uniqueId, deliveryCount);
    this.request = parsed.request;
    this.msgIdOfCall = parsed.msgId;
    this.replyQueue = parsed.replyQueue;
    this.expectsReply = parsed.msgId !== undefined && parsed.replyQueue !== undefined;
    this.callMonitorTimeout = parsed.callMonitorTimeout;
  }

  override get callId(): string | undefined {
    return this.msgIdOfCall;
  }

  override get replyAddress(): string | undefined {
    return this.replyQueue;
  }

  /** Not async itself: the reply sender's promise passes straight through (a throw becomes a rejection). */
  reply(reply: RpcReply): Promise<void> {
    if (!this.expectsReply) return Promise.resolve();
    if (this.replied) {
      this.logger.warn('A second final reply to the same call was ignored', { msgId: this.msgIdOfCall });
      return Promise.resolve();
    }
    this.replied = true;
    const msgId = this.msgIdOfCall!;
    try {
      // Promise.resolve hands a native promise back as it is.
      return Promise.resolve(this.replies.sendReply(this.replyQueue!, msgId, encodeReply(msgId, reply, this.logger, this.replies.maxMessageBytes, this.replies.bareReplies)));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async heartbeat(): Promise<void> {
    if (!this.expectsReply || this.replied) return;
    const msgId = this.msgIdOfCall!;
    await this.replies.sendReply(this.replyQueue!, msgId, encodeReply(msgId, 'heartbeat', undefined, undefined, this.replies.bareReplies));
  }

  /** Already acknowledged on receipt: nothing to do. */
  async acknowledge(): Promise<void> {}

  /** oslo never requeues RPC requests; this one was acknowledged on receipt. */
  async requeue(): Promise<void> {
    this.logger.debug('RPC requests are acknowledged on receipt; requeue ignored', { msgId: this.msgIdOfCall });
  }

  override unwrap(): D {
    return this.delivery;
  }
}

/** Where a NotificationMessage settles: the inbound pipeline that made it (`NotificationInbound`). */
export interface NotificationSettler<D> {
  /** Acknowledges the delivery. */
  acknowledge(message: NotificationMessage<D>): void;
  /** Returns it to the broker (or drops it where the driver cannot requeue). */
  requeue(message: NotificationMessage<D>, reason?: unknown): void;
}

/** A notification, acknowledged or requeued once by the listener's outcome. */
export class NotificationMessage<D = unknown> extends IncomingMessage {
  readonly notification: ReceivedNotification;
  /** `_unique_id`, remembered for duplicate suppression once acknowledged. */
  readonly uniqueId?: string;
  private settled = false;

  constructor(
    parsed: ParsedNotification,
    /** The driver's delivery handle. */
    readonly delivery: D,
    /** The subscription (channel) it came from, as the driver gave it. */
    readonly generation: number,
    private readonly inbound: NotificationSettler<D>,
    deliveryCount = 1,
  ) {
    super(parsed.ctx, parsed.messageId, deliveryCount);
    this.notification = parsed.notification;
    this.uniqueId = parsed.uniqueId;
  }

  async acknowledge(): Promise<void> {
    this.settle(false);
  }

  async requeue(reason?: unknown): Promise<void> {
    this.settle(true, reason);
  }

  /**
   * @internal `acknowledge()` or `requeue(reason)` done at once, without a promise: the
   * listener's per-notification path settles through it (settling never waits for the broker).
   */
  settle(requeue: boolean, reason?: unknown): void {
    if (this.settled) return;
    this.settled = true;
    if (requeue) this.inbound.requeue(this, reason);
    else this.inbound.acknowledge(this);
  }

  /** @internal Marks it settled without telling the broker; true for the first call. */
  abandon(): boolean {
    if (this.settled) return false;
    this.settled = true;
    return true;
  }

  override unwrap(): D {
    return this.delivery;
  }
}
