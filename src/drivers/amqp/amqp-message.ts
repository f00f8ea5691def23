// Received messages of the RabbitMQ driver: RPC requests (acked on receipt, replies via the
// driver's publisher) and notifications (acked or requeued by the listener's decision).
import type { ConsumeMessage } from 'amqplib';
import { IncomingMessage, RpcIncomingMessage, type RpcReply } from '../../driver/incoming-message.js';
import { encodeReply, type ParsedRpcRequest } from '../../driver/wire.js';
import type { Context, DriverMessage } from '../../driver/types.js';
import type { Logger } from '../../logger.js';

/** Publishes an encoded reply body to a reply queue. MUST NOT throw. */
export type ReplySender = (replyQueue: string, msgId: string, body: string) => Promise<void>;

export class AmqpRpcIncomingMessage extends RpcIncomingMessage {
  readonly callMonitorTimeout?: number;
  readonly expectsReply: boolean;
  private replied = false;

  constructor(
    private readonly request: ParsedRpcRequest,
    private readonly raw: ConsumeMessage,
    private readonly send: ReplySender,
    private readonly logger: Logger,
  ) {
    super(request.ctx, request.message, request.uniqueId);
    this.expectsReply = request.msgId !== undefined && request.replyQueue !== undefined;
    this.callMonitorTimeout = request.callMonitorTimeout;
  }

  async reply(reply: RpcReply): Promise<void> {
    if (!this.expectsReply || this.replied) return;
    this.replied = true;
    await this.send(this.request.replyQueue!, this.request.msgId!, encodeReply(this.request.msgId!, reply, this.logger));
  }

  async heartbeat(): Promise<void> {
    if (!this.expectsReply || this.replied) return;
    await this.send(this.request.replyQueue!, this.request.msgId!, encodeReply(this.request.msgId!, 'heartbeat'));
  }

  /** RPC requests are acknowledged on receipt, before dispatch (oslo): nothing left to do. */
  async acknowledge(): Promise<void> {}

  /** oslo never requeues RPC requests; the request was already acknowledged. */
  async requeue(): Promise<void> {}

  override unwrap(): ConsumeMessage {
    return this.raw;
  }
}

/** What a notification message needs from its listener to settle itself. */
export interface NotificationSettler {
  ack(message: AmqpNotificationMessage): void;
  requeue(message: AmqpNotificationMessage): void;
}

export class AmqpNotificationMessage extends IncomingMessage {
  private settled = false;

  constructor(
    ctx: Context,
    message: DriverMessage,
    msgId: string | undefined,
    readonly raw: ConsumeMessage,
    /** `_unique_id` for duplicate suppression (recorded on ack). */
    readonly uniqueId: string | undefined,
    /** The listener channel generation the message came from. */
    readonly channelId: number,
    private readonly settler: NotificationSettler,
    private readonly logger: Logger,
  ) {
    super(ctx, message, msgId);
  }

  get isSettled(): boolean {
    return this.settled;
  }

  async acknowledge(): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    try {
      this.settler.ack(this);
    } catch (err) {
      this.logger.warn('Could not acknowledge a notification', { err });
    }
  }

  async requeue(): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    try {
      this.settler.requeue(this);
    } catch (err) {
      this.logger.warn('Could not requeue a notification', { err });
    }
  }

  override unwrap(): ConsumeMessage {
    return this.raw;
  }
}
