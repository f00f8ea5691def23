// Hostile bodies through the one inbound pipeline every driver uses: wrong types in every envelope
// field and prototype keys in the context never throw, never reach a prototype, and are logged.
import { describe, expect, it } from 'vitest';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { NotificationInbound, RpcInbound, type DeliverySettler } from '../../../src/contract/inbound.js';
import { envelopeJson } from '../../../src/contract/envelope.js';

interface Delivery {
  tag: number;
}

function pipeline() {
  const settled: string[] = [];
  const settler: DeliverySettler<Delivery> = {
    ack: (d) => (settled.push(`ack ${d.tag}`), true),
    requeue: (d) => void settled.push(`requeue ${d.tag}`),
    reject: (d) => void settled.push(`reject ${d.tag}`),
    describe: (d) => ({ tag: d.tag }),
  };
  const logger = createMemoryLogger();
  const rpc = new RpcInbound({ settler, logger, dedupWindow: 16, replies: { sendReply: () => {}, isReplyAddress: () => true } });
  const notify = new NotificationInbound({ settler, logger, dedupWindow: 16 });
  return { rpc, notify, settled, logger };
}

/** Both ways a body arrives: bare (oslo 1.0) and in the 2.0 envelope. */
const bodies = (message: Record<string, unknown>): string[] => [JSON.stringify(message), envelopeJson(JSON.stringify(message))];

const WRONG_VALUES: unknown[] = [null, 0, -1, 1.5, true, '', 'x', [], [1, 'a'], {}, { __proto__: { is_admin: true } }, 'x'.repeat(10_000)];

const RPC = { method: 'm', args: { a: 1 }, namespace: null, version: '1.0', _unique_id: 'u', _msg_id: 'c', _reply_q: 'reply_1', _timeout: null, _context_user: 'u1' };
const NOTIFICATION = { message_id: 'n', publisher_id: 'p', event_type: 'e', priority: 'INFO', payload: {}, timestamp: 't', _unique_id: 'u', _context_user: 'u1' };

/** Neither the context nor its prototype has a key that the wire smuggled in. */
function expectCleanContext(ctx: Record<string, unknown>): void {
  expect(Object.getPrototypeOf(ctx)).toBe(Object.prototype);
  expect((ctx as { is_admin?: unknown }).is_admin).toBeUndefined();
  expect(Object.hasOwn(ctx, 'constructor') || Object.hasOwn(ctx, 'prototype') || Object.hasOwn(ctx, '__proto__')).toBe(false);
}

describe('hostile envelopes', () => {
  it('a wrong type in any RPC field is dispatched or rejected as malformed, never thrown', () => {
    let tag = 0;
    for (const field of Object.keys(RPC)) {
      for (const value of WRONG_VALUES) {
        for (const body of bodies({ ...RPC, _unique_id: `u${tag}`, [field]: value })) {
          const { rpc, settled } = pipeline();
          const delivery = { tag: ++tag };
          const msg = rpc.receive(body, delivery);
          if (msg === undefined) expect(settled).toEqual([`reject ${tag}`]);
          else {
            expect(settled).toEqual([`ack ${tag}`]);
            expectCleanContext(msg.ctx);
          }
        }
      }
    }
    expect(tag).toBe(Object.keys(RPC).length * WRONG_VALUES.length * 2);
  });

  it('a wrong type in any notification field is dispatched or rejected as malformed, never thrown', () => {
    let tag = 0;
    for (const field of Object.keys(NOTIFICATION)) {
      for (const value of WRONG_VALUES) {
        for (const body of bodies({ ...NOTIFICATION, _unique_id: `u${tag}`, [field]: value })) {
          const { notify, settled } = pipeline();
          const msg = notify.receive(body, { tag: ++tag });
          if (msg === undefined) expect(settled).toEqual([`reject ${tag}`]);
          else expectCleanContext(msg.ctx);
        }
      }
    }
  });

  it('random bytes and truncated JSON are rejected as malformed', () => {
    const { rpc, notify, settled } = pipeline();
    const whole = JSON.stringify(RPC);
    const samples = [Buffer.from([0xff, 0x00, 0x7b, 0x22]), '', '{', whole.slice(0, whole.length - 3), '[]', '"x"', '1', 'null', envelopeJson('{"method":')];
    samples.forEach((body, i) => {
      expect(rpc.receive(body, { tag: i })).toBeUndefined();
      expect(notify.receive(body, { tag: 100 + i })).toBeUndefined();
    });
    expect([...settled].sort()).toEqual([...samples.map((_, i) => `reject ${i}`), ...samples.map((_, i) => `reject ${100 + i}`)].sort());
  });

  for (const key of ['__proto__', 'constructor', 'prototype']) {
    it(`drops the context key ${key} (flat and nested) and logs it once per message`, () => {
      const { rpc, notify, logger } = pipeline();
      const hostile = { is_admin: true };
      const flat = rpc.receive(JSON.stringify({ ...RPC, [`_context_${key}`]: hostile }), { tag: 1 })!;
      expectCleanContext(flat.ctx);
      expect(flat.ctx).toEqual({ user: 'u1', client_timeout: null });
      // oslo's Kafka layout: the whole context nested under `_context`.
      const nestedText = `{"event_type":"e","priority":"INFO","payload":{},"message_id":"n2","_context":{"user":"u1","${key}":{"is_admin":true}}}`;
      const nested = notify.receive(nestedText, { tag: 2 })!;
      expectCleanContext(nested.ctx);
      expect(nested.ctx).toEqual({ user: 'u1' });
      const flatNotification = notify.receive(JSON.stringify({ ...NOTIFICATION, _unique_id: 'u3', [`_context_${key}`]: hostile }), { tag: 3 })!;
      expectCleanContext(flatNotification.ctx);
      const warnings = logger.records.filter((r) => r.level === 'warn');
      expect(warnings.map((r) => [r.msg, r.fields.tag, r.fields.keys])).toEqual([
        ['Dropped context keys that would reach a prototype', 1, [key]],
        ['Dropped context keys that would reach a prototype', 2, [key]],
        ['Dropped context keys that would reach a prototype', 3, [key]],
      ]);
    });
  }
});
