// The caller side of RPC, once for every driver: calls waiting for their reply by `_msg_id`,
// with oslo's reply rules (oslo amqpdriver.py ReplyWaiter), deadlines and call-monitor windows.
import { AbortError, MessagingTimeout } from '../core/errors.js';
import type { Logger, LogFields } from '../core/logger.js';
import { decodeBody } from './envelope.js';
import { deserializeRemoteError, type RemoteErrorRegistry } from './remote-error.js';
import type { DriverMessage } from './types.js';

/** What a call waits with: its topic (for messages), deadlines and abort signal. */
export interface CallOptions {
  /** For messages: the topic the call went to. */
  readonly topic: string;
  /** Overall deadline in ms; undefined = none. */
  readonly timeout?: number;
  /** Call-monitor window in ms, restarted by every heartbeat; undefined = none. */
  readonly callMonitorTimeout?: number;
  /** Aborting it rejects the call with AbortError. */
  readonly signal?: AbortSignal;
  /**
   * Collect every final reply until `timeout` passes, then resolve with them as
   * `CollectedReply[]` (a fanout sent with `_msg_id` gets one reply per server). Needs `timeout`.
   */
  readonly collectReplies?: boolean;
}

/** One final reply gathered by a call with `collectReplies`: a result, or the rebuilt remote error. */
export type CollectedReply =
  | {
      /** The server's method returned. */
      readonly ok: true;
      /** The reply's `result`. */
      readonly result: unknown;
    }
  | {
      /** The server replied with a failure. */
      readonly ok: false;
      /** The failure rebuilt as by a call (`deserializeRemoteError`). */
      readonly error: Error;
    };

/**
 * One call waiting for its reply. Owned by its registry: it leaves the registry the moment it
 * has an outcome (reply, timeout, abort, `fail`), so `isOver` tells a sender to stop retrying.
 */
export class PendingCall {
  /** Resolves with the reply's result; rejects with the remote error, a timeout or an abort. */
  readonly promise: Promise<unknown>;
  private resolveFn!: (value: unknown) => void;
  private rejectFn!: (err: Error) => void;
  private over = false;
  /** A result or failure that came in a non-final reply (oslo keeps it as the final value). */
  private early: unknown = null;
  private timer?: ReturnType<typeof setTimeout>;
  private monitor?: ReturnType<typeof setTimeout>;
  private onAbort?: () => void;
  /** Why the request has not reached the broker (yet): a timeout then says so. */
  private undelivered?: unknown;
  /** Only for `collectReplies`: the final replies so far; the deadline resolves with them. */
  private readonly collected?: CollectedReply[];

  constructor(
    /** The `_msg_id` its reply carries. */
    readonly msgId: string,
    private readonly options: CallOptions,
    private readonly registry: PendingReplies,
  ) {
    this.promise = new Promise<unknown>((resolve, reject) => {
      this.resolveFn = resolve;
      this.rejectFn = reject;
    });
    const { timeout, callMonitorTimeout, signal } = options;
    if (options.collectReplies === true) {
      this.collected = [];
      this.timer = setTimeout(() => this.endCollection(), timeout);
    } else if (timeout !== undefined) this.timer = setTimeout(() => this.fail(this.timeoutError(`No reply to message ID ${msgId} on topic ${options.topic} within ${timeout} ms`)), timeout);
    if (callMonitorTimeout !== undefined && this.collected === undefined) this.monitor = setTimeout(() => this.onMonitorExpired(), callMonitorTimeout);
    if (signal) {
      this.onAbort = () => this.fail(new AbortError('The call was aborted', { cause: signal.reason }));
      signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  /** True once the call has its outcome: a sender MUST NOT publish its request again. */
  get isOver(): boolean {
    return this.over;
  }

  /** Records why the request did not reach the broker, or clears it (`undefined`) once it did. */
  setUndelivered(reason: unknown): void {
    this.undelivered = reason;
  }

  /** Ends the call with `err` (e.g. its request could not be published). No-op once over. */
  fail(err: Error): void {
    if (this.settle()) this.rejectFn(err);
  }

  /** @internal A decoded reply for this call (registry.accept routes it here). */
  onReply(reply: DriverMessage, decodeFailure: (failure: unknown) => Error): void {
    const failure = reply.failure;
    const ending = reply.ending === true;
    const failed = failure !== null && failure !== undefined && failure !== '' && failure !== false && failure !== 0;
    if (this.collected !== undefined) {
      // Heartbeats and early parts come from many servers at once here: only final replies count.
      if (ending) this.collected.push(failed ? { ok: false, error: decodeFailure(failure) } : { ok: true, result: reply.result ?? null });
      return;
    }
    // oslo: `if data['failure']` (a falsy failure is none), else `data.get('result')`.
    if (failed) {
      const err = decodeFailure(failure);
      if (ending) this.fail(err);
      else this.early = err;
      return;
    }
    const result = reply.result ?? null;
    if (result !== null) this.early = result;
    if (ending) {
      const final = this.early;
      if (final instanceof Error) this.fail(final);
      else if (this.settle()) this.resolveFn(final);
    } else if (result === null) {
      // A call-monitor heartbeat: the server is still working on it.
      this.monitor?.refresh();
    }
  }

  private endCollection(): void {
    if (this.settle()) this.resolveFn(this.collected);
  }

  private onMonitorExpired(): void {
    this.fail(this.timeoutError(`No reply or call-monitor heartbeat for message ID ${this.msgId} on topic ${this.options.topic} within ${this.options.callMonitorTimeout} ms`));
  }

  private timeoutError(message: string): MessagingTimeout {
    const why = this.undelivered;
    if (why === undefined) return new MessagingTimeout(message);
    return new MessagingTimeout(`${message}; the request never reached the broker: ${why instanceof Error ? why.message : String(why)}`, { cause: why });
  }

  /** True for the one caller that ends the call. */
  private settle(): boolean {
    if (this.over) return false;
    this.over = true;
    this.registry.forget(this.msgId);
    if (this.timer) clearTimeout(this.timer);
    if (this.monitor) clearTimeout(this.monitor);
    if (this.onAbort) this.options.signal?.removeEventListener('abort', this.onAbort);
    return true;
  }
}

/**
 * The calls of one transport as a driver's helper sees them (a reply consumer, an RPC client in
 * a file of its own): `BaseDriver.replies` hands it out. It cannot fail every call: only
 * `BaseDriver.cleanup()` does that.
 */
export interface CallRegistry {
  /** Registers call `msgId` before its request is published; its deadlines start now. */
  register(msgId: string, options: CallOptions): PendingCall;
  /** Routes a decoded reply body to its call; late or unknown replies are dropped. Never throws. */
  accept(reply: DriverMessage): void;
  /** Decodes a reply as it came off the broker and routes it; a malformed one is logged with `fields`. Never throws. */
  acceptBody(body: Uint8Array | string, fields: LogFields): void;
}

/**
 * Every call of one transport waiting for its reply. `BaseDriver` owns one: a driver registers a
 * call before it publishes the request (`registerCall`) and hands each reply to it
 * (`acceptReply`, `acceptReplyBody`); late or unknown replies are dropped with a debug log, never
 * delivered to another call; `cleanup()` fails the calls still waiting.
 */
export class PendingReplies implements CallRegistry {
  private readonly calls = new Map<string, PendingCall>();
  private readonly decodeFailure: (failure: unknown) => Error;

  constructor(
    allowedRemoteExmods: readonly string[],
    remoteErrors: RemoteErrorRegistry,
    private readonly logger: Logger,
  ) {
    this.decodeFailure = (failure) => deserializeRemoteError(failure, allowedRemoteExmods, remoteErrors);
  }

  /** Calls waiting for their outcome. */
  get size(): number {
    return this.calls.size;
  }

  /** Registers call `msgId`; its deadlines start now. */
  register(msgId: string, options: CallOptions): PendingCall {
    const call = new PendingCall(msgId, options, this);
    if (options.signal?.aborted) call.fail(new AbortError('The call was aborted', { cause: options.signal.reason }));
    else this.calls.set(msgId, call);
    return call;
  }

  /** Routes a decoded reply body to its call. Never throws. */
  accept(reply: DriverMessage): void {
    const msgId = reply._msg_id;
    const call = typeof msgId === 'string' ? this.calls.get(msgId) : undefined;
    if (call === undefined) {
      this.logger.debug('No calling threads waiting for msg_id; reply dropped', { msgId: typeof msgId === 'string' ? msgId : undefined });
      return;
    }
    call.onReply(reply, this.decodeFailure);
  }

  /**
   * Decodes a reply as it came off the broker and routes it to its call; a malformed one is
   * logged with `fields` (where it came from, never the body) and dropped. Never throws.
   */
  acceptBody(body: Uint8Array | string, fields: LogFields): void {
    let reply: DriverMessage;
    try {
      reply = decodeBody(body);
    } catch (err) {
      this.logger.warn('Dropping a malformed reply', { ...fields, bytes: body.length, reason: err instanceof Error ? err.message : String(err) });
      return;
    }
    this.accept(reply);
  }

  /** Ends every waiting call with `err` (transport cleanup). */
  failAll(err: Error): void {
    for (const call of [...this.calls.values()]) call.fail(err);
  }

  /** @internal Called by a call when it ends. */
  forget(msgId: string): void {
    this.calls.delete(msgId);
  }
}
