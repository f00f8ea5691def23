// oslo's message envelope (2.0) and context flattening: the shapes every wire format shares.
import { MalformedMessage } from '../errors.js';
import type { Context, DriverMessage } from './types.js';

export const ENVELOPE_VERSION = '2.0';
export const VERSION_KEY = 'oslo.version';
export const MESSAGE_KEY = 'oslo.message';

export interface Envelope {
  [VERSION_KEY]: string;
  [MESSAGE_KEY]: string;
}

/** Wraps a message into the 2.0 envelope: the inner message JSON-encoded into a string. */
export function serializeEnvelope(message: DriverMessage): Envelope {
  return { [VERSION_KEY]: ENVELOPE_VERSION, [MESSAGE_KEY]: JSON.stringify(message) };
}

/**
 * Unwraps a decoded body. A dict with both envelope keys must carry a compatible version
 * (same major, minor <= 0); anything else that is a plain object passes through as a 1.0
 * message. Throws MalformedMessage for non-objects, bad versions or an inner non-object.
 */
export function deserializeEnvelope(body: unknown): DriverMessage {
  if (!isPlainObject(body)) throw new MalformedMessage(`Message body is not a JSON object (got ${kind(body)})`);
  if (!(VERSION_KEY in body) || !(MESSAGE_KEY in body)) return body;
  const version = body[VERSION_KEY];
  if (typeof version !== 'string' || !/^\d+\.\d+$/.test(version)) throw new MalformedMessage(`Unsupported envelope version ${JSON.stringify(version)}`);
  const [major, minor] = version.split('.').map(Number);
  if (major !== 2 || minor > 0) throw new MalformedMessage(`Unsupported envelope version ${version}; this side speaks ${ENVELOPE_VERSION}`);
  const inner = body[MESSAGE_KEY];
  if (typeof inner !== 'string') throw new MalformedMessage('Envelope oslo.message is not a string');
  let parsed: unknown;
  try {
    parsed = JSON.parse(inner);
  } catch (err) {
    throw new MalformedMessage('Envelope oslo.message is not valid JSON', { cause: err });
  }
  if (!isPlainObject(parsed)) throw new MalformedMessage(`Envelope oslo.message is not a JSON object (got ${kind(parsed)})`);
  return parsed;
}

/** Parses a raw body (bytes or string) into a message, enveloped or not. Throws MalformedMessage. */
export function decodeBody(raw: Uint8Array | string): DriverMessage {
  const text = typeof raw === 'string' ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new MalformedMessage('Message body is not valid JSON', { cause: err });
  }
  return deserializeEnvelope(body);
}

const CONTEXT_PREFIX = '_context_';

/** Adds the context to a message as flattened `_context_<key>` entries (AMQP style). */
export function packContext(message: DriverMessage, ctx: Context): DriverMessage {
  for (const key of Object.keys(ctx)) message[CONTEXT_PREFIX + key] = ctx[key];
  return message;
}

/** Removes `_context_*` entries from a message and returns them as a context. */
export function unpackContext(message: DriverMessage): Context {
  const ctx: Context = {};
  for (const key of Object.keys(message)) {
    if (key.startsWith(CONTEXT_PREFIX)) {
      ctx[key.slice(CONTEXT_PREFIX.length)] = message[key];
      delete message[key];
    }
  }
  return ctx;
}

/** A new random id as oslo writes `_msg_id`/`_unique_id`: uuid4 hex without dashes. */
export function newHexId(): string {
  return crypto.randomUUID().replace(/-/g, '');
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function kind(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}

/** A JSON round trip, so that in-process payloads change (or fail) exactly as on a broker. */
export function jsonRoundTrip<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
