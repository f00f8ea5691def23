// The amqp driver's connections send the frames amqplib's muxer takes in one pass with one socket
// write (coalesceWrites in connection.ts), on a real RabbitMQ: nothing is lost or reordered, and
// the test fails if an amqplib upgrade silently drops the optimisation.
import { EventEmitter } from 'eventemitter3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AmqpConnection, type DriverEventEmitter } from '../../src/drivers/amqp/connection.js';
import { resolveOptions } from '../../src/drivers/amqp/options.js';
import { createMemoryLogger } from '../../src/core/logger.js';
import { TransportURL } from '../../src/core/transport-url.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';

interface SocketWrites {
  _write: (...args: unknown[]) => void;
  _writev: (...args: unknown[]) => void;
}

describe('amqp write coalescing (RabbitMQ)', () => {
  const conn = new AmqpConnection('publisher', resolveOptions(TransportURL.parse(RABBIT_URL)), createMemoryLogger(), new EventEmitter() as DriverEventEmitter);
  const queue = uniqueName('t-amqpcork');

  beforeAll(requireRabbitMQ);

  afterAll(async () => {
    const ch = await conn.current?.model.createChannel();
    await ch?.deleteQueue(queue).catch(() => undefined);
    await conn.close();
  });

  it('frames sent in one turn leave in one socket write, all of them, in order', async () => {
    const model = await conn.ensureOpen();
    const ch = await model.createChannel();
    await ch.assertQueue(queue, { durable: false, autoDelete: false });
    // Count the socket's own writes (one syscall each), not amqplib's.
    const socket = (model as unknown as { connection: { stream: SocketWrites } }).connection.stream;
    let writes = 0;
    const write = socket._write;
    const writev = socket._writev;
    socket._write = function (this: unknown, ...args: unknown[]) {
      writes++;
      return write.apply(this, args);
    };
    socket._writev = function (this: unknown, ...args: unknown[]) {
      writes++;
      return writev.apply(this, args);
    };
    const count = 20;
    try {
      for (let i = 0; i < count; i++) ch.sendToQueue(queue, Buffer.from(JSON.stringify({ i })));
      // amqplib's muxer runs on setImmediate; two turns and its pass is over.
      for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    } finally {
      socket._write = write;
      socket._writev = writev;
    }
    // Without coalescing: one write per publish (20).
    expect(writes).toBeGreaterThan(0);
    expect(writes).toBeLessThanOrEqual(2);
    await waitFor(async () => (await ch.checkQueue(queue)).messageCount === count, { timeoutMs: 10_000 });
    const got: number[] = [];
    for (let i = 0; i < count; i++) {
      const m = await ch.get(queue, { noAck: true });
      if (m) got.push((JSON.parse(m.content.toString()) as { i: number }).i);
    }
    expect(got).toEqual(Array.from({ length: count }, (_, i) => i));
    await ch.close();
  });
});
