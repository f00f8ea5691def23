// The oslo message shapes every driver reads and writes (oslo-wire.md §1.6, §1.7, §1.10): one
// place to split a decoded body into message, context and wire keys, validate it, and build replies.
import { InvalidArgument, MalformedMessage } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { isPlainObject } from '../core/json-check.js';
import { codeAt } from '../core/strings.js';
import { envelopeJson, newHexId } from './envelope.js';
import type { RpcReply } from './incoming-message.js';
import { serializeFailure } from './remote-error.js';
import type { Context, DriverMessage, ReceivedNotification, RpcRequest } from './types.js';

const CONTEXT_PREFIX = '_context_';
const NESTED_CONTEXT_KEY = '_context';
const UNDERSCORE = 0x5f;

/**
 * The default `max_message_bytes` of every driver: 16 MiB. RabbitMQ 3.10's own `max_message_size`
 * is 128 MiB and oslo sets none; 16 MiB keeps one message from taking the process's memory (a
 * body is held as text, as bytes and decoded at once) while leaving room for any real RPC payload.
 */
export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** UTF-8 size of a body; a string counts each char as 1 to 3 bytes, so most are sized without a pass. */
export function bodyBytes(body: Uint8Array | string, maxBytes: number): number {
  if (typeof body !== 'string') return body.byteLength;
  // A UTF-16 unit is at most 3 UTF-8 bytes (a surrogate pair is 4 for 2): below max/3 it fits.
  return body.length * 3 <= maxBytes ? body.length : Buffer.byteLength(body, 'utf8');
}

/**
 * `body` as it is, or InvalidArgument (field `message`, or `result` for a reply) when its encoded
 * size is over `maxBytes` (0 or undefined: no limit). InvalidArgument, not a delivery failure: the
 * caller's data is too large, nothing was sent and no retry can help (the façades never retry it).
 */
export function checkMessageSize(body: string, maxBytes: number | undefined, field = 'message'): string {
  if (maxBytes === undefined || maxBytes <= 0) return body;
  const size = bodyBytes(body, maxBytes);
  if (size <= maxBytes) return body;
  throw new InvalidArgument(field, `an encoded message of at most ${maxBytes} bytes (max_message_bytes)`, `${size} bytes`);
}

/**
 * Context keys that name or reach a prototype. Set on a plain object, `__proto__` replaces its
 * prototype (a hidden `is_admin` that `Object.keys` and logs do not show); none of them is ever
 * set from the wire: they are dropped, and the listener logs that it dropped them.
 */
export const UNSAFE_CONTEXT_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** The wire keys of a message as splitWireKeys found them, unchecked: undefined when absent. */
export interface WireKeys {
  /** The message's id for duplicate suppression. */
  _unique_id: unknown;
  /** A call's id, which its replies carry. */
  _msg_id: unknown;
  /** Where a call's replies go. */
  _reply_q: unknown;
  /** A call's timeout in seconds (oslo's call-monitor window). */
  _timeout: unknown;
}

/**
 * Splits a decoded body in one pass into the message, the `_context_*` context and the wire
 * keys (`_unique_id`, `_msg_id`, `_reply_q`, `_timeout`); `keepMessage: false` skips the message
 * (RPC requests read their fields directly). Builds new objects instead of
 * deleting keys (which slows V8 objects down); a `__proto__` key from the wire is dropped, and so
 * are context keys of UNSAFE_CONTEXT_KEYS (listed in `dropped`).
 */
export function splitWireKeys(
  raw: DriverMessage,
  keepMessage = true,
): {
  /** The body without context and wire keys (empty with `keepMessage: false`). */
  message: DriverMessage;
  /** The `_context_*` keys, prefix removed, and the keys of a nested `_context` object. */
  ctx: Context;
  /** `_unique_id`, `_msg_id`, `_reply_q`, `_timeout` as found (undefined when absent). */
  wire: WireKeys;
  /** Context keys of UNSAFE_CONTEXT_KEYS that were dropped; undefined when none was. */
  dropped?: string[];
} {
  const message: DriverMessage = {};
  const ctx: Context = {};
  // Every wire key is a field from the start, each stored by name: one shape for every message,
  // where keyed stores of the keys found gave each combination its own and every read of them a
  // megamorphic lookup.
  const wire: WireKeys = { _unique_id: undefined, _msg_id: undefined, _reply_q: undefined, _timeout: undefined };
  let dropped: string[] | undefined;
  for (const key in raw) {
    // Context and wire keys (and `__proto__`) start with an underscore; most keys do not.
    if (codeAt(key, 0) !== UNDERSCORE) {
      if (keepMessage) message[key] = raw[key];
      continue;
    }
    if (key === '__proto__') continue;
    if (key.startsWith(CONTEXT_PREFIX)) {
      const name = key.slice(CONTEXT_PREFIX.length);
      if (UNSAFE_CONTEXT_KEYS.has(name)) (dropped ??= []).push(name);
      else ctx[name] = raw[key];
    }
    // oslo's Kafka driver nests the context as one `_context` object (oslo-wire.md §2).
    else if (key === NESTED_CONTEXT_KEY && isPlainObject(raw[key])) dropped = copyNested(raw[key], ctx, dropped);
    else if (key === '_unique_id') wire._unique_id = raw[key];
    else if (key === '_msg_id') wire._msg_id = raw[key];
    else if (key === '_reply_q') wire._reply_q = raw[key];
    else if (key === '_timeout') wire._timeout = raw[key];
    else if (keepMessage) message[key] = raw[key];
  }
  return dropped === undefined ? { message, ctx, wire } : { message, ctx, wire, dropped };
}

/** A received RPC request, split and validated. */
export interface ParsedRpcRequest {
  /** `{method, args, namespace?, version}` with oslo's defaults (`args` {}, version `'1.0'`). */
  request: RpcRequest;
  /** The context, plus oslo's `client_timeout` (the raw `_timeout`, seconds or null). */
  ctx: Context;
  /** `_unique_id`, for duplicate suppression. */
  uniqueId?: string;
  /** `_msg_id` of a call; undefined for a cast. */
  msgId?: string;
  /** `_reply_q` of a call. */
  replyQueue?: string;
  /** Call-monitor window in ms, from `_timeout` (seconds on the wire); undefined when none. */
  callMonitorTimeout?: number;
  /** Context keys of UNSAFE_CONTEXT_KEYS the sender wrote and the context does not have. */
  droppedContextKeys?: readonly string[];
}

/** Validates and splits an RPC request body. Throws MalformedMessage when it cannot be dispatched. */
export function parseRpcRequest(raw: DriverMessage): ParsedRpcRequest {
  const { method, args, namespace, version } = raw;
  if (typeof method !== 'string' || method === '') throw new MalformedMessage('RPC message without a "method" string');
  if (args !== undefined && args !== null && !isPlainObject(args)) throw new MalformedMessage('RPC message "args" is not an object');
  if (namespace !== undefined && namespace !== null && typeof namespace !== 'string') throw new MalformedMessage('RPC message "namespace" is neither a string nor null');
  if (version !== undefined && version !== null && typeof version !== 'string') throw new MalformedMessage('RPC message "version" is not a string');
  const { ctx, wire, dropped } = splitWireKeys(raw, false);
  // A wire key of another type is not one oslo wrote: read as absent, a call would run as a cast.
  optionalString(wire._unique_id, 'RPC message "_unique_id"');
  optionalString(wire._msg_id, 'RPC message "_msg_id"');
  optionalString(wire._reply_q, 'RPC message "_reply_q"');
  if (wire._timeout !== undefined && wire._timeout !== null && typeof wire._timeout !== 'number') throw new MalformedMessage('RPC message "_timeout" is neither a number nor null');
  const request: RpcRequest = { method, args: (args as Record<string, unknown> | null | undefined) ?? {}, namespace: namespace ?? undefined, version: version ?? '1.0' };
  const timeout = typeof wire._timeout === 'number' && Number.isFinite(wire._timeout) ? wire._timeout : null;
  ctx.client_timeout = timeout;
  return {
    request,
    ctx,
    uniqueId: stringOrUndefined(wire._unique_id),
    msgId: stringOrUndefined(wire._msg_id),
    replyQueue: stringOrUndefined(wire._reply_q),
    callMonitorTimeout: timeout !== null && timeout > 0 ? timeout * 1000 : undefined,
    droppedContextKeys: dropped,
  };
}

/** A received notification, split and validated. */
export interface ParsedNotification {
  /** The oslo 1.10 dict without wire and context keys. */
  notification: ReceivedNotification;
  /** The `_context_*` keys, prefix removed. */
  ctx: Context;
  /** `_unique_id`, else `message_id` (oslo's Kafka records carry no `_unique_id`): for duplicate suppression. */
  uniqueId?: string;
  /** `message_id`, else `_unique_id`. */
  messageId?: string;
  /** Context keys of UNSAFE_CONTEXT_KEYS the sender wrote and the context does not have. */
  droppedContextKeys?: readonly string[];
}

/**
 * Validates and splits a notification body. Throws MalformedMessage when it cannot be dispatched.
 * `raw` is taken over, as a freshly decoded body is: in oslo's Kafka layout (no key but `_context`
 * starting with an underscore) it becomes the notification itself, its `_context` moved out into
 * the context, instead of every key being copied into a new object.
 */
export function parseNotification(raw: DriverMessage): ParsedNotification {
  if (typeof raw.event_type !== 'string') throw new MalformedMessage('Notification without an "event_type" string');
  if (typeof raw.priority !== 'string') throw new MalformedMessage('Notification without a "priority" string');
  if (!('payload' in raw)) throw new MalformedMessage('Notification without a "payload"');
  // Handlers are promised strings (or null) here; `_unique_id` decides duplicates.
  optionalString(raw.publisher_id, 'Notification "publisher_id"');
  optionalString(raw.message_id, 'Notification "message_id"');
  optionalString(raw.timestamp, 'Notification "timestamp"');
  optionalString(raw._unique_id, 'Notification "_unique_id"');
  const nested = onlyNestedContext(raw);
  if (nested !== undefined) {
    // Deleting the last key added (where oslo's Kafka driver and tidings write `_context`) keeps V8's fast object layout.
    delete raw[NESTED_CONTEXT_KEY];
    const messageId = stringOrUndefined(raw.message_id);
    return { notification: raw as ReceivedNotification, ctx: nested, uniqueId: messageId, messageId };
  }
  const { message, ctx, wire, dropped } = splitWireKeys(raw);
  const uniqueId = stringOrUndefined(wire._unique_id);
  const messageId = stringOrUndefined(message.message_id);
  return { notification: message as ReceivedNotification, ctx, uniqueId: uniqueId ?? messageId, messageId: messageId ?? uniqueId, droppedContextKeys: dropped };
}

/**
 * The `_context` object of a body in oslo's Kafka layout, to be the context as it is: undefined
 * when `_context` is missing or not a plain object, when it has a member of UNSAFE_CONTEXT_KEYS
 * (copied without it instead), or when another key starts with an underscore (context or wire keys,
 * `__proto__`). A body without `_context` (the AMQP layouts) costs one lookup, not a pass over
 * its keys, which splitWireKeys makes anyway.
 */
function onlyNestedContext(raw: DriverMessage): Context | undefined {
  const nested = raw[NESTED_CONTEXT_KEY];
  if (!isPlainObject(nested) || Object.hasOwn(nested, '__proto__') || Object.hasOwn(nested, 'constructor') || Object.hasOwn(nested, 'prototype')) return undefined;
  for (const key in raw) if (codeAt(key, 0) === UNDERSCORE && key !== NESTED_CONTEXT_KEY) return undefined;
  return nested;
}

/** The body around an inner message: oslo's 2.0 envelope, or (`bare`) the inner message itself, oslo's 1.0 form. */
function wrap(innerJson: string, bare: boolean | undefined): string {
  return bare === true ? innerJson : envelopeJson(innerJson);
}

/**
 * The JSON body of a reply (`'heartbeat'`: a non-final empty one), enveloped unless `bare` (see
 * `ReplySender.bareReplies`). Always carries `result`, `failure` (null or oslo's JSON string) and
 * `ending`, as Python clients require. A result JSON cannot carry becomes a failure reply, so the
 * caller never hangs on it.
 */
export function encodeReply(msgId: string, reply: RpcReply | 'heartbeat', logger?: Logger, maxBytes?: number, bare?: boolean): string {
  if (reply === 'heartbeat') return wrap(JSON.stringify({ result: null, failure: null, ending: false, _msg_id: msgId, _unique_id: newHexId() }), bare);
  const failed = reply.failure !== undefined;
  const inner: DriverMessage = {
    result: failed ? null : (reply.result ?? null),
    failure: failed ? serializeFailure(reply.failure) : null,
    ending: true,
    _msg_id: msgId,
    _unique_id: newHexId(),
  };
  let body: string;
  try {
    body = wrap(JSON.stringify(inner), bare);
  } catch (err) {
    logger?.error('RPC result is not JSON-serialisable; replying with a failure', { msgId, reason: (err as Error).message });
    inner.result = null;
    inner.failure = serializeFailure(new InvalidArgument('result', 'a JSON-serialisable value', reply.result, { cause: err }));
    return wrap(JSON.stringify(inner), bare);
  }
  try {
    return checkMessageSize(body, maxBytes, 'result');
  } catch (err) {
    // The caller gets the typed error at once instead of waiting out its timeout.
    logger?.error('RPC reply is over max_message_bytes; replying with a failure', { msgId, reason: (err as Error).message });
    inner.result = null;
    inner.failure = serializeFailure(err);
    return wrap(JSON.stringify(inner), bare);
  }
}

/** What a call adds to its request: where and how the reply comes back. */
export interface CallAddressing {
  /** `_msg_id`: the id the reply carries. */
  readonly msgId: string;
  /** `_reply_q`: the caller transport's reply address. */
  readonly replyQueue: string;
  /** Call-monitor window in ms; `_timeout` carries it in seconds (null when none). */
  readonly callMonitorTimeout?: number;
}

/**
 * The JSON body of an RPC request (oslo-wire.md §1.6): the message, the flattened context, a
 * fresh `_unique_id` and, for a call, `_msg_id`/`_reply_q`/`_timeout`; in oslo's 2.0 envelope
 * unless `bare` (oslo's 1.0 form, which every reader takes: `deserializeEnvelope`). A value JSON
 * cannot carry fails with InvalidArgument naming the context or the message; nothing is sent.
 * So does a body over `maxBytes` (the driver's `maxMessageBytes`, see checkMessageSize).
 */
export function encodeRpcRequest(message: DriverMessage, ctx: Context, call?: CallAddressing, maxBytes?: number, bare?: boolean): string {
  let wire = '';
  if (call !== undefined) {
    const timeout = call.callMonitorTimeout !== undefined ? call.callMonitorTimeout / 1000 : null;
    wire = `,"_msg_id":${JSON.stringify(call.msgId)},"_reply_q":${JSON.stringify(call.replyQueue)},"_timeout":${JSON.stringify(timeout)}`;
  }
  return checkMessageSize(wrap(innerJson(message, `${wire},"_unique_id":"${newHexId()}"`, ctx), bare), maxBytes);
}

/** How a notification's context is laid out on the wire. */
export interface NotificationLayout {
  /**
   * `flat`: `_context_<key>` members and a `_unique_id` (oslo's AMQP drivers, §1.10); `nested`:
   * one `_context` object, no `_unique_id`, always enveloped whatever the version (oslo's Kafka
   * driver, §2; readers dedupe on `message_id` then). @default 'flat'
   */
  readonly contextLayout?: 'flat' | 'nested';
}

/**
 * The JSON body of a notification (oslo-wire.md §1.10): version 2.0 is enveloped (oslo
 * `messagingv2`), 1.0 the raw dict (`messaging`). InvalidArgument as for encodeRpcRequest,
 * and over `maxBytes`.
 */
export function encodeNotification(message: DriverMessage, ctx: Context, version: 1.0 | 2.0 = 2.0, layout: NotificationLayout = {}, maxBytes?: number): string {
  if (version !== 1.0 && version !== 2.0) throw new InvalidArgument('version', '1.0 or 2.0', version);
  if (layout.contextLayout === 'nested') return checkMessageSize(envelopeJson(innerJson(message, '', ctx, true)), maxBytes);
  const inner = innerJson(message, `,"_unique_id":"${newHexId()}"`, ctx);
  return checkMessageSize(wrap(inner, version === 1.0), maxBytes);
}

/**
 * The JSON text of `{...message, <wire keys>, _context_<key>: ctx[key]...}`, written as text
 * instead of building that object: every `_context_*` key added to a copied object gives V8 a new
 * hidden class, which made encoding a call request cost 7–10 µs; as text it is ~1.9 µs (a call
 * with `{i, text}` args and a two-key context, measured in one process). `wire` is the wire keys'
 * text, each starting with a comma. Members JSON leaves out (undefined, functions) are left out.
 * `nested` writes the context as one `_context` object instead (oslo's Kafka layout).
 */
function innerJson(message: DriverMessage, wire: string, ctx: Context, nested = false): string {
  try {
    let extra = wire;
    if (nested) {
      extra += `,"${NESTED_CONTEXT_KEY}":${JSON.stringify(ctx) ?? '{}'}`;
    } else {
      for (const key of Object.keys(ctx)) {
        const value = JSON.stringify(ctx[key]);
        if (value !== undefined) extra += `,${JSON.stringify(CONTEXT_PREFIX + key)}:${value}`;
      }
    }
    const body = JSON.stringify(message);
    if (extra === '') return body;
    return body.length > 2 ? `${body.slice(0, -1)}${extra}}` : `{${extra.slice(1)}}`;
  } catch (err) {
    const badContext = !isJsonable(ctx);
    throw new InvalidArgument(badContext ? 'context' : 'message', 'a JSON-serialisable value (no BigInt, no cycles)', badContext ? ctx : message, { cause: err });
  }
}

function isJsonable(value: unknown): boolean {
  try {
    JSON.stringify(value);
    return true;
  } catch {
    return false;
  }
}

/** Copies a nested `_context`'s members but those of UNSAFE_CONTEXT_KEYS (Object.assign would set the prototype); returns the dropped ones. */
function copyNested(nested: Record<string, unknown>, ctx: Context, dropped: string[] | undefined): string[] | undefined {
  for (const key in nested) {
    if (UNSAFE_CONTEXT_KEYS.has(key)) (dropped ??= []).push(key);
    else ctx[key] = nested[key];
  }
  return dropped;
}

/** Throws MalformedMessage unless `value` is a string, null or absent. */
function optionalString(value: unknown, what: string): void {
  if (value !== undefined && value !== null && typeof value !== 'string') throw new MalformedMessage(`${what} is neither a string nor null`);
}

/** A string member as it is; anything else is absent. */
function stringOrUndefined(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
