// node:diagnostics_channel tracing channels for RPC, for tracers (OpenTelemetry, APMs).
// Free when unused: without subscribers the traced method is called directly, no closure built.
import diagnostics from 'node:diagnostics_channel';

/** Channel names; subscribe with `diagnostics_channel.tracingChannel(name).subscribe({...})`. */
export const RPC_CHANNELS = Object.freeze({
  /** Client `call`: context `{kind, exchange, topic, server, namespace, version, method, timeout, context}`. */
  call: 'tidings:rpc:call',
  /** Client `cast` (fanout included): the same context without `timeout`. */
  cast: 'tidings:rpc:cast',
  /** Server dispatch of one request: context `{topic, server, method, namespace, version, messageId, expectsReply, context}`; a failure the endpoint replies with goes to the error channel. */
  dispatch: 'tidings:rpc:dispatch',
});

/** What tracers receive as the context object (extra fields: `result`/`error` per tracingChannel rules). */
export interface RpcTraceContext {
  /** Which channel: client `call`, client `cast`, or server `dispatch`. */
  kind: 'call' | 'cast' | 'dispatch';
  /** The RPC method. */
  method: string;
  /** Target topic (client) or the server's topic. */
  topic?: string;
  /** Target server (client) or the server's name. */
  server?: string;
  /** Target exchange, when the target names one (client only). */
  exchange?: string;
  /** Namespace asked for. */
  namespace?: string;
  /** Version asked for (a server reports `'1.0'` when none was sent). */
  version?: string;
  /** Fanout cast (client only). */
  fanout?: boolean;
  /** Reply deadline of a call, ms (`call` only). */
  timeout?: number;
  /** The request's unique id (`dispatch` only). */
  messageId?: string;
  /** True for a call, false for a cast (`dispatch` only). */
  expectsReply?: boolean;
  /**
   * The request context as it goes on the wire (client: after the serializer and the middlewares,
   * with the OpenTelemetry `traceparent` when instrumentation is on) or as it arrived (`dispatch`).
   * Read it; do not change it.
   */
  context?: Readonly<Record<string, unknown>>;
  [key: string]: unknown;
}

const channels = {
  call: diagnostics.tracingChannel<unknown, RpcTraceContext>(RPC_CHANNELS.call),
  cast: diagnostics.tracingChannel<unknown, RpcTraceContext>(RPC_CHANNELS.cast),
  dispatch: diagnostics.tracingChannel<unknown, RpcTraceContext>(RPC_CHANNELS.dispatch),
};

/**
 * Runs `fn.call(self, a, b, c)`, inside the `kind` tracing channel when a tracer listens; only then
 * is `context.call(self, a, b)` asked for the trace context and `traced` (default `fn`) run
 * instead of `fn` (a server passes one that rejects with a failure `fn` resolves with, so that it
 * reaches the error channel). Callers pass methods and their arguments rather than closures, so an
 * untraced call allocates nothing here. `c` (a server's handler signal) is passed through as is.
 */
export function traceRpc<This, A, B, T, C = undefined>(
  kind: RpcTraceContext['kind'],
  self: This,
  fn: (this: This, a: A, b: B, c: C) => Promise<T>,
  a: A,
  b: B,
  context: (this: This, a: A, b: B) => RpcTraceContext,
  traced: (this: This, a: A, b: B, c: C) => Promise<T> = fn,
  c?: C,
): Promise<T> {
  const channel = channels[kind];
  if (!(channel.start.hasSubscribers || channel.end.hasSubscribers || channel.asyncEnd.hasSubscribers || channel.error.hasSubscribers)) return fn.call(self, a, b, c as C);
  return channel.tracePromise(traced, context.call(self, a, b), self, a, b, c as C);
}
