// ServerTidings: a NestJS custom transport strategy. `@MessagePattern` handlers become the methods
// of one tidings RpcServer; `@EventPattern` handlers become `on()` routes (or batch endpoints) of
// notification listeners, one per pool and option set. NestJS' filters, guards, pipes and
// interceptors wrap each handler before it gets here, exactly as on NestJS' own transports.
import { hostname } from 'node:os';
import { Server, type CustomTransportStrategy, type MessageHandler } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import {
  InvalidArgument,
  LegacyRpcAccessPolicy,
  NotificationFilter,
  NotificationResult,
  PRIORITIES,
  Target,
  eventMetadataOf,
  eventTypeGlob,
  expectedExceptions,
  getBatchNotificationListener,
  getNotificationListener,
  getNotificationTransport,
  getRpcServer,
  getRpcTransport,
  type Context,
  type NotificationBatchItem,
  type NotificationEventMetadata,
  type NotificationHandlerResult,
  type NotificationListener,
  type NotificationListenerOptions,
  type Priority,
  type RpcMeta,
  type RpcServer,
  type RpcServerOptions,
  type Transport,
  type TransportOptions,
} from '../index.js';
import { TidingsContext } from './context.js';
import { RpcExceptionFailure, toFailure } from './errors.js';

/**
 * The transport id of ServerTidings: `@MessagePattern('add', TIDINGS_TRANSPORT)` binds a handler
 * to tidings only, in a hybrid application with several transports.
 */
export const TIDINGS_TRANSPORT: unique symbol = Symbol.for('tidings.nestjs');

/** Where the `@MessagePattern` handlers are served, and how (RpcServer's options besides). */
export interface TidingsRpcOptions extends Omit<RpcServerOptions, 'accessPolicy'> {
  /** The RPC topic (oslo `Target.topic`). Required when the application has `@MessagePattern` handlers. */
  topic: string;
  /** This server's name: direct calls to `topic.server` reach it. @default os.hostname() */
  server?: string;
  /** The exchange. @default the transport's control exchange */
  exchange?: string;
  /** The endpoint version callers must be compatible with; a handler's extras may override it. @default '1.0' */
  version?: string;
  /** The endpoint namespace; a handler's extras may override it. @default undefined (the default namespace) */
  namespace?: string;
}

/** Defaults of every `@EventPattern` handler's listener (each handler's extras may override them). */
export interface TidingsNotificationOptions extends NotificationListenerOptions {
  /** The notification topics listened to. @default ['notifications'] */
  topics?: readonly string[];
  /** The exchange. @default the transport's control exchange */
  exchange?: string;
}

/** Options of `new ServerTidings()`, i.e. of `NestFactory.createMicroservice(AppModule, { strategy })`. */
export interface TidingsServerOptions {
  /** The transport URL (memory://, rabbit://, redis://, kafka://). @default $TIDINGS_TRANSPORT_URL, else memory:// */
  url?: string;
  /** Options of the transports opened from `url` (remote error modules, logger, middleware, driver options). */
  transportOptions?: TransportOptions;
  /** An RPC transport to serve on instead of opening one from `url`; `close()` leaves it open. */
  rpcTransport?: Transport;
  /** A notification transport to listen on instead of opening one from `url`; `close()` leaves it open. */
  notificationTransport?: Transport;
  /** Where and how `@MessagePattern` handlers are served. */
  rpc?: TidingsRpcOptions;
  /** Defaults of the listeners of `@EventPattern` handlers. */
  notifications?: TidingsNotificationOptions;
}

/** The extras of `@MessagePattern(pattern, extras)`. */
export interface TidingsMessageExtras {
  /** This method's endpoint version. @default the server's `rpc.version` */
  version?: string;
  /** This method's endpoint namespace. @default the server's `rpc.namespace` */
  namespace?: string;
}

/** The extras of `@EventPattern(eventTypeGlob, extras)`: this handler's listener. */
export interface TidingsEventExtras {
  /** Pool: every pool gets each notification once; listeners of one pool share them. @default the server's `notifications.pool` */
  pool?: string;
  /** Priorities subscribed to for this handler. @default every priority */
  priorities?: readonly Priority[];
  /** Requeue the notification when the handler throws or returns NotificationResult.REQUEUE. @default false */
  allowRequeue?: boolean;
  /** Topics listened to. @default the server's `notifications.topics` */
  topics?: readonly string[];
  /** Handlers (batches) at once in this listener. @default 64 */
  executorSize?: number;
  /** Longest a handler may run, ms. @default none */
  handlerTimeout?: number;
  /** Batches: the handler gets an array of payloads (and `ctx.getBatch()`). `true` takes the listener's batch defaults. @default none (one at a time) */
  batch?: true | TidingsBatchExtras;
}

/** The `batch` of TidingsEventExtras: one stopwatch per batch, as `getBatchNotificationListener()`. */
export interface TidingsBatchExtras {
  /** Most notifications per batch. @default 100 */
  size?: number;
  /** Longest wait for one batch, first message included, ms. @default 1000 */
  timeout?: number;
}

/** What `ServerTidings.unwrap()` gives: the running tidings objects. */
export interface TidingsServerParts {
  /** The RpcServer of the `@MessagePattern` handlers; undefined when there are none or before `listen()`. */
  rpcServer: RpcServer | undefined;
  /** One NotificationListener per distinct `@EventPattern` option set. */
  listeners: readonly NotificationListener[];
}

const MESSAGE_EXTRAS = new Set(['version', 'namespace']);
const EVENT_EXTRAS = new Set(['pool', 'priorities', 'allowRequeue', 'topics', 'executorSize', 'handlerTimeout', 'batch']);
const DEFAULT_NOTIFICATION_TOPICS = Object.freeze(['notifications']);

/** One `@EventPattern` handler with the listener it belongs to. */
interface EventRegistration {
  readonly pattern: string;
  readonly handler: MessageHandler;
  readonly priorities?: readonly Priority[];
  readonly listenerKey: string;
  readonly listener: { topics: readonly string[]; options: NotificationListenerOptions & { batchSize?: number; batchTimeout?: number }; batch: boolean };
}

type ServerEvents = Record<string, (...args: any[]) => void>;

/**
 * A NestJS transport strategy over tidings:
 * `NestFactory.createMicroservice(AppModule, { strategy: new ServerTidings({ url, rpc: { topic: 'calc' } }) })`.
 * `listen()` opens the transports (unless given) and starts an RpcServer for the
 * `@MessagePattern` handlers and a NotificationListener per distinct `@EventPattern` option set.
 */
export class ServerTidings extends Server<ServerEvents, 'connected' | 'disconnected'> implements CustomTransportStrategy {
  override transportId = TIDINGS_TRANSPORT;
  private rpcServer?: RpcServer;
  private readonly listeners: NotificationListener[] = [];
  /** The transports opened from `url`, by kind (closed by `close()`). */
  private readonly opened = new Map<'rpc' | 'notification', Promise<Transport>>();
  private readonly subscribers: Array<[event: string, callback: (...args: any[]) => void]> = [];
  /** The handlers found at the first `listen()`, unchained. */
  private registered?: { methods: Array<[string, MessageHandler]>; events: Array<[string, MessageHandler]> };

  constructor(private readonly options: TidingsServerOptions = {}) {
    super();
    if (options === null || typeof options !== 'object') throw new InvalidArgument('options', 'an object', options);
    if (options.rpc !== undefined && (typeof options.rpc?.topic !== 'string' || options.rpc.topic.length === 0)) {
      throw new InvalidArgument('rpc.topic', 'a non-empty topic name', options.rpc?.topic);
    }
  }

  /** Starts serving; NestJS calls it from `app.listen()` and gets a failure through `callback`. */
  listen(callback: (error?: unknown) => void): void {
    this.start().then(
      () => callback(),
      (error: unknown) => void this.close().finally(() => callback(error)),
    );
  }

  /** Stops every server and listener (in-flight handlers finish), then closes the transports it opened. */
  async close(): Promise<void> {
    const parts: Array<RpcServer | NotificationListener> = [...(this.rpcServer ? [this.rpcServer] : []), ...this.listeners];
    this.rpcServer = undefined;
    this.listeners.length = 0;
    await Promise.allSettled(parts.map((p) => p.close()));
    const opened = [...this.opened.values()];
    this.opened.clear();
    await Promise.allSettled(opened.map(async (t) => (await t).cleanup()));
    this._status$.next('disconnected');
  }

  /** Subscribes to the events of the RpcServer and listeners (`error`, `dispatched`, `handlerError`, ...), now or when they start. */
  on(event: string, callback: (...args: any[]) => void): void {
    this.subscribers.push([event, callback]);
    for (const part of this.parts()) eventsOf(part).on(event, callback);
  }

  /** The running tidings objects: `{ rpcServer, listeners }`. */
  unwrap<T = TidingsServerParts>(): T {
    return { rpcServer: this.rpcServer, listeners: [...this.listeners] } as T;
  }

  private parts(): Array<RpcServer | NotificationListener> {
    return [...(this.rpcServer ? [this.rpcServer] : []), ...this.listeners];
  }

  private async start(): Promise<void> {
    const { methods, events } = this.handlers();
    if (methods.length > 0) await this.startRpc(methods);
    const groups = new Map<string, EventRegistration[]>();
    for (const e of events) groups.set(e.listenerKey, [...(groups.get(e.listenerKey) ?? []), e]);
    for (const group of groups.values()) await this.startListener(group);
    this._status$.next('connected');
  }

  /**
   * The handlers NestJS registered, each with its pattern. NestJS chains the event handlers of one
   * pattern (`next`) and runs the chain from its head; each may have its own pool here, so each
   * is unchained (once: the chain is gone afterwards) and routed on its own.
   */
  private handlers(): { methods: Array<[pattern: string, handler: MessageHandler]>; events: EventRegistration[] } {
    if (!this.registered) {
      const methods: Array<[string, MessageHandler]> = [];
      const events: Array<[string, MessageHandler]> = [];
      for (const [pattern, head] of this.messageHandlers) {
        for (let handler: MessageHandler | undefined = head; handler !== undefined; ) {
          const next = handler.next as MessageHandler | undefined;
          handler.next = undefined;
          (handler.isEventHandler ? events : methods).push([pattern, handler]);
          handler = next;
        }
      }
      this.registered = { methods, events };
    }
    return { methods: this.registered.methods, events: this.registered.events.map(([pattern, handler]) => this.eventRegistration(pattern, handler)) };
  }

  private async startRpc(methods: Array<[string, MessageHandler]>): Promise<void> {
    const rpc = this.options.rpc;
    if (rpc === undefined) throw new InvalidArgument('rpc', `{ topic } to serve the @MessagePattern handlers (${methods.map(([p]) => p).join(', ')}) on`, rpc);
    const { topic, server = hostname(), exchange, version = '1.0', namespace, ...serverOptions } = rpc;
    const endpoints = new Map<string, Record<string, unknown>>();
    for (const [pattern, handler] of methods) {
      const extras = checkExtras(`@MessagePattern(${JSON.stringify(pattern)})`, handler.extras, MESSAGE_EXTRAS) as TidingsMessageExtras;
      if (pattern === 'target') throw new InvalidArgument('@MessagePattern("target")', 'a method name other than target (reserved for the endpoint target)', pattern);
      const target = new Target({ version: extras.version ?? version, namespace: extras.namespace ?? namespace });
      const key = `${target.namespace ?? ''}\0${target.version}`;
      let endpoint = endpoints.get(key);
      if (!endpoint) endpoints.set(key, (endpoint = { target }));
      // What an exception filter answered with is the method's contract (NestJS logged the
      // unexpected ones already): the RpcServer logs it at debug level only, as oslo's expected exceptions.
      endpoint[pattern] = expectedExceptions(RpcExceptionFailure)((ctx: Context, args: Record<string, unknown>, meta: RpcMeta) =>
        this.run(handler, args, new TidingsContext<RpcMeta>([ctx, meta, pattern])).then(undefined, (error: unknown) => {
          throw toFailure(error);
        }),
      );
    }
    const transport = await this.transport('rpc');
    // Every registered pattern is callable (a NestJS pattern may start with `_`); nothing else is on these endpoints.
    this.rpcServer = getRpcServer(transport, { topic, server, exchange }, [...endpoints.values()], { ...serverOptions, accessPolicy: new LegacyRpcAccessPolicy() });
    this.subscribe(this.rpcServer);
    await this.rpcServer.start();
  }

  private eventRegistration(pattern: string, handler: MessageHandler): EventRegistration {
    const where = `@EventPattern(${JSON.stringify(pattern)})`;
    const extras = checkExtras(where, handler.extras, EVENT_EXTRAS) as TidingsEventExtras;
    const { topics: defaultTopics = DEFAULT_NOTIFICATION_TOPICS, exchange, ...defaults } = this.options.notifications ?? {};
    const topics = extras.topics ?? defaultTopics;
    if (!Array.isArray(topics) || topics.length === 0 || !topics.every((t) => typeof t === 'string' && t.length > 0)) {
      throw new InvalidArgument(`${where}.topics`, 'a non-empty array of topic names', topics);
    }
    const batch = extras.batch === true ? {} : extras.batch;
    if (batch !== undefined && (batch === null || typeof batch !== 'object')) throw new InvalidArgument(`${where}.batch`, 'true or { size?, timeout? }', extras.batch);
    const options = {
      ...defaults,
      ...pick(extras, ['pool', 'allowRequeue', 'executorSize', 'handlerTimeout']),
      ...(batch ? { batchSize: batch.size, batchTimeout: batch.timeout } : {}),
    };
    const listener = { topics: [...topics], options, batch: batch !== undefined };
    const listenerKey = JSON.stringify([listener.topics, exchange ?? null, options.pool ?? null, options.allowRequeue ?? null, options.executorSize ?? null, options.handlerTimeout ?? null, listener.batch, batch?.size ?? null, batch?.timeout ?? null]);
    return { pattern, handler, priorities: extras.priorities, listenerKey, listener };
  }

  private async startListener(group: EventRegistration[]): Promise<void> {
    const { topics, options, batch } = group[0].listener;
    const exchange = this.options.notifications?.exchange;
    const targets = topics.map((topic) => new Target({ topic, exchange }));
    const transport = await this.transport('notification');
    let listener: NotificationListener;
    if (batch) {
      listener = getBatchNotificationListener(transport, targets, group.map((e) => this.batchEndpoint(e)), options);
    } else {
      listener = getNotificationListener(transport, targets, [], options);
      for (const e of group) {
        listener.on(e.pattern, e.priorities ? { priorities: e.priorities } : {}, (ctx: Context, payload: unknown, meta: NotificationEventMetadata) =>
          this.runEvent(e.handler, payload, new TidingsContext<NotificationEventMetadata>([ctx, meta, e.pattern])),
        );
      }
    }
    this.listeners.push(listener);
    this.subscribe(listener);
    await listener.start();
  }

  /** A batch endpoint for one handler: its priorities' methods, screened by its event-type glob. */
  private batchEndpoint(e: EventRegistration): object {
    const priorities = e.priorities ?? PRIORITIES;
    if (!Array.isArray(priorities) || priorities.length === 0 || !priorities.every((p) => (PRIORITIES as readonly string[]).includes(p))) {
      throw new InvalidArgument(`@EventPattern(${JSON.stringify(e.pattern)}).priorities`, `a non-empty array of ${PRIORITIES.join(', ')}`, priorities);
    }
    const endpoint: Record<string, unknown> = { filterRule: new NotificationFilter({ eventType: eventTypeGlob(e.pattern) }) };
    for (const priority of priorities) {
      endpoint[priority] = (items: NotificationBatchItem<Context>[]) =>
        this.runEvent(e.handler, items.map((i) => i.payload), new TidingsContext<NotificationEventMetadata>([items[0].ctx, eventMetadataOf(items[0]), e.pattern, items]));
    }
    return endpoint;
  }

  /** A notification handler's run: REQUEUE when the handler's (last) value says so; a failure is thrown as an Error. */
  private async runEvent(handler: MessageHandler, data: unknown, context: TidingsContext): Promise<NotificationHandlerResult> {
    let value: unknown;
    try {
      value = await this.run(handler, data, context);
    } catch (error) {
      throw toFailure(error);
    }
    return value === NotificationResult.REQUEUE ? NotificationResult.REQUEUE : NotificationResult.HANDLED;
  }

  /** Runs a NestJS handler (its guards, pipes, interceptors and filters inside) to its last value. */
  private run(handler: MessageHandler, data: unknown, context: TidingsContext): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const done = async (): Promise<void> => {
        try {
          resolve(await lastValueFrom(this.transformToObservable(await handler(data, context)), { defaultValue: undefined }));
        } catch (error) {
          reject(error);
        } finally {
          this.onProcessingEndHook?.(this.transportId, context);
        }
      };
      try {
        void Promise.resolve(this.onProcessingStartHook(this.transportId, context, done)).catch(reject);
      } catch (error) {
        reject(error);
      }
    });
  }

  /** The transport of `kind`: the one given, else one opened from `url` (closed by `close()`). */
  private async transport(kind: 'rpc' | 'notification'): Promise<Transport> {
    const given = kind === 'rpc' ? this.options.rpcTransport : this.options.notificationTransport;
    if (given) return given;
    let opening = this.opened.get(kind);
    if (!opening) this.opened.set(kind, (opening = (kind === 'rpc' ? getRpcTransport : getNotificationTransport)(this.options.url, this.options.transportOptions)));
    return opening;
  }

  private subscribe(part: RpcServer | NotificationListener): void {
    for (const [event, callback] of this.subscribers) eventsOf(part).on(event, callback);
  }
}

/** The typed events of a server or listener, for subscribing by a name NestJS passes as a string. */
function eventsOf(part: RpcServer | NotificationListener): { on(event: string, callback: (...args: any[]) => void): unknown } {
  return part.events as unknown as { on(event: string, callback: (...args: any[]) => void): unknown };
}

/** The extras of a handler, checked: a plain object with known keys only (a typo fails at `listen()`, naming it). */
function checkExtras(where: string, extras: unknown, known: ReadonlySet<string>): Record<string, unknown> {
  if (extras === undefined || extras === null) return {};
  if (typeof extras !== 'object' || Array.isArray(extras)) throw new InvalidArgument(`${where} extras`, 'an object', extras);
  for (const key of Object.keys(extras)) {
    if (!known.has(key)) throw new InvalidArgument(`${where} extras.${key}`, `one of ${[...known].join(', ')}`, key);
  }
  return extras as Record<string, unknown>;
}

function pick<T extends object, K extends keyof T>(obj: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (obj[k] !== undefined) out[k] = obj[k];
  return out;
}
