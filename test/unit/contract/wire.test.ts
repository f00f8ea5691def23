// wire.ts: the oslo request/notification/reply shapes shared by every driver.
import { describe, expect, it } from 'vitest';
import { deserializeEnvelope } from '../../../src/contract/envelope.js';
import { encodeNotification, encodeReply, parseNotification, parseRpcRequest, splitWireKeys } from '../../../src/contract/wire.js';
import { MalformedMessage } from '../../../src/core/errors.js';
import { createMemoryLogger } from '../../../src/core/logger.js';

describe('parseRpcRequest', () => {
  it('splits message, context (with client_timeout) and wire keys; _timeout seconds become ms', () => {
    const req = parseRpcRequest({ method: 'echo', args: { x: 1 }, version: '1.2', _msg_id: 'm1', _reply_q: 'reply_1', _timeout: 4, _unique_id: 'u1', _context_user_id: 'u' });
    expect(req.request).toEqual({ method: 'echo', args: { x: 1 }, namespace: undefined, version: '1.2' });
    expect(req.ctx).toEqual({ user_id: 'u', client_timeout: 4 });
    expect(req).toMatchObject({ msgId: 'm1', replyQueue: 'reply_1', uniqueId: 'u1', callMonitorTimeout: 4000 });
  });

  it('a cast has no reply coordinates; missing args become {}; null _timeout means no call monitor', () => {
    const req = parseRpcRequest({ method: 'm', _timeout: null });
    expect(req.request).toEqual({ method: 'm', args: {}, namespace: undefined, version: '1.0' });
    expect(req.ctx).toEqual({ client_timeout: null });
    expect(req.msgId).toBeUndefined();
    expect(req.callMonitorTimeout).toBeUndefined();
  });

  it('refuses a request without a method string or with non-object args', () => {
    expect(() => parseRpcRequest({ args: {} })).toThrow(MalformedMessage);
    expect(() => parseRpcRequest({ method: '' })).toThrow(MalformedMessage);
    expect(() => parseRpcRequest({ method: 'm', args: [1] })).toThrow(MalformedMessage);
  });

  it('refuses a namespace or version of the wrong type; null namespace and version take the defaults', () => {
    expect(() => parseRpcRequest({ method: 'm', namespace: 5 })).toThrow(/namespace/);
    expect(() => parseRpcRequest({ method: 'm', version: 1.2 })).toThrow(/version/);
    expect(parseRpcRequest({ method: 'm', namespace: null, version: null }).request).toEqual({ method: 'm', args: {}, namespace: undefined, version: '1.0' });
  });
});

describe('parseNotification', () => {
  it('splits a notification and takes message_id (else _unique_id) as its id', () => {
    const n = parseNotification({ message_id: 'id-1', event_type: 'e', priority: 'INFO', payload: {}, timestamp: 't', _unique_id: 'u', _context_a: 1 });
    expect(n).toEqual({ notification: { message_id: 'id-1', event_type: 'e', priority: 'INFO', payload: {}, timestamp: 't' }, ctx: { a: 1 }, uniqueId: 'u', messageId: 'id-1' });
    expect(parseNotification({ event_type: 'e', priority: 'INFO', payload: null, _unique_id: 'u2' }).messageId).toBe('u2');
  });

  it('refuses a notification missing event_type, priority or payload', () => {
    expect(() => parseNotification({ priority: 'INFO', payload: 1 })).toThrow(MalformedMessage);
    expect(() => parseNotification({ event_type: 'e', payload: 1 })).toThrow(MalformedMessage);
    expect(() => parseNotification({ event_type: 'e', priority: 'INFO' })).toThrow(MalformedMessage);
  });
});

describe('splitWireKeys', () => {
  it('drops a __proto__ key from the wire instead of assigning a prototype', () => {
    const raw = JSON.parse('{"method":"m","__proto__":{"polluted":true}}');
    const { message } = splitWireKeys(raw);
    expect(Object.getPrototypeOf(message)).toBe(Object.prototype);
    expect((message as { polluted?: unknown }).polluted).toBeUndefined();
  });
});

describe('encodeReply', () => {
  const inner = (body: string) => deserializeEnvelope(JSON.parse(body));

  it('always carries result, failure and ending (oslo clients read all three)', () => {
    expect(inner(encodeReply('m1', { result: 3 }))).toMatchObject({ result: 3, failure: null, ending: true, _msg_id: 'm1' });
    expect(inner(encodeReply('m1', { result: undefined }))).toMatchObject({ result: null, failure: null, ending: true });
    expect(inner(encodeReply('m1', 'heartbeat'))).toMatchObject({ result: null, failure: null, ending: false, _msg_id: 'm1' });
    const failed = inner(encodeReply('m1', { failure: new TypeError('bad') }));
    expect(failed.result).toBeNull();
    expect(JSON.parse(failed.failure as string)).toMatchObject({ class: 'TypeError', module: 'builtins', message: 'bad' });
    expect(inner(encodeReply('m1', { result: 1 }))._unique_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('turns a result JSON cannot carry into a failure reply and logs it without the value', () => {
    const logger = createMemoryLogger();
    const body = inner(encodeReply('m1', { result: { n: 10n } }, logger));
    expect(body.result).toBeNull();
    expect(JSON.parse(body.failure as string).class).toBe('InvalidArgument');
    expect(logger.records.map((r) => r.level)).toEqual(['error']);
  });
});

describe("oslo's Kafka notification layout (nested _context, no _unique_id)", () => {
  it('writes the context as one _context object, no _unique_id, enveloped whatever the version', () => {
    for (const version of [1.0, 2.0] as const) {
      const body = JSON.parse(encodeNotification({ event_type: 'e', priority: 'INFO', payload: { a: 1 }, message_id: 'm1' }, { user: 'u', n: 2 }, version, { contextLayout: 'nested' }));
      const inner = JSON.parse(body['oslo.message']);
      expect(inner).toEqual({ event_type: 'e', priority: 'INFO', payload: { a: 1 }, message_id: 'm1', _context: { user: 'u', n: 2 } });
    }
  });

  it("reads oslo's Kafka record as it is: the context from _context, the rest the notification, message_id the id", () => {
    const raw = JSON.parse('{"message_id":"m1","publisher_id":"p","event_type":"e","priority":"INFO","payload":{"a":1},"timestamp":"t","_context":{"user":"u"}}');
    const parsed = parseNotification(raw);
    expect(parsed).toEqual({
      notification: { message_id: 'm1', publisher_id: 'p', event_type: 'e', priority: 'INFO', payload: { a: 1 }, timestamp: 't' },
      ctx: { user: 'u' },
      uniqueId: 'm1',
      messageId: 'm1',
    });
    // _context first, or beside other underscore keys: the same split.
    const first = parseNotification(JSON.parse('{"_context":{"user":"u"},"message_id":"m1","event_type":"e","priority":"INFO","payload":null}'));
    expect(first.ctx).toEqual({ user: 'u' });
    expect(first.notification).toEqual({ message_id: 'm1', event_type: 'e', priority: 'INFO', payload: null });
    const mixed = parseNotification(JSON.parse('{"message_id":"m1","event_type":"e","priority":"INFO","payload":null,"_unique_id":"u1","_context_a":1,"_context":{"user":"u"}}'));
    expect(mixed.ctx).toEqual({ a: 1, user: 'u' });
    expect(mixed.notification).toEqual({ message_id: 'm1', event_type: 'e', priority: 'INFO', payload: null });
    expect(mixed.uniqueId).toBe('u1');
    // A _context that is not an object is no context: it stays a member of the notification.
    const odd = parseNotification(JSON.parse('{"event_type":"e","priority":"INFO","payload":null,"_context":"x"}'));
    expect(odd.ctx).toEqual({});
    expect(odd.notification).toEqual({ event_type: 'e', priority: 'INFO', payload: null, _context: 'x' });
  });

  it('reads a nested _context into the context, dedupes on message_id without _unique_id, and ignores a __proto__ member', () => {
    const raw = JSON.parse('{"event_type":"e","priority":"INFO","payload":{},"message_id":"m1","_context":{"user":"u","__proto__":{"polluted":true}}}');
    const parsed = parseNotification(raw);
    expect(parsed.ctx).toEqual({ user: 'u' });
    expect(Object.getPrototypeOf(parsed.ctx)).toBe(Object.prototype);
    expect(parsed.notification).not.toHaveProperty('_context');
    expect(parsed.uniqueId).toBe('m1');
    expect(parsed.messageId).toBe('m1');
  });
});
