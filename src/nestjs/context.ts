// What a NestJS handler gets from tidings through `@Ctx()` (TidingsContext), and what a NestJS
// caller can hand `send()`/`emit()` to say more than the data (TidingsRecord, as NestJS' RmqRecord).
import { BaseRpcContext } from '@nestjs/microservices';
import type { Context, NotificationBatchItem, NotificationEventMetadata, Priority, RpcMeta } from '../index.js';

/**
 * The `@Ctx()` of handlers served by ServerTidings (NestJS' RmqContext, for tidings). For an
 * `@MessagePattern` handler `getContext()` is the caller's request context (oslo's `ctxt`) and
 * `getMetadata()` the RpcMeta (message id, method, namespace, version, signal, `unwrap()`); for an
 * `@EventPattern` handler they are the notification's context and NotificationEventMetadata
 * (event type, publisher, priority, redelivery, signal, `unwrap()`).
 */
export class TidingsContext<Meta extends RpcMeta | NotificationEventMetadata = RpcMeta | NotificationEventMetadata> extends BaseRpcContext<
  [ctx: Context, meta: Meta, pattern: string, batch?: readonly NotificationBatchItem<Context>[]]
> {
  /** The request or notification context, as the sender gave it (after the server's serializer). */
  getContext(): Context {
    return this.args[0];
  }

  /** RpcMeta for a request, NotificationEventMetadata for a notification. */
  getMetadata(): Meta {
    return this.args[1];
  }

  /** The handler's pattern: the RPC method name, or the event-type glob it was registered with. */
  getPattern(): string {
    return this.args[2];
  }

  /** True for a notification (an `@EventPattern` handler), false for an RPC request. */
  isEvent(): boolean {
    return 'eventType' in this.args[1];
  }

  /** The notification's event type (`compute.instance.create.end`); undefined for an RPC request. */
  getEventType(): string | undefined {
    return (this.args[1] as Partial<NotificationEventMetadata>).eventType;
  }

  /** The notification's publisher id (null when it sent none); undefined for an RPC request. */
  getPublisherId(): string | null | undefined {
    return (this.args[1] as Partial<NotificationEventMetadata>).publisherId;
  }

  /** The notification's priority, lower-case; undefined for an RPC request. */
  getPriority(): string | undefined {
    return this.isEvent() ? (this.args[1] as NotificationEventMetadata).priority : undefined;
  }

  /** Aborts when the handler runs past the server's or listener's `handlerTimeout`. */
  getSignal(): AbortSignal {
    return this.args[1].signal;
  }

  /** A batch handler's notifications (context, publisher, event type, payload, metadata each); undefined otherwise. */
  getBatch(): readonly NotificationBatchItem<Context>[] | undefined {
    return this.args[3];
  }
}

/** Per-message options of ClientTidings' `send()` and `emit()`: what the data alone cannot say. */
export interface TidingsRecordOptions {
  /** The request or notification context (oslo's `ctxt`: user, project, request id). @default the client's `context()`, else {} */
  ctx?: Context;
  /** `send()`: this call's reply deadline, ms. @default the client's `timeout` */
  timeout?: number;
  /** `send()` and casts: one server of the topic (a direct call). @default the client's `server` */
  server?: string;
  /** `send()` and casts: the version asked for. @default the client's `version` */
  version?: string;
  /** `send()` and casts: the endpoint namespace. @default the client's `namespace` */
  namespace?: string;
  /** Casts: every server of the topic gets it. @default false */
  fanout?: boolean;
  /** `emit()` as a notification: its priority. @default the client's `priority` ('info') */
  priority?: Priority;
}

/**
 * Data plus per-message options, as NestJS' RmqRecord:
 * `client.send('add', new TidingsRecord({ a: 1, b: 2 }, { ctx: { user_id: 'u1' }, timeout: 5000 }))`.
 */
export class TidingsRecord<TData = unknown> {
  constructor(
    /** The RPC args (a plain object) or the notification payload. */
    readonly data: TData,
    /** What else to send: context, deadline, server, version, priority. */
    readonly options: TidingsRecordOptions = {},
  ) {}
}
