// ClientTidings: a NestJS ClientProxy over tidings. `send()` is an RPC call (one reply, a deadline,
// typed remote errors), `emit()` a notification or, by option, a cast. Registered like NestJS' own
// clients: `ClientsModule.register([{ name: 'CALC', customClass: ClientTidings, options }])`.
import { ClientProxy, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import {
  InvalidArgument,
  Notifier,
  getNotificationTransport,
  getRpcClient,
  getRpcTransport,
  PRIORITIES,
  type Context,
  type NotifierOptions,
  type Priority,
  type RpcClient,
  type RpcClientOptions,
  type Transport,
  type TransportOptions,
} from '../index.js';
import { TidingsRecord, type TidingsRecordOptions } from './context.js';
import { fromFailure } from './errors.js';

/** Options of `new ClientTidings()`: the `options` of a `ClientsModule` entry with `customClass: ClientTidings`. */
export interface TidingsClientOptions {
  /** The transport URL (memory://, rabbit://, redis://, kafka://). @default $TIDINGS_TRANSPORT_URL, else memory:// */
  url?: string;
  /** Options of the transports opened from `url` (allowed remote error modules, the error registry, logger, middleware). */
  transportOptions?: TransportOptions;
  /** An RPC transport to use instead of opening one from `url`; `close()` leaves it open. */
  rpcTransport?: Transport;
  /** A notification transport to use instead of opening one from `url`; `close()` leaves it open. */
  notificationTransport?: Transport;
  /** The RPC topic `send()` (and casts) go to. Required for `send()`. */
  topic?: string;
  /** One server of the topic (direct calls). @default undefined (any server of the topic) */
  server?: string;
  /** The exchange. @default the transport's control exchange */
  exchange?: string;
  /** The version asked for. @default undefined ('1.0' on the wire) */
  version?: string;
  /** The endpoint namespace. @default undefined (the default namespace) */
  namespace?: string;
  /** Reply deadline of `send()`, ms. @default 60000 (RPC_CLIENT_DEFAULTS.timeout) */
  timeout?: number;
  /** Other RpcClient options (retry, versionCap, callMonitorTimeout, serializer, middleware, contract). */
  rpc?: Omit<RpcClientOptions, 'timeout'>;
  /** What `emit()` sends: a notification (to `@EventPattern` handlers) or a cast (to the `@MessagePattern` / oslo method of that name). @default 'notify' */
  emitAs?: 'notify' | 'cast';
  /** The notifier of `emit()`: topics, publisherId, driver. @default topics ['notifications'], publisherId the host name */
  notifier?: NotifierOptions;
  /** Priority of `emit()` notifications. @default 'info' */
  priority?: Priority;
  /** The context sent when a message carries none (a TidingsRecord's `ctx` wins). @default {} */
  context?: () => Context;
}

/** What `ClientTidings.unwrap()` gives: the tidings objects behind `send()` and `emit()`. */
export interface TidingsClientParts {
  /** The RpcClient of `send()` and casts; undefined before `connect()` or without a `topic`. */
  rpcClient: RpcClient | undefined;
  /** The Notifier of `emit()`; undefined before `connect()` or with `emitAs: 'cast'`. */
  notifier: Notifier | undefined;
}

const EMIT_AS = ['notify', 'cast'] as const;

function isPriority(value: unknown): value is Priority {
  return (PRIORITIES as readonly unknown[]).includes(value);
}

/**
 * A NestJS client over tidings. `send(pattern, data)` calls the RPC method `pattern` with `data`
 * (a plain object: the keyword arguments) and emits its one reply; unsubscribing abandons the wait.
 * `emit(pattern, data)` sends the notification `pattern` with payload `data`, or casts.
 * Wrap data in a TidingsRecord to give a context, a deadline, a server or a priority.
 */
export class ClientTidings extends ClientProxy {
  private readonly options: TidingsClientOptions;
  private readonly emitAs: 'notify' | 'cast';
  private connecting?: Promise<void>;
  private rpcClient?: RpcClient;
  private notifier?: Notifier;
  private readonly opened: Transport[] = [];

  constructor(options: TidingsClientOptions = {}) {
    super();
    if (options === null || typeof options !== 'object') throw new InvalidArgument('options', 'an object', options);
    this.options = options;
    this.emitAs = options.emitAs ?? 'notify';
    if (!EMIT_AS.includes(this.emitAs)) throw new InvalidArgument('emitAs', "'notify' or 'cast'", options.emitAs);
    if (options.topic !== undefined && (typeof options.topic !== 'string' || options.topic.length === 0)) throw new InvalidArgument('topic', 'a non-empty topic name', options.topic);
    if (options.priority !== undefined && !isPriority(options.priority)) throw new InvalidArgument('priority', 'a notification priority', options.priority);
    if (options.context !== undefined && typeof options.context !== 'function') throw new InvalidArgument('context', 'a function returning the context', options.context);
  }

  /** Opens the transports (once; NestJS calls it before every send and emit). Rejects with the transport's error. */
  connect(): Promise<void> {
    this.connecting ??= this.open().then(
      () => this._status$.next('connected'),
      (error: unknown) => {
        this.connecting = undefined;
        throw error;
      },
    );
    return this.connecting;
  }

  /** Closes the transports this client opened (pending calls fail instead of hanging). */
  async close(): Promise<void> {
    const opened = this.opened.splice(0);
    this.connecting = undefined;
    this.rpcClient = undefined;
    this.notifier = undefined;
    await Promise.allSettled(opened.map((t) => t.cleanup()));
    this._status$.next('disconnected');
  }

  /** The tidings objects: `{ rpcClient, notifier }` (undefined until connected / not needed). */
  unwrap<T = TidingsClientParts>(): T {
    return { rpcClient: this.rpcClient, notifier: this.notifier } as T;
  }

  /** tidings' transports have no connection events for NestJS to subscribe to; use `unwrap()` and the transport's health(). */
  override on(): void {}

  /** `send()`'s work: one call, its reply or error handed to NestJS' observer; the teardown abandons the wait. */
  protected publish(packet: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    const controller = new AbortController();
    try {
      const { data, options } = split(packet.data);
      const method = this.normalizePattern(packet.pattern);
      const client = this.prepared(this.requireRpc(), options);
      const args = checkArgs(data);
      const timeout = options.timeout;
      client.call(this.contextOf(options), method, args, { signal: controller.signal, ...(timeout !== undefined ? { timeout } : {}) }).then(
        (response) => callback({ response, isDisposed: true }),
        (error: unknown) => {
          if (!controller.signal.aborted) callback({ err: fromFailure(error) });
        },
      );
    } catch (error) {
      callback({ err: error });
    }
    // Unsubscribing abandons the wait for the reply (the request itself was sent).
    return () => controller.abort();
  }

  /** `emit()`'s work: a notification (or a cast); resolves once the broker accepted it. */
  protected async dispatchEvent<T = unknown>(packet: ReadPacket): Promise<T> {
    const { data, options } = split(packet.data);
    const pattern = this.normalizePattern(packet.pattern);
    const ctx = this.contextOf(options);
    if (this.emitAs === 'cast') {
      await this.prepared(this.requireRpc(), options).cast(ctx, pattern, checkArgs(data));
    } else {
      const notifier = this.notifier;
      if (!notifier) throw new InvalidArgument('emit', 'a connected client', undefined);
      const priority = options.priority ?? this.options.priority ?? 'info';
      if (!isPriority(priority)) throw new InvalidArgument('priority', 'a notification priority', priority);
      await notifier[priority](ctx, pattern, data);
    }
    return undefined as T;
  }

  private async open(): Promise<void> {
    const o = this.options;
    if (o.topic !== undefined) {
      const transport = o.rpcTransport ?? (await this.track(getRpcTransport(o.url, o.transportOptions)));
      this.rpcClient = getRpcClient(transport, { topic: o.topic, server: o.server, exchange: o.exchange, version: o.version, namespace: o.namespace }, { ...o.rpc, timeout: o.timeout });
    }
    if (this.emitAs === 'notify') {
      const transport = o.notificationTransport ?? (await this.track(getNotificationTransport(o.url, o.transportOptions)));
      this.notifier = new Notifier(transport, o.notifier);
    }
  }

  private async track(opening: Promise<Transport>): Promise<Transport> {
    const transport = await opening;
    this.opened.push(transport);
    return transport;
  }

  private requireRpc(): RpcClient {
    if (!this.rpcClient) throw new InvalidArgument('topic', 'the RPC topic in the ClientTidings options (send() and casts need one)', this.options.topic);
    return this.rpcClient;
  }

  private prepared(client: RpcClient, options: TidingsRecordOptions): RpcClient {
    const { server, version, namespace, fanout } = options;
    if (server === undefined && version === undefined && namespace === undefined && fanout === undefined) return client;
    return client.prepare({ server, version, namespace, fanout });
  }

  private contextOf(options: TidingsRecordOptions): Context {
    return options.ctx ?? this.options.context?.() ?? {};
  }
}

function split(data: unknown): { data: unknown; options: TidingsRecordOptions } {
  return data instanceof TidingsRecord ? { data: data.data, options: data.options ?? {} } : { data, options: {} };
}

/** RPC args are keyword arguments: a plain object (oslo's kwargs). */
function checkArgs(data: unknown): Record<string, unknown> {
  const proto = data !== null && typeof data === 'object' ? Object.getPrototypeOf(data) : undefined;
  if (proto !== Object.prototype && proto !== null) {
    throw new InvalidArgument('data', 'a plain object of keyword arguments (oslo RPC args), e.g. { a: 1, b: 2 }', data);
  }
  return data as Record<string, unknown>;
}
