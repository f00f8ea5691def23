// oslo's message envelope (2.0) and context flattening: the shapes every wire format shares.
import { randomFillSync } from 'node:crypto';
import { MalformedMessage } from '../core/errors.js';
import { isPlainObject } from '../core/json-check.js';
import type { DriverMessage } from './types.js';

/** The envelope version tidings writes (oslo `_VERSION`). */
export const ENVELOPE_VERSION = '2.0';
/** Envelope key holding the version. */
export const VERSION_KEY = 'oslo.version';
/** Envelope key holding the JSON-encoded inner message. */
export const MESSAGE_KEY = 'oslo.message';

/** oslo's 2.0 envelope: the inner message as a JSON string beside its version. */
export interface Envelope {
  /** `'2.0'`. */
  [VERSION_KEY]: string;
  /** The inner message, JSON-encoded. */
  [MESSAGE_KEY]: string;
}

/** The 2.0 envelope's JSON text around an already encoded inner message (the same text as `JSON.stringify(serializeEnvelope(m))`). */
export function envelopeJson(innerJson: string): string {
  return `{"${VERSION_KEY}":"${ENVELOPE_VERSION}","${MESSAGE_KEY}":${JSON.stringify(innerJson)}}`;
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
  if (version !== ENVELOPE_VERSION) checkEnvelopeVersion(version);
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

/** Throws MalformedMessage unless `version` is compatible with 2.0 (same major, minor <= 0). */
function checkEnvelopeVersion(version: unknown): void {
  if (typeof version !== 'string' || !/^\d+\.\d+$/.test(version)) throw new MalformedMessage(`Unsupported envelope version ${JSON.stringify(version)}`);
  const [major, minor] = version.split('.').map(Number);
  if (major !== 2 || minor > 0) throw new MalformedMessage(`Unsupported envelope version ${version}; this side speaks ${ENVELOPE_VERSION}`);
}

/** Parses a raw body (bytes or string) into a message, enveloped or not. Throws MalformedMessage. */
export function decodeBody(raw: Uint8Array | string): DriverMessage {
  const text = typeof raw === 'string' ? raw : Buffer.isBuffer(raw) ? raw.toString('utf8') : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new MalformedMessage('Message body is not valid JSON', { cause: err });
  }
  return deserializeEnvelope(body);
}

const ID_BYTES = 16;
const ID_POOL_SIZE = ID_BYTES * 256;
const idPool = Buffer.allocUnsafe(ID_POOL_SIZE);
let idOffset = ID_POOL_SIZE;

/**
 * A new random id as oslo writes `_msg_id`/`_unique_id`: uuid4 hex without dashes. Random bytes
 * come from a pool refilled 256 ids at a time (as randomUUID does): ids are made on every send.
 */
export function newHexId(): string {
  if (idOffset >= ID_POOL_SIZE) {
    randomFillSync(idPool);
    idOffset = 0;
  }
  const at = idOffset;
  idOffset += ID_BYTES;
  idPool[at + 6] = (idPool[at + 6] & 0x0f) | 0x40; // version 4
  idPool[at + 8] = (idPool[at + 8] & 0x3f) | 0x80; // RFC 4122 variant
  return idPool.toString('hex', at, at + ID_BYTES);
}

function kind(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}
