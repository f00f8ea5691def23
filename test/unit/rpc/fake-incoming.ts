// A driver-free RpcIncomingMessage for dispatcher tests: records replies and heartbeats.
import { RpcIncomingMessage, type RpcReply } from '../../../src/contract/incoming-message.js';
import type { Context, DriverMessage, RpcRequest } from '../../../src/contract/types.js';
import { parseRpcRequest } from '../../../src/contract/wire.js';

export class FakeRpcIncoming extends RpcIncomingMessage {
  readonly replies: RpcReply[] = [];
  heartbeats = 0;
  acknowledged = 0;

  readonly request: RpcRequest;

  constructor(
    ctx: Context,
    message: DriverMessage,
    readonly expectsReply = true,
    readonly callMonitorTimeout?: number,
    private readonly raw: unknown = { raw: true },
  ) {
    super(ctx, 'id-' + Math.random().toString(16).slice(2));
    // The driver seam validates requests; a test request that would not pass it fails here.
    this.request = parseRpcRequest(message).request;
  }

  async acknowledge(): Promise<void> {
    this.acknowledged++;
  }
  async requeue(): Promise<void> {}
  async reply(reply: RpcReply): Promise<void> {
    this.replies.push(reply);
  }
  async heartbeat(): Promise<void> {
    this.heartbeats++;
  }
  override unwrap(): unknown {
    return this.raw;
  }
}

/** A request message as the driver hands it over. */
export function request(method: unknown, args: unknown = {}, extra: Record<string, unknown> = {}): DriverMessage {
  return { method, args, ...extra };
}
