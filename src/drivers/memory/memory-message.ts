// Messages the memory:// listeners hand to the façades: RPC requests (acked on receipt, replies
// routed back through the broker) and notifications (ack / requeue on the broker).
import type { DuplicateMessageChecker } from '../../driver/dedup.js';
import { IncomingMessage, RpcIncomingMessage, type RpcReply } from '../../driver/incoming-message.js';
import type { Context, DriverMessage } from '../../driver/types.js';
import { encodeReply, type ParsedRpcRequest } from '../../driver/wire.js';
import type { Logger } from '../../logger.js';
import type { MemoryConsumer, MemoryDelivery } from './memory-broker.js';

/** The driver side that publishes encoded replies; it MUST NOT throw. */
export interface ReplySender {
  sendReply(replyQueue: string, msgId: string, body: string): void;
}

/** An RPC request from memory://. Acknowledged by the listener on receipt (at-most-once, as oslo). */
export class MemoryRpcIncomingMessage extends RpcIncomingMessage {
  readonly callMonitorTimeout?: number;
  readonly expectsReply: boolean;
  private replied = false;

  constructor(
    ctx: Context,
    message: DriverMessage,
    uniqueId: string | undefined,
    private readonly delivery: MemoryDelivery,
    private readonly request: Pick<ParsedRpcRequest, 'msgId' | 'replyQueue' | 'callMonitorTimeout'>,
    private readonly replier: ReplySender,
    private readonly logger: Logger,
  ) {
    super(ctx, message, uniqueId);
    this.expectsReply = request.msgId !== undefined && request.replyQueue !== undefined;
    this.callMonitorTimeout = request.callMonitorTimeout;
  }

  /** Already acknowledged on receipt; nothing to do. */
  async acknowledge(): Promise<void> {}

  /** RPC requests are acknowledged on receipt, so there is nothing to give back. */
  async requeue(): Promise<void> {
    this.logger.debug('RPC requests are acknowledged on receipt; requeue ignored', { msgId: this.request.msgId });
  }

  async reply(reply: RpcReply): Promise<void> {
    if (!this.expectsReply) return;
    if (this.replied) {
      this.logger.warn('a second final reply to the same call was ignored', { msgId: this.request.msgId });
      return;
    }
    this.replied = true;
    this.replier.sendReply(this.request.replyQueue!, this.request.msgId!, encodeReply(this.request.msgId!, reply, this.logger));
  }

  async heartbeat(): Promise<void> {
    if (!this.expectsReply || this.replied) return;
    this.replier.sendReply(this.request.replyQueue!, this.request.msgId!, encodeReply(this.request.msgId!, 'heartbeat'));
  }

  override unwrap(): MemoryDelivery {
    return this.delivery;
  }
}

/** A notification from memory://: acked or requeued on the broker by the handler's outcome. */
export class MemoryNotificationMessage extends IncomingMessage {
  private settled = false;

  constructor(
    ctx: Context,
    message: DriverMessage,
    msgId: string | undefined,
    private readonly delivery: MemoryDelivery,
    private readonly consumer: MemoryConsumer,
    /** `_unique_id`, recorded as seen only on acknowledge (a requeued message is no duplicate). */
    private readonly uniqueId: string | undefined,
    private readonly dedup: DuplicateMessageChecker,
    private readonly logger: Logger,
  ) {
    super(ctx, message, msgId);
  }

  async acknowledge(): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    if (this.uniqueId !== undefined) this.dedup.add(this.uniqueId);
    if (!this.consumer.ack(this.delivery.deliveryTag)) {
      this.logger.debug('ack of a notification whose consumer is closed ignored (it was requeued)', { queue: this.delivery.queue });
    }
  }

  async requeue(): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    if (!this.consumer.reject(this.delivery.deliveryTag, true)) {
      this.logger.debug('requeue of a notification whose consumer is closed ignored (it was requeued)', { queue: this.delivery.queue });
    }
  }

  override unwrap(): MemoryDelivery {
    return this.delivery;
  }
}
