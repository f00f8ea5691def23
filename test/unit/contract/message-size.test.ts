// max_message_bytes in the shared code every driver uses: the encoders refuse an oversized body
// before anything is sent, the inbound pipeline rejects one unparsed, and deep JSON is malformed.
import { describe, expect, it } from 'vitest';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { InvalidArgument } from '../../../src/core/errors.js';
import { DeliveryStats } from '../../../src/contract/delivery-stats.js';
import { envelopeJson } from '../../../src/contract/envelope.js';
import { NotificationInbound, RpcInbound, type DeliverySettler } from '../../../src/contract/inbound.js';
import { RpcMessage } from '../../../src/contract/messages.js';
import { checkMessageSize, DEFAULT_MAX_MESSAGE_BYTES, encodeNotification, encodeReply, encodeRpcRequest, parseRpcRequest } from '../../../src/contract/wire.js';

interface Delivery {
  tag: number;
}

function pipeline(maxMessageBytes?: number) {
  const settled: string[] = [];
  const settler: DeliverySettler<Delivery> = {
    ack: (d) => (settled.push(`ack ${d.tag}`), true),
    requeue: (d) => void settled.push(`requeue ${d.tag}`),
    reject: (d) => void settled.push(`reject ${d.tag}`),
    describe: (d) => ({ tag: d.tag }),
    address: () => 'topic.info',
  };
  const logger = createMemoryLogger();
  const stats = new DeliveryStats();
  const sent: string[] = [];
  const replies = { sendReply: (_q: string, _id: string, body: string) => void sent.push(body), isReplyAddress: () => true, maxMessageBytes };
  const rpc = new RpcInbound({ settler, logger, dedupWindow: 16, replies, stats, maxMessageBytes });
  const notify = new NotificationInbound({ settler, logger, dedupWindow: 16, stats, maxMessageBytes });
  return { rpc, notify, settled, logger, stats, sent };
}

const notification = (payload: unknown, id = 'n1') => envelopeJson(JSON.stringify({ message_id: id, publisher_id: 'p', event_type: 'e', priority: 'INFO', payload, timestamp: 't', _unique_id: id }));

describe('max_message_bytes: encoding', () => {
  it('defaults to 16 MiB', () => {
    expect(DEFAULT_MAX_MESSAGE_BYTES).toBe(16 * 1024 * 1024);
  });

  it('a notification, cast or call over the limit fails with InvalidArgument naming the field and the size', () => {
    const big = { text: 'x'.repeat(2000) };
    const attempts = [
      () => encodeNotification({ event_type: 'e', priority: 'INFO', payload: big }, {}, 2.0, {}, 1000),
      () => encodeNotification({ event_type: 'e', priority: 'INFO', payload: big }, {}, 2.0, { contextLayout: 'nested' }, 1000),
      () => encodeRpcRequest({ method: 'm', args: big }, {}, undefined, 1000),
      () => encodeRpcRequest({ method: 'm', args: big }, {}, { msgId: 'a', replyQueue: 'r' }, 1000),
    ];
    for (const attempt of attempts) {
      let err: unknown;
      try {
        attempt();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(InvalidArgument);
      expect((err as InvalidArgument).field).toBe('message');
      expect((err as InvalidArgument).message).toMatch(/at most 1000 bytes.*"2\d{3} bytes"/);
    }
  });

  it('counts UTF-8 bytes, not characters; 0 means no limit', () => {
    const text = 'é'.repeat(600); // 1200 bytes, 600 chars
    expect(() => checkMessageSize(text, 1000)).toThrow(InvalidArgument);
    expect(checkMessageSize(text, 1200)).toBe(text);
    expect(checkMessageSize(text, 0)).toBe(text);
    expect(encodeRpcRequest({ method: 'm', args: { t: 'x'.repeat(5000) } }, {}, undefined, 0)).toContain('xxxx');
  });

  it('an oversized reply becomes an InvalidArgument failure reply, so the caller learns at once', async () => {
    const body = encodeReply('m1', { result: 'x'.repeat(5000) }, undefined, 1000);
    expect(body.length).toBeLessThan(5000);
    const inner = JSON.parse(JSON.parse(body)['oslo.message']);
    expect(inner.result).toBeNull();
    expect(JSON.parse(inner.failure).class).toBe('InvalidArgument');
    // Through an RpcMessage: the reply sender's limit applies.
    const { sent } = pipeline(1000);
    const request = parseRpcRequest({ method: 'm', args: {}, _msg_id: 'c1', _reply_q: 'r', _unique_id: 'u' });
    const logger = createMemoryLogger();
    await new RpcMessage(request, { tag: 1 }, { sendReply: (_q, _id, b) => void sent.push(b), isReplyAddress: () => true, maxMessageBytes: 1000 }, logger).reply({ result: 'y'.repeat(5000) });
    expect(sent).toHaveLength(1);
    expect(sent[0]).not.toContain('yyyy');
    expect(JSON.parse(JSON.parse(JSON.parse(sent[0])['oslo.message']).failure).class).toBe('InvalidArgument');
  });
});

describe('max_message_bytes: the inbound pipeline', () => {
  it('rejects a received body over the limit as malformed, logged and counted, and goes on', () => {
    const { notify, settled, logger, stats } = pipeline(1000);
    expect(notify.receive(notification('x'.repeat(2000)), { tag: 1 })).toBeUndefined();
    expect(settled).toEqual(['reject 1']);
    const line = logger.records.find((r) => r.msg.startsWith('Rejecting a malformed message'));
    expect(line?.fields.reason).toMatch(/over max_message_bytes \(1000\)/);
    expect(stats.snapshot()[0]).toMatchObject({ address: 'topic.info', malformed: 1 });
    expect(notify.receive(notification('small', 'n2'), { tag: 2 })?.notification.payload).toBe('small');
  });

  it('sizes bytes, not characters, and a Uint8Array by its length', () => {
    const { notify, rpc, settled } = pipeline(1000);
    expect(notify.receive(notification('é'.repeat(450)), { tag: 1 })).toBeUndefined(); // < 1000 chars, > 1000 bytes
    const request = Buffer.from(JSON.stringify({ method: 'm', args: { t: 'x'.repeat(1000) } }));
    expect(rpc.receive(new Uint8Array(request), { tag: 2 })).toBeUndefined();
    expect(settled).toEqual(['reject 1', 'reject 2']);
  });

  it('without a limit accepts a large body', () => {
    const { notify } = pipeline(undefined);
    expect(notify.receive(notification('x'.repeat(100_000)), { tag: 1 })).toBeDefined();
  });

  it('JSON nested 100 000 deep is malformed, not a crash', () => {
    const { notify, rpc, settled } = pipeline(DEFAULT_MAX_MESSAGE_BYTES);
    const deep = [
      '['.repeat(100_000),
      '['.repeat(100_000) + ']'.repeat(100_000),
      envelopeJson('['.repeat(100_000)),
      '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000) + ']',
    ];
    let tag = 0;
    for (const body of deep) {
      expect(notify.receive(body, { tag: ++tag })).toBeUndefined();
      expect(rpc.receive(body, { tag: ++tag })).toBeUndefined();
    }
    expect(settled).toEqual(Array.from({ length: tag }, (_, i) => `reject ${i + 1}`));
    expect(notify.receive(notification('after'), { tag: ++tag })?.notification.payload).toBe('after');
  });
});
