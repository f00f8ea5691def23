// The RPC server (oslo RPCServer): a thin shape over the one server lifecycle (src/server) that
// listens on a Target, dispatches each request to the endpoints and replies to calls.
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { EventEmitter } from 'eventemitter3';
import { GuardedEventEmitter } from '../core/events.js';
import { InvalidArgument, type HandlerTimeout } from '../core/errors.js';
import { errorFields, silentLogger, type Logger } from '../core/logger.js';
import { toLogger, type LoggerLike } from '../core/logger-adapters.js';
import type { Serializer } from '../core/serializer.js';
import { Target, validateServerTarget, type TargetInit } from '../core/target.js';
import type { CloseOptions } from '../core/lifecycle.js';
import type { Transport } from '../transport.js';
import type { RpcIncomingMessage } from '../contract/incoming-message.js';
import type { Listener } from '../contract/listener.js';
import { UntracedFailure } from '../contract/remote-error.js';
import { MessageHandlingServer } from '../server/message-handling-server.js';
import { checkHandlerTimeout, type Expiry, type HandlerRun } from '../server/handler-run.js';
import type { RpcAccessPolicy } from './access-policy.js';
import { RpcDispatcher, type DispatchOutcome } from './dispatcher.js';
import { traceRpc, type RpcTraceContext } from './instrumentation.js';
import { middlewareFor, type RpcServerMiddleware } from '../middleware/middleware.js';

/** Options of `getRpcServer()`. */
export interface RpcServerOptions {
  /** Requests handled at once (oslo `executor_thread_pool_size`). @default 64 */
  executorSize?: number;
  /** Which endpoint methods callers may invoke: an instance or a class. @default new DefaultRpcAccessPolicy() */
  accessPolicy?: RpcAccessPolicy | (new () => RpcAccessPolicy);
  /** Context/entity hooks. @default new NoOpSerializer() */
  serializer?: Serializer<any>;
  /** Where dispatch errors are logged; pino, bunyan, winston and console are adapted. @default the transport's logger */
  logger?: LoggerLike;
  /**
   * Adds oslo's `oslo_rpc_server_ping` endpoint that returns `"pong"`, which `RpcClient.ping()`
   * and `discover()` call. On by default, unlike oslo's `rpc_ping_enabled`. @default true
   */
  rpcPingEnabled?: boolean;
  /** Interceptors around each request, inside the transport's `middleware.rpcServer`. @default [] */
  middleware?: readonly RpcServerMiddleware<any>[];
  /**
   * Longest a request may run, ms. Past it the caller is answered with a HandlerTimeout (a
   * MessagingTimeout), `meta.signal` aborts, the executor slot is freed and a late result is
   * dropped; the endpoint's promise is left to finish on its own. @default undefined (no limit)
   */
  handlerTimeout?: number;
  /**
   * Whether failures sent to callers carry the server's traceback (oslo's `tb`). `false` sends
   * `tb: []`: callers still get the class and message, but none of the server's file paths. @default true
   */
  sendTraceback?: boolean;
}

/** Defaults of RpcServerOptions (the access policy defaults to `new DefaultRpcAccessPolicy()`). */
export const RPC_SERVER_DEFAULTS = Object.freeze({
  /** Requests handled at once (oslo `executor_thread_pool_size`). */
  executorSize: 64,
  /** `oslo_rpc_server_ping` answers, so ping and discovery work out of the box (oslo's default is off). */
  rpcPingEnabled: true,
  /** Failures carry the server's traceback, as oslo sends `tb`. */
  sendTraceback: true,
});

/** One handled request, as reported by the `dispatched` and `error` events. Never carries payloads. */
export interface RpcDispatchInfo {
  /** The method asked for. */
  method: string;
  /** The namespace asked for; undefined = the default namespace. */
  namespace?: string;
  /** The version asked for (`'1.0'` when none was sent). */
  version: string;
  /** The request's unique id, when the driver knows it. */
  messageId?: string;
  /** True for a call (a reply was sent), false for a cast. */
  expectsReply: boolean;
  /** From receipt to the end of the endpoint method, ms (the reply is not included). */
  durationMs: number;
  /** Whether the method returned or threw (or could not be found). */
  outcome: 'result' | 'failure';
  /** The failure, when `outcome` is `failure`. */
  error?: unknown;
  /** True when the failure was declared expected (`expectedExceptions`, `static expectedErrors`). */
  expected?: boolean;
}

/** A request given up on at its `handlerTimeout`: the `handlerTimeout` event. */
export interface RpcHandlerTimeoutInfo extends Expiry {
  /** The method asked for. */
  method: string;
  /** The namespace asked for; undefined = the default namespace. */
  namespace?: string;
  /** The version asked for. */
  version: string;
  /** The request's unique id, when the driver knows it. */
  messageId?: string;
  /** True for a call (answered with a HandlerTimeout), false for a cast. */
  expectsReply: boolean;
}

/** The typed event map of RpcServer. */
export interface RpcServerEvents {
  /** The listener is subscribed; messages sent from now on are received. */
  started: [];
  /** No more messages are taken; in-flight ones may still run until `wait()` resolves. */
  stopped: [];
  /** A request was handled (result or failure). */
  dispatched: [info: RpcDispatchInfo];
  /** A request failed unexpectedly (also logged at error level). Listening is optional. */
  error: [error: unknown, info: RpcDispatchInfo];
  /** A request ran past `handlerTimeout`; the caller got a HandlerTimeout (also logged at warn level). */
  handlerTimeout: [info: RpcHandlerTimeoutInfo];
}

/**
 * Lifecycle (the one of src/server, shared with the notification listeners): `start()` →
 * `stop()` → `wait()`, then `start()` again if wanted. Out-of-order calls reject with
 * InvalidState; repeated calls of the current step return the same promise. `close()` (or
 * `await using`) does all of the ending in one call, from any state.
 */
export class RpcServer {
  /** What the server listens on: `topic` (shared), `topic.server` (direct) and the topic's fanout. */
  readonly target: Target;
  /** Routes requests to the endpoints. */
  readonly dispatcher: RpcDispatcher;
  /** Requests handled at once. */
  readonly executorSize: number;
  /** Typed events: `started`, `stopped`, `dispatched`, `error`, `handlerTimeout`. A listener that throws is logged, never breaks dispatch. */
  readonly events: EventEmitter<RpcServerEvents>;
  /** Longest a request may run, ms; undefined = no limit. */
  readonly handlerTimeout: number | undefined;
  /** Whether failures sent to callers carry the server's traceback. */
  readonly sendTraceback: boolean;
  private readonly logger: Logger;
  private readonly lifecycle: MessageHandlingServer<RpcIncomingMessage>;

  constructor(
    /** The transport the server listens on. */
    readonly transport: Transport,
    target: Target | TargetInit,
    endpoints: readonly object[],
    options: RpcServerOptions = {},
  ) {
    if (!transport || typeof transport !== 'object' || !transport.driver) throw new InvalidArgument('transport', 'a Transport from getRpcTransport()', transport);
    this.target = Target.from(target);
    const size = options.executorSize ?? RPC_SERVER_DEFAULTS.executorSize;
    if (!Number.isInteger(size) || size < 1) throw new InvalidArgument('executorSize', 'a positive integer', size);
    this.executorSize = size;
    this.handlerTimeout = checkHandlerTimeout(options.handlerTimeout);
    this.sendTraceback = options.sendTraceback ?? RPC_SERVER_DEFAULTS.sendTraceback;
    if (typeof this.sendTraceback !== 'boolean') throw new InvalidArgument('sendTraceback', 'a boolean', this.sendTraceback);
    this.logger = toLogger(options.logger, transport.logger ?? silentLogger).child({ component: 'rpc-server', topic: this.target.topic, server: this.target.server });
    this.events = new GuardedEventEmitter<RpcServerEvents>(this.logger);
    this.lifecycle = new MessageHandlingServer<RpcIncomingMessage>({
      listen: () => this.listen(),
      dispatch: (incoming, run) => this.process(incoming, run),
      executorSize: size,
      handlerTimeout: this.handlerTimeout,
      expire: (incoming, error, expiry) => this.expire(incoming as RpcIncomingMessage, error, expiry),
      registry: transport,
      events: this.events,
      logger: this.logger,
      subject: `RpcServer on ${this.target.toString()}`,
      unit: 'request',
      label: 'rpc server',
    });
    this.dispatcher = new RpcDispatcher(endpoints, {
      accessPolicy: options.accessPolicy,
      serializer: options.serializer,
      logger: this.logger,
      rpcPingEnabled: options.rpcPingEnabled ?? RPC_SERVER_DEFAULTS.rpcPingEnabled,
      middleware: middlewareFor(transport, 'rpcServer', options.middleware),
      serverTarget: this.target,
      // The ping answering is itself a request in flight: it reports the others.
      pingDetail: () => ({ server: this.target.server, topic: this.target.topic, host: hostname(), pid: process.pid, inFlight: Math.max(0, this.inFlight - 1) }),
    });
  }

  /** Requests running right now (at most `executorSize`). */
  get inFlight(): number {
    return this.lifecycle.inFlight;
  }

  /**
   * Subscribes and starts dispatching. Resolves once the driver listener is subscribed, so a
   * message sent afterwards is received. Rejects with InvalidTarget (no topic or server),
   * InvalidState (the transport was cleaned up, or called after `stop()` before `wait()`) or
   * ServerListenError (the driver failed to subscribe; its error is the `cause`).
   */
  start(): Promise<void> {
    return this.lifecycle.start();
  }

  /** Stops taking new messages; messages already received are still dispatched. */
  stop(): Promise<void> {
    return this.lifecycle.stop();
  }

  /** Waits for in-flight requests to finish, then releases the listener. Call after `stop()`. */
  wait(): Promise<void> {
    return this.lifecycle.wait();
  }

  /**
   * Ends the server from any state, never rejecting with InvalidState: `stop()`, then `wait()`
   * within `options.deadlineMs`. Past the deadline it releases the subscription anyway and
   * rejects with MessagingTimeout saying how many requests were still running. Requests are
   * acknowledged on receipt (at most once, as oslo), so none is redelivered: running ones go on,
   * and their replies are sent while the transport is open; ones received and still waiting for
   * an executor slot are dropped (their callers time out). Idempotent: a call while one is
   * under way returns its promise; a call on a server that is not started resolves at once.
   * Rejects with InvalidArgument for a bad `deadlineMs`.
   */
  close(options?: CloseOptions): Promise<void> {
    return this.lifecycle.close(options);
  }

  /** `await using server = getRpcServer(...)` closes it with the default deadline. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** The lifecycle's set-up: the target checked, then the driver's listener on it. */
  private async listen(): Promise<Listener<RpcIncomingMessage>> {
    validateServerTarget(this.target);
    const listener = await this.transport.driver.listen(this.target, { prefetchHint: 2 * this.executorSize });
    this.logger.debug('rpc server listening');
    return listener;
  }

  private async process(incoming: RpcIncomingMessage, run?: HandlerRun): Promise<void> {
    const began = performance.now();
    const { method, namespace, version } = incoming.request;
    const info: RpcDispatchInfo = {
      method,
      namespace,
      version,
      messageId: incoming.msgId,
      expectsReply: incoming.expectsReply,
      durationMs: 0,
      outcome: 'result',
    };
    let outcome: DispatchOutcome;
    try {
      outcome = await traceRpc('dispatch', this, this.dispatch, incoming, info, this.traceContext, this.dispatchOrReject, run?.signal);
    } catch (failure) {
      // dispatchOrReject (traced only) rejects with the failure it kept in info
      outcome = { ok: false, failure, expected: failure === info.error && info.expected === true };
    }
    // Past its handlerTimeout the caller was answered already: this late outcome is dropped.
    if (run !== undefined && !run.claim()) return;
    info.durationMs = performance.now() - began;
    if (!outcome.ok) Object.assign(info, { outcome: 'failure', error: outcome.failure, expected: outcome.expected });
    this.report(info);
    if (!incoming.expectsReply) return;
    try {
      await incoming.reply(outcome.ok ? { result: outcome.result } : { failure: this.failureToSend(outcome.failure) });
    } catch (err) {
      this.logger.error('could not send reply', { method: info.method, messageId: info.messageId, err });
    }
  }

  /** A failure as callers get it: without the server's traceback when `sendTraceback` is false. */
  private failureToSend(failure: unknown): unknown {
    return this.sendTraceback ? failure : new UntracedFailure(failure);
  }

  /** The lifecycle gave up on a request at its `handlerTimeout`: the caller gets the HandlerTimeout now. */
  private expire(incoming: RpcIncomingMessage, error: HandlerTimeout, expiry: Expiry): Record<string, unknown> {
    const { method, namespace, version } = incoming.request;
    const info: RpcHandlerTimeoutInfo = { method, namespace, version, messageId: incoming.msgId, expectsReply: incoming.expectsReply, ...expiry };
    if (incoming.expectsReply) {
      incoming.reply({ failure: this.failureToSend(error) }).catch((err: unknown) => this.logger.error('could not send reply', { method, messageId: info.messageId, err }));
    }
    this.events.emit('handlerTimeout', info);
    return { method, namespace, messageId: info.messageId };
  }

  private dispatch(incoming: RpcIncomingMessage, _info: RpcDispatchInfo, signal?: AbortSignal): Promise<DispatchOutcome> {
    return this.dispatcher.dispatch(incoming, signal);
  }

  /** `dispatch` while a tracer listens: a failure outcome rejects (kept in `info`), so it reaches the error channel. */
  private async dispatchOrReject(incoming: RpcIncomingMessage, info: RpcDispatchInfo, signal?: AbortSignal): Promise<DispatchOutcome> {
    const outcome = await this.dispatcher.dispatch(incoming, signal);
    if (outcome.ok) return outcome;
    info.error = outcome.failure;
    info.expected = outcome.expected;
    throw outcome.failure;
  }

  /** Asked for only while a tracer listens (see traceRpc). */
  private traceContext(incoming: RpcIncomingMessage, info: RpcDispatchInfo): RpcTraceContext {
    const { method, namespace, version, messageId, expectsReply } = info;
    return { kind: 'dispatch', topic: this.target.topic, server: this.target.server, method, namespace, version, messageId, expectsReply, context: incoming.ctx };
  }

  private report(info: RpcDispatchInfo): void {
    if (info.outcome === 'failure') {
      const fields = { method: info.method, namespace: info.namespace, version: info.version, messageId: info.messageId, durationMs: Math.round(info.durationMs) };
      const err = summarise(info.error);
      if (info.expected) {
        this.logger.debug('expected exception during message handling', { ...fields, err });
      } else {
        this.logger.error('exception during message handling', { ...fields, err });
        this.events.emit('error', info.error, info);
      }
    }
    this.events.emit('dispatched', info);
  }
}

/** Name, message and code of an error for logs; never its payload fields. */
function summarise(err: unknown): Record<string, unknown> {
  if (err instanceof Error) return errorFields(err);
  return { name: 'non-Error thrown', type: err === null ? 'null' : typeof err };
}

/**
 * Creates an RPC server for `target` (topic and server required at `start()`) serving
 * `endpoints` in order. Throws InvalidArgument for a bad endpoint, target or option.
 */
export function getRpcServer(transport: Transport, target: Target | TargetInit, endpoints: readonly object[], options: RpcServerOptions = {}): RpcServer {
  return new RpcServer(transport, target, endpoints, options);
}
