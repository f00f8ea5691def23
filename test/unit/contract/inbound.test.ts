// The shared inbound pipeline and message classes: what every driver gets for free.
import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '../../../src/core/errors.js';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { InboundPollSource, InboundPushSource, NotificationInbound, RpcInbound, type DeliverySettler, type ListenerKind } from '../../../src/contract/inbound.js';
import type { ReceivedMessage } from '../../../src/contract/incoming-message.js';
import type { ListenerSink } from '../../../src/contract/push-listener.js';
import { decodeBody } from '../../../src/contract/envelope.js';
import { encodeNotification, encodeRpcRequest } from '../../../src/contract/wire.js';
import { DeliveryStats } from '../../../src/contract/delivery-stats.js';
import { listenTo } from '../../../src/contract/push-listener.js';
import { waitFor } from '../../../src/testing/wait.js';
import { isReplyAddress, newReplyAddress } from '../../../src/contract/addressing.js';

interface FakeDelivery {
  tag: number;
  /** Deliveries so far, this one included. @default 1 */
  n?: number;
}

function fakeSettler(ackWorks = true) {
  const log: string[] = [];
  const settler: DeliverySettler<FakeDelivery> = {
    ack: (d, g) => (log.push(`ack ${d.tag}@${g}`), ackWorks),
    requeue: (d, g) => void log.push(`requeue ${d.tag}@${g}`),
    reject: (d, g) => void log.push(`reject ${d.tag}@${g}`),
    describe: (d) => ({ tag: d.tag }),
    deliveries: (d) => d.n ?? 1,
    address: () => 'topic.info',
  };
  return { settler, log };
}

const replies = () => {
  const sent: Array<{ queue: string; msgId: string; body: Record<string, unknown> }> = [];
  return { sent, sender: { sendReply: (queue: string, msgId: string, body: string) => void sent.push({ queue, msgId, body: decodeBody(body) }), isReplyAddress: (a: string) => a.startsWith('reply_') } };
};

const notification = (extra: Record<string, unknown> = {}) =>
  encodeNotification({ message_id: 'n1', publisher_id: 'p', event_type: 'e', priority: 'INFO', payload: { x: 1 }, timestamp: 't', ...extra }, { user: 'u' });

describe('RpcInbound', () => {
  it('acks a request on receipt and hands out ctx, message and reply routing', async () => {
    const { settler, log } = fakeSettler();
    const { sent, sender } = replies();
    const inbound = new RpcInbound({ settler, logger: createMemoryLogger(), dedupWindow: 16, replies: sender });
    const body = encodeRpcRequest({ method: 'add', args: { a: 1 } }, { user: 'u' }, { msgId: 'm1', replyQueue: 'reply_x', callMonitorTimeout: 2000 });
    const msg = inbound.receive(body, { tag: 1 }, 3)!;
    expect(log).toEqual(['ack 1@3']);
    expect(msg.request).toEqual({ method: 'add', args: { a: 1 }, namespace: undefined, version: '1.0' });
    expect(msg.ctx).toEqual({ user: 'u', client_timeout: 2 });
    expect(msg.expectsReply).toBe(true);
    expect(msg.callMonitorTimeout).toBe(2000);
    expect([msg.callId, msg.replyAddress]).toEqual(['m1', 'reply_x']);
    expect(msg.unwrap()).toEqual({ tag: 1 });
    await msg.heartbeat();
    await msg.reply({ result: 3 });
    await msg.reply({ result: 4 });
    await msg.heartbeat();
    expect(sent.map((s) => [s.queue, s.msgId, s.body.result, s.body.ending])).toEqual([
      ['reply_x', 'm1', null, false],
      ['reply_x', 'm1', 3, true],
    ]);
  });

  it('rejects malformed bodies without requeue, logs why without the body, and goes on', () => {
    const { settler, log } = fakeSettler();
    const logger = createMemoryLogger();
    const inbound = new RpcInbound({ settler, logger, dedupWindow: 16, replies: replies().sender });
    expect(inbound.receive('not json {secret', { tag: 1 })).toBeUndefined();
    expect(inbound.receive(JSON.stringify({ args: {} }), { tag: 2 })).toBeUndefined();
    const cast = inbound.receive(encodeRpcRequest({ method: 'm' }, {}), { tag: 3 });
    expect([cast?.expectsReply, cast?.callId, cast?.replyAddress]).toEqual([false, undefined, undefined]);
    expect(log).toEqual(['reject 1@0', 'reject 2@0', 'ack 3@0']);
    const warnings = logger.records.filter((r) => r.level === 'warn');
    expect(warnings).toHaveLength(2);
    expect(warnings[0].fields).toMatchObject({ tag: 1, bytes: 16 });
    expect(JSON.stringify(warnings)).not.toContain('secret');
  });

  it('drops a duplicate _unique_id (acked), and a request whose ack failed', () => {
    const { settler, log } = fakeSettler();
    const inbound = new RpcInbound({ settler, logger: createMemoryLogger(), dedupWindow: 16, replies: replies().sender });
    const body = encodeRpcRequest({ method: 'm' }, {});
    expect(inbound.receive(body, { tag: 1 })).toBeDefined();
    expect(inbound.receive(body, { tag: 2 })).toBeUndefined();
    expect(log).toEqual(['ack 1@0', 'ack 2@0']);
    const failing = new RpcInbound({ settler: fakeSettler(false).settler, logger: createMemoryLogger(), dedupWindow: 16, replies: replies().sender });
    expect(failing.receive(encodeRpcRequest({ method: 'm' }, {}), { tag: 1 })).toBeUndefined();
  });
});

describe('RpcInbound reply addresses', () => {
  it('acks a call whose _reply_q is not a reply address, never hands it out, logs it once (truncated) and counts it as malformed', () => {
    const { settler, log } = fakeSettler();
    const logger = createMemoryLogger();
    const stats = new DeliveryStats();
    const sender = { sendReply: () => {}, isReplyAddress };
    const inbound = new RpcInbound({ settler, logger, dedupWindow: 16, replies: sender, stats });
    const call = (replyQueue: string) => encodeRpcRequest({ method: 'm', args: { secret: 's3' } }, {}, { msgId: 'm1', replyQueue });
    expect(inbound.receive(call('other-service.server1'), { tag: 1 })).toBeUndefined();
    expect(inbound.receive(call(`reply_${'A'.repeat(32)}`), { tag: 2 })).toBeUndefined();
    expect(inbound.receive(call('x'.repeat(500)), { tag: 3 })).toBeUndefined();
    expect(inbound.receive(call(`reply_${'ab'.repeat(16)}`), { tag: 4 })?.replyAddress).toBe(`reply_${'ab'.repeat(16)}`);
    expect(log).toEqual(['ack 1@0', 'ack 2@0', 'ack 3@0', 'ack 4@0']);
    const warnings = logger.records.filter((r) => r.level === 'warn');
    expect(warnings).toHaveLength(3);
    expect(warnings[0].fields).toMatchObject({ tag: 1, replyQueue: 'other-service.server1' });
    expect(String(warnings[2].fields?.replyQueue).length).toBeLessThan(100);
    expect(JSON.stringify(warnings)).not.toContain('s3');
    expect(stats.snapshot()).toEqual([{ address: 'topic.info', redeliveries: 0, deadLettered: 0, malformed: 3, deadLettersDropped: 0 }]);
  });

  it('the shared rule: reply_ + 32 lowercase hex, as newReplyAddress and Python oslo.messaging make them', () => {
    expect(isReplyAddress(newReplyAddress())).toBe(true);
    expect(isReplyAddress(`reply_${'0123456789abcdef'.repeat(2)}`)).toBe(true);
    for (const bad of ['reply_', 'reply_abc', `reply_${'g'.repeat(32)}`, `Reply_${'a'.repeat(32)}`, `reply_${'a'.repeat(33)}`, `reply_${'a'.repeat(32)}\n`, `reply_${'A'.repeat(32)}`, ...['/', ':', '`', 'g'].map((c) => `reply_${'a'.repeat(31)}${c}`), 'notifications.info', '']) {
      expect(isReplyAddress(bad), bad).toBe(false);
    }
  });
});

describe('delivery counts', () => {
  it('a message carries how often it was delivered; redeliveries and malformed messages are counted per address and pool', () => {
    const { settler } = fakeSettler();
    const stats = new DeliveryStats();
    const inbound = new NotificationInbound({ settler, logger: createMemoryLogger(), dedupWindow: 16, stats, pool: 'workers' });
    const first = inbound.receive(notification({ message_id: 'a', _unique_id: 'u1' }), { tag: 1 })!;
    expect(first.deliveryCount).toBe(1);
    expect(first.redelivered).toBe(false);
    const again = inbound.receive(notification({ message_id: 'b', _unique_id: 'u2' }), { tag: 2, n: 3 })!;
    expect(again.deliveryCount).toBe(3);
    expect(again.redelivered).toBe(true);
    expect(inbound.receive('{not json', { tag: 3 })).toBeUndefined();
    expect(stats.snapshot()).toEqual([{ address: 'topic.info', pool: 'workers', redeliveries: 1, deadLettered: 0, malformed: 1, deadLettersDropped: 0 }]);
  });

  it('an RPC request carries its delivery count too; without stats nothing is counted', () => {
    const { settler } = fakeSettler();
    const inbound = new RpcInbound({ settler, logger: createMemoryLogger(), dedupWindow: 16, replies: replies().sender });
    const msg = inbound.receive(encodeRpcRequest({ method: 'm', args: {} }, {}), { tag: 1, n: 2 })!;
    expect(msg.redelivered).toBe(true);
    expect(msg.deliveryCount).toBe(2);
  });

  it('dead letters by reason, kept apart per pool', () => {
    const stats = new DeliveryStats();
    stats.deadLettered('t.info', 'max_deliveries', 'a');
    stats.deadLettered('t.info', 'max_deliveries', 'a');
    stats.deadLettered('t.info', 'malformed');
    expect(stats.snapshot()).toEqual([
      { address: 't.info', pool: 'a', redeliveries: 0, deadLettered: 2, malformed: 0, deadLettersDropped: 0 },
      { address: 't.info', redeliveries: 0, deadLettered: 0, malformed: 1, deadLettersDropped: 0 },
    ]);
  });
});

describe('NotificationInbound', () => {
  it('settles once: acknowledge acks and remembers the id; a later copy is a duplicate', async () => {
    const { settler, log } = fakeSettler();
    const inbound = new NotificationInbound({ settler, logger: createMemoryLogger(), dedupWindow: 16 });
    const body = notification();
    const msg = inbound.receive(body, { tag: 1 }, 2)!;
    expect(msg.notification).toMatchObject({ event_type: 'e', payload: { x: 1 } });
    expect(msg.ctx).toEqual({ user: 'u' });
    expect(msg.msgId).toBe('n1');
    expect(inbound.unsettled).toBe(1);
    await msg.acknowledge();
    await msg.acknowledge();
    await msg.requeue();
    expect(inbound.unsettled).toBe(0);
    expect(inbound.receive(body, { tag: 2 }, 2)).toBeUndefined();
    expect(log).toEqual(['ack 1@2', 'ack 2@2']);
  });

  it('a copy of a message still being handled is held, not dispatched, and acknowledged once the first copy is', async () => {
    // Kafka: the same record read again in the next group generation while its handler runs.
    const { settler, log } = fakeSettler();
    const inbound = new NotificationInbound({ settler, logger: createMemoryLogger(), dedupWindow: 16 });
    const body = notification();
    const first = inbound.receive(body, { tag: 1 }, 1)!;
    expect(inbound.receive(body, { tag: 2 }, 2)).toBeUndefined();
    expect(inbound.receive(body, { tag: 3 }, 3)).toBeUndefined();
    // Nothing settled yet: acknowledging a copy would commit the record before it was handled.
    expect(log).toEqual([]);
    expect(inbound.unsettled).toBe(1);
    await first.acknowledge();
    expect(log).toEqual(['ack 1@1', 'ack 2@2', 'ack 3@3']);
    // Handled: a later copy is a duplicate, acknowledged at once.
    expect(inbound.receive(body, { tag: 4 }, 3)).toBeUndefined();
    expect(log.at(-1)).toBe('ack 4@3');
  });

  it('a held copy is given back when the first copy is requeued or abandoned, and may come again', async () => {
    const { settler, log } = fakeSettler();
    const inbound = new NotificationInbound({ settler, logger: createMemoryLogger(), dedupWindow: 16 });
    const body = notification();
    const first = inbound.receive(body, { tag: 1 })!;
    expect(inbound.receive(body, { tag: 2 })).toBeUndefined();
    await first.requeue();
    // Without the settler's giveBack, a requeue; never an ack.
    expect(log).toEqual(['requeue 1@0', 'requeue 2@0']);
    const again = inbound.receive(body, { tag: 3 })!;
    expect(again).toBeDefined();
    const gaveBack: string[] = [];
    settler.giveBack = (d, g) => void gaveBack.push(`giveBack ${d.tag}@${g}`);
    expect(inbound.receive(body, { tag: 4 })).toBeUndefined();
    inbound.abandon(again);
    await again.acknowledge();
    expect(gaveBack).toEqual(['giveBack 4@0']);
    expect(log).toEqual(['requeue 1@0', 'requeue 2@0']);
    expect(inbound.receive(body, { tag: 5 })).toBeDefined();
  });

  it('rejects a notification without the oslo keys', () => {
    const { settler, log } = fakeSettler();
    const inbound = new NotificationInbound({ settler, logger: createMemoryLogger(), dedupWindow: 16 });
    expect(inbound.receive(JSON.stringify({ event_type: 'e', priority: 'INFO' }), { tag: 1 })).toBeUndefined();
    expect(log).toEqual(['reject 1@0']);
  });
});

/** The smallest push source on the shared base: settles into a log, pushes what `receive` returns. */
class FakeSource extends InboundPushSource<ReceivedMessage, FakeDelivery> {
  readonly log: string[] = [];
  constructor(kind: ListenerKind) {
    super(kind, { logger: createMemoryLogger(), dedupWindow: 16, replies: replies().sender });
  }
  push(body: string, tag: number): void {
    const message = this.receive(body, { tag }, 0);
    if (message) this.sink!.deliver(message);
  }
  async stop(): Promise<void> {}
  async cleanup(): Promise<void> {}
  ack(d: FakeDelivery): boolean {
    this.log.push(`ack ${d.tag}`);
    return true;
  }
  requeue(d: FakeDelivery): void {
    this.log.push(`requeue ${d.tag}`);
  }
  reject(d: FakeDelivery): void {
    this.log.push(`reject ${d.tag}`);
  }
  describe(d: FakeDelivery) {
    return { tag: d.tag };
  }
  deliveries(): number {
    return 1;
  }
  address(): string {
    return 'topic';
  }
}

describe('InboundPushSource', () => {
  const sink = () => {
    const got: ReceivedMessage[] = [];
    const s: ListenerSink<ReceivedMessage> = { deliver: (m) => void got.push(m), withdraw: () => [] };
    return { got, s };
  };

  it('an rpc source runs bodies through RpcInbound (ack on receipt, malformed rejected) into its sink', () => {
    const source = new FakeSource('rpc');
    const { got, s } = sink();
    source.attach(s);
    source.push(encodeRpcRequest({ method: 'm', args: {} }, {}), 1);
    source.push('not json', 2);
    expect(got).toHaveLength(1);
    expect(got[0].constructor.name).toBe('RpcMessage');
    expect(source.log).toEqual(['ack 1', 'reject 2']);
  });

  it('a notification source runs bodies through NotificationInbound: settled by the message, not on receipt', async () => {
    const source = new FakeSource('notification');
    const { got, s } = sink();
    source.attach(s);
    source.push(notification(), 1);
    expect(got).toHaveLength(1);
    expect(got[0].constructor.name).toBe('NotificationMessage');
    expect(source.log).toEqual([]);
    await (got[0] as { acknowledge(): Promise<void> }).acknowledge();
    expect(source.log).toEqual(['ack 1']);
  });
});

/** The smallest pull source on the shared base: its "broker" is a list it reads from only in fetch(). */
class FakePullSource extends InboundPollSource<ReceivedMessage, FakeDelivery> {
  readonly log: string[] = [];
  /** Bodies on the broker, not read yet. */
  readonly broker: string[] = [];
  /** fetch() calls, with the batch room and time the poll asked for. */
  readonly fetches: Array<[number, number | undefined]> = [];
  private tag = 0;
  constructor(kind: ListenerKind, prefetch = -1) {
    super(kind, { logger: createMemoryLogger(), dedupWindow: 16, replies: replies().sender }, prefetch);
  }
  /** Reads what the broker holds on the next turn, as a blocking read answering would. */
  protected override fetch(max: number, timeoutMs: number | undefined): void {
    this.fetches.push([max, timeoutMs]);
    setImmediate(() => {
      for (const body of this.broker.splice(0)) this.receive(body, { tag: ++this.tag }, 0);
    });
  }
  async cleanup(): Promise<void> {}
  ack(d: FakeDelivery): boolean {
    this.log.push(`ack ${d.tag}`);
    return true;
  }
  requeue(d: FakeDelivery): void {
    this.log.push(`requeue ${d.tag}`);
  }
  reject(d: FakeDelivery): void {
    this.log.push(`reject ${d.tag}`);
  }
  describe(d: FakeDelivery) {
    return { tag: d.tag };
  }
}

describe('InboundPollSource', () => {
  it('pulls: reads only when a poll finds nothing buffered, passing the room and the time left', async () => {
    const source = new FakePullSource('notification');
    source.broker.push(notification({ message_id: 'a' }), notification({ message_id: 'b' }));
    expect(source.fetches).toEqual([]);
    const first = await source.poll({ batchSize: 1 });
    expect(first).toHaveLength(1);
    expect(source.fetches).toEqual([[1, undefined]]);
    // The second message was read with the first and is buffered: no read for it.
    expect(await source.poll({ batchSize: 1 })).toHaveLength(1);
    expect(source.fetches).toHaveLength(1);
    expect(await source.poll({ batchSize: 5, batchTimeout: 30 })).toEqual([]);
    expect(source.fetches[1]).toEqual([5, 30]);
  });

  it('malformed bodies and duplicates are settled by the pipeline and never buffered', async () => {
    const source = new FakePullSource('notification');
    const twice = notification();
    source.broker.push('not json', twice, twice);
    const got = await source.poll({ batchSize: 10, batchTimeout: 50 });
    expect(got).toHaveLength(1);
    // The copy waits for the first one (being handled), then is acknowledged with it.
    expect(source.log).toEqual(['reject 1']);
    await got[0]!.acknowledge();
    expect(source.log).toEqual(['reject 1', 'ack 2', 'ack 3']);
  });

  it('an rpc source acks on receipt; listenTo() runs it under the adapter, one batch per poll', async () => {
    const source = new FakePullSource('rpc');
    const listener = listenTo(source, { batchSize: 2, batchTimeout: 20 });
    const batches: number[] = [];
    listener.start((batch) => void batches.push(batch.length));
    for (let i = 0; i < 3; i++) source.broker.push(encodeRpcRequest({ method: 'm', args: { i } }, {}));
    await waitFor(() => batches.reduce((a, b) => a + b, 0) === 3, { timeoutMs: 5000 });
    expect(batches.every((n) => n <= 2)).toBe(true);
    expect(source.log).toEqual(['ack 1', 'ack 2', 'ack 3']);
    await listener.stop();
  });
});

describe('encodeRpcRequest / encodeNotification', () => {
  it('fail with InvalidArgument naming the context or the message for values JSON cannot carry', () => {
    const bad = { big: 1n };
    expect(() => encodeRpcRequest({ method: 'm', args: bad }, {})).toThrow(InvalidArgument);
    expect(() => encodeRpcRequest({ method: 'm' }, bad)).toThrow(/context/);
    expect(() => encodeNotification({ payload: bad }, {})).toThrow(/message/);
  });

  it('envelope 2.0 by default, the raw dict for 1.0, and a fresh _unique_id each time', () => {
    const v2 = JSON.parse(encodeNotification({ event_type: 'e' }, { a: 1 }));
    expect(v2['oslo.version']).toBe('2.0');
    const v1 = JSON.parse(encodeNotification({ event_type: 'e' }, { a: 1 }, 1.0));
    expect(v1).toMatchObject({ event_type: 'e', _context_a: 1 });
    expect(v1._unique_id).toMatch(/^[0-9a-f]{32}$/);
    expect(decodeBody(encodeRpcRequest({ method: 'm' }, {}))._unique_id).not.toBe(decodeBody(encodeRpcRequest({ method: 'm' }, {}))._unique_id);
    expect(() => encodeNotification({}, {}, 3 as never)).toThrow(InvalidArgument);
  });

  it('write exactly the keys and values of {...message, wire keys, _context_*} (what oslo reads), members JSON drops left out', () => {
    const ctxs: Array<Record<string, unknown>> = [{}, { user: 'u1', roles: ['a', 'b'], nested: { x: [1, { y: null }] } }, { 'we"ird\\key': 'é 𝄞 \n', skipped: undefined, fn: () => 1 }];
    const messages: Array<Record<string, unknown>> = [{}, { method: 'm', args: { text: '"quoted" \\ back' } }, { method: 'm', args: {}, namespace: 'ns', version: '1.2', gone: undefined }];
    for (const ctx of ctxs) {
      for (const message of messages) {
        const flat: Record<string, unknown> = JSON.parse(JSON.stringify(message));
        for (const [k, v] of Object.entries(JSON.parse(JSON.stringify(ctx)) as Record<string, unknown>)) flat[`_context_${k}`] = v;
        const call = decodeBody(encodeRpcRequest(message, ctx, { msgId: 'm1', replyQueue: 'reply_1', callMonitorTimeout: 1500 }));
        expect(call).toEqual({ ...flat, _msg_id: 'm1', _reply_q: 'reply_1', _timeout: 1.5, _unique_id: call._unique_id });
        const cast = decodeBody(encodeRpcRequest(message, ctx));
        expect(cast).toEqual({ ...flat, _unique_id: cast._unique_id });
        const v1 = JSON.parse(encodeNotification(message, ctx, 1.0)) as Record<string, unknown>;
        expect(v1).toEqual({ ...flat, _unique_id: v1._unique_id });
        const v2 = decodeBody(encodeNotification(message, ctx));
        expect(v2).toEqual({ ...flat, _unique_id: v2._unique_id });
      }
    }
  });

  it('a cast carries no reply keys; a call without a monitor window sends _timeout null', () => {
    expect(Object.keys(decodeBody(encodeRpcRequest({ method: 'm' }, {})))).toEqual(['method', '_unique_id']);
    expect(decodeBody(encodeRpcRequest({ method: 'm' }, {}, { msgId: 'x', replyQueue: 'r' }))).toMatchObject({ _msg_id: 'x', _reply_q: 'r', _timeout: null });
  });
});
