// The in-process broker on its own: routing, round-robin, prefetch, ack/reject/requeue,
// cancel vs close, expiration, isolation per virtual host.
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryBroker, getMemoryBroker, resetMemoryBrokers, type MemoryDelivery } from '../../../../src/drivers/memory/index.js';
import { InvalidArgument } from '../../../../src/core/errors.js';
import { uniqueName, waitFor } from '../../../../src/testing/wait.js';

afterEach(resetMemoryBrokers);

function setup() {
  const broker = new MemoryBroker(uniqueName('vh'));
  broker.declareExchange('ex', 'topic');
  broker.declareQueue('q');
  broker.bindQueue('q', 'ex', 'k');
  return broker;
}

function collector() {
  const got: MemoryDelivery[] = [];
  return { got, cb: (d: MemoryDelivery) => void got.push(d) };
}

describe('MemoryBroker', () => {
  it('routes on the exact key, drops unroutable messages and delivers asynchronously', async () => {
    const broker = setup();
    const c = collector();
    broker.consume('q', c.cb, { noAck: true });
    expect(broker.publish('ex', 'k', '"a"')).toBe(1);
    expect(broker.publish('ex', 'other', '"b"')).toBe(0);
    expect(broker.publish('nope', 'k', '"c"')).toBe(0);
    expect(c.got).toHaveLength(0); // never inside publish
    await waitFor(() => c.got.length === 1);
    expect(c.got[0]).toMatchObject({ body: '"a"', exchange: 'ex', routingKey: 'k', queue: 'q', redelivered: false });
  });

  it('routes the default exchange by queue name', async () => {
    const broker = setup();
    expect(broker.publishRaw('', 'q', 'x')).toBe(1);
    expect(broker.publishRaw('', 'missing', 'x')).toBe(0);
    expect(broker.queueDepth('q')).toBe(1);
    expect(broker.queueDepth('missing')).toBe(0);
  });

  it('copies to every queue bound to a fanout exchange, once each', async () => {
    const broker = setup();
    broker.declareExchange('fan', 'fanout');
    broker.declareQueue('f1');
    broker.declareQueue('f2');
    broker.bindQueue('f1', 'fan', 'a');
    broker.bindQueue('f1', 'fan', 'b');
    broker.bindQueue('f2', 'fan', 'a');
    expect(broker.publish('fan', 'ignored', '1')).toBe(2);
    expect([broker.queueDepth('f1'), broker.queueDepth('f2')]).toEqual([1, 1]);
  });

  it('round-robins between consumers and respects prefetch until acks free capacity', async () => {
    const broker = setup();
    const a = collector();
    const b = collector();
    const ca = broker.consume('q', a.cb, { prefetch: 2 });
    broker.consume('q', b.cb, { prefetch: 1 });
    for (let i = 0; i < 6; i++) broker.publish('ex', 'k', String(i));
    await waitFor(() => a.got.length + b.got.length === 3);
    expect(a.got.map((d) => d.body)).toEqual(['0', '2']);
    expect(b.got.map((d) => d.body)).toEqual(['1']);
    expect(broker.queueStats('q')).toMatchObject({ ready: 3, unacked: 3, consumers: 2 });
    expect(ca.ack(a.got[0].deliveryTag)).toBe(true);
    expect(ca.ack(a.got[0].deliveryTag)).toBe(false);
    await waitFor(() => a.got.length === 3);
    expect(a.got[2].body).toBe('3');
  });

  it('requeues a rejected message at the head, marked redelivered', async () => {
    const broker = setup();
    const c = collector();
    const consumer = broker.consume('q', c.cb, { prefetch: 1 });
    broker.publish('ex', 'k', 'first');
    broker.publish('ex', 'k', 'second');
    await waitFor(() => c.got.length === 1);
    consumer.reject(c.got[0].deliveryTag, true);
    await waitFor(() => c.got.length === 2);
    expect(c.got[1]).toMatchObject({ body: 'first', redelivered: true });
    consumer.reject(c.got[1].deliveryTag, false);
    await waitFor(() => c.got.length === 3);
    expect(c.got[2]).toMatchObject({ body: 'second', redelivered: false });
    expect(broker.queueStats('q')).toMatchObject({ rejected: 1, requeued: 1 });
  });

  it('cancel keeps delivered messages with the consumer; close gives them back', async () => {
    const broker = setup();
    const c = collector();
    const consumer = broker.consume('q', c.cb);
    broker.publish('ex', 'k', '1');
    broker.publish('ex', 'k', '2');
    await waitFor(() => c.got.length === 2);
    consumer.cancel();
    broker.publish('ex', 'k', '3');
    expect(broker.queueStats('q')).toMatchObject({ ready: 1, consumers: 0 });
    expect(consumer.ack(c.got[0].deliveryTag)).toBe(true);
    consumer.close();
    expect(broker.queueDepth('q')).toBe(2);
    const d = collector();
    broker.consume('q', d.cb, { noAck: true });
    await waitFor(() => d.got.length === 2);
    expect(d.got.map((x) => [x.body, x.redelivered])).toEqual([
      ['2', true],
      ['3', false],
    ]);
  });

  it('drops a message whose expiration passed before a consumer took it', async () => {
    const broker = setup();
    broker.publish('ex', 'k', 'short', { expirationMs: 1 });
    broker.publish('ex', 'k', 'long', { expirationMs: 60_000 });
    const started = performance.now();
    await waitFor(() => performance.now() - started > 20);
    const c = collector();
    broker.consume('q', c.cb, { noAck: true });
    await waitFor(() => c.got.length === 1);
    expect(c.got[0].body).toBe('long');
  });

  it('deleting a queue removes its bindings and cancels its consumers', async () => {
    const broker = setup();
    const c = collector();
    const consumer = broker.consume('q', c.cb);
    broker.deleteQueue('q');
    expect(consumer.isActive).toBe(false);
    expect(broker.hasQueue('q')).toBe(false);
    expect(broker.publish('ex', 'k', 'x')).toBe(0);
  });

  it('refuses to bind or consume undeclared names with InvalidArgument', () => {
    const broker = setup();
    expect(() => broker.bindQueue('nope', 'ex', 'k')).toThrow(InvalidArgument);
    expect(() => broker.bindQueue('q', 'nope', 'k')).toThrow(InvalidArgument);
    expect(() => broker.consume('nope', () => {})).toThrow(InvalidArgument);
  });

  it('moves a large burst quickly without re-entrancy', async () => {
    const broker = setup();
    let n = 0;
    broker.consume('q', () => n++, { noAck: true });
    for (let i = 0; i < 50_000; i++) broker.publish('ex', 'k', '{}');
    expect(n).toBe(0);
    await waitFor(() => n === 50_000, { timeoutMs: 10_000 });
  });

  it('keeps one process-global broker per virtual host', () => {
    const vh = uniqueName('vh');
    expect(getMemoryBroker(vh)).toBe(getMemoryBroker(vh));
    expect(getMemoryBroker(vh)).not.toBe(getMemoryBroker(uniqueName('vh')));
    expect(getMemoryBroker()).toBe(getMemoryBroker(''));
    const before = getMemoryBroker(vh);
    before.declareQueue('q');
    resetMemoryBrokers();
    expect(before.hasQueue('q')).toBe(false);
    expect(getMemoryBroker(vh)).not.toBe(before);
  });
});
