// oslo envelope 2.0, 1.0 pass-through, body decoding and context packing.
import { describe, expect, it } from 'vitest';
import { MalformedMessage } from '../../../src/core/errors.js';
import {
  decodeBody,
  deserializeEnvelope,
  ENVELOPE_VERSION,
  MESSAGE_KEY,
  newHexId,
  envelopeJson,
  serializeEnvelope,
  VERSION_KEY,
} from '../../../src/contract/envelope.js';

describe('envelope', () => {
  const msg = { method: 'echo', args: { x: [1, 'a'], nested: { ok: true } }, version: '1.2', _unique_id: 'abc' };

  it('serializes to the two oslo keys with the inner message JSON-encoded', () => {
    const env = serializeEnvelope(msg);
    expect(Object.keys(env).sort()).toEqual([MESSAGE_KEY, VERSION_KEY].sort());
    expect(env[VERSION_KEY]).toBe('2.0');
    expect(ENVELOPE_VERSION).toBe('2.0');
    expect(typeof env[MESSAGE_KEY]).toBe('string');
    expect(JSON.parse(env[MESSAGE_KEY])).toEqual(msg);
  });

  it('round-trips through deserializeEnvelope and decodeBody', () => {
    expect(deserializeEnvelope(serializeEnvelope(msg))).toEqual(msg);
    const wire = JSON.stringify(serializeEnvelope(msg));
    expect(decodeBody(wire)).toEqual(msg);
    expect(decodeBody(new TextEncoder().encode(wire))).toEqual(msg);
    const buf = Buffer.from(`xx${wire}yy`);
    expect(decodeBody(buf.subarray(2, buf.length - 2))).toEqual(msg);
  });

  it('decodes a body Python oslo wrote (spaces after separators)', () => {
    const py = '{"oslo.version": "2.0", "oslo.message": "{\\"method\\": \\"echo\\", \\"args\\": {\\"x\\": [1, \\"a\\"]}, \\"_context_user_id\\": \\"u1\\"}"}';
    expect(decodeBody(py)).toEqual({ method: 'echo', args: { x: [1, 'a'] }, _context_user_id: 'u1' });
  });

  it('passes a 1.0 (un-enveloped) dict through unchanged, also with only one envelope key', () => {
    const raw = { event_type: 'a.b', payload: { k: 'v' } };
    expect(deserializeEnvelope(raw)).toBe(raw);
    const half = { [VERSION_KEY]: '9.9', payload: 1 };
    expect(deserializeEnvelope(half)).toBe(half);
    const otherHalf = { [MESSAGE_KEY]: 'not json', payload: 1 };
    expect(deserializeEnvelope(otherHalf)).toBe(otherHalf);
  });

  it.each(['3.0', '2.1', '1.0', '2', 'x', '', '2.0.1'])('refuses envelope version %j', (version) => {
    expect(() => deserializeEnvelope({ [VERSION_KEY]: version, [MESSAGE_KEY]: '{}' })).toThrow(MalformedMessage);
  });

  it('refuses a non-string version and a non-string inner message', () => {
    expect(() => deserializeEnvelope({ [VERSION_KEY]: 2.0, [MESSAGE_KEY]: '{}' })).toThrow(MalformedMessage);
    expect(() => deserializeEnvelope({ [VERSION_KEY]: '2.0', [MESSAGE_KEY]: { method: 'x' } })).toThrow(/not a string/);
  });

  it('refuses an inner message that is not JSON, with the parse error as cause', () => {
    let err: unknown;
    try {
      deserializeEnvelope({ [VERSION_KEY]: '2.0', [MESSAGE_KEY]: '{nope' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(MalformedMessage);
    expect((err as MalformedMessage).cause).toBeInstanceOf(SyntaxError);
  });

  it.each(['[1,2]', '"str"', '42', 'null', 'true'])('refuses an inner message %s that is not an object', (inner) => {
    expect(() => deserializeEnvelope({ [VERSION_KEY]: '2.0', [MESSAGE_KEY]: inner })).toThrow(/not a JSON object/);
  });

  it.each([[[1, 2]], ['text'], [42], [null], [undefined], [true]])('refuses a non-object body %j', (body) => {
    expect(() => deserializeEnvelope(body)).toThrow(MalformedMessage);
  });

  it('decodeBody refuses bytes that are not JSON and JSON that is not an object', () => {
    expect(() => decodeBody('not json')).toThrow(MalformedMessage);
    expect(() => decodeBody(new Uint8Array([0xff, 0xfe]))).toThrow(MalformedMessage);
    expect(() => decodeBody('[1]')).toThrow(MalformedMessage);
  });
});

describe('envelopeJson', () => {
  it('is the same text as JSON.stringify(serializeEnvelope(m))', () => {
    for (const m of [{}, { method: 'm', args: { s: 'quote " backslash \\ newline \n é 𝄞' } }]) {
      expect(envelopeJson(JSON.stringify(m))).toBe(JSON.stringify(serializeEnvelope(m)));
    }
  });
});

describe('helpers', () => {
  it('newHexId is a 32-char lowercase hex uuid4 without dashes, unique', () => {
    const a = newHexId();
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(a[12]).toBe('4');
    expect(newHexId()).not.toBe(a);
  });
});
