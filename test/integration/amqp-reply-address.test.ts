// Replies that cannot be delivered on a real RabbitMQ: 200 calls whose reply queues
// (`reply_<hex>`, valid-looking) do not exist must not hold a server's executor slots while
// their replies are retried, so a normal call behind them is answered at once.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Target } from '../../src/core/target.js';
import { getRpcTransport, type Transport } from '../../src/transport.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcServer } from '../../src/rpc/server.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { connect } from 'amqplib';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';

const PREFIX = uniqueName('t-replyaddr');
const hex = () => randomUUID().replaceAll('-', '');

/** A call in oslo's 2.0 envelope, as Python oslo.messaging writes it. */
function osloCall(method: string, args: object, replyQueue: string): Buffer {
  const message = { method, args, namespace: null, version: '1.0', _unique_id: hex(), _msg_id: hex(), _reply_q: replyQueue, _timeout: null };
  return Buffer.from(JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify(message) }));
}

describe('undeliverable replies (RabbitMQ)', () => {
  const transports: Transport[] = [];

  beforeAll(requireRabbitMQ);
  afterEach(async () => {
    await Promise.all(transports.splice(0).map((t) => t.cleanup()));
  });
  afterAll(() => deleteRabbitObjectsWithPrefix(PREFIX));

  it('200 calls with missing reply queues on 4 slots: every handler runs at once and a normal call is answered within its 10 s timeout', async () => {
    // The default missingConsumerRetryTimeout (60 s): each reply keeps being retried meanwhile.
    const serverT = await getRpcTransport(RABBIT_URL, { controlExchange: `${PREFIX}-x` });
    const clientT = await getRpcTransport(RABBIT_URL, { controlExchange: `${PREFIX}-x` });
    transports.push(serverT, clientT);
    const topic = `${PREFIX}-rpc`;
    let handled = 0;
    const server = getRpcServer(serverT, new Target({ topic, server: 's1' }), [{ echo: (_ctx: unknown, args: unknown) => (handled++, args) }], { executorSize: 4 });
    await server.start();
    const raw = await connect({ hostname: '127.0.0.1', port: 5672, username: 'guest', password: 'guest' });
    try {
      const ch = await raw.createConfirmChannel();
      // The server's topic queue, straight through the default exchange.
      for (let i = 0; i < 200; i++) ch.sendToQueue(topic, osloCall('echo', { i }, `reply_${hex()}`), { contentType: 'application/json' });
      await ch.waitForConfirms();
    } finally {
      await raw.close();
    }
    // Held slots would let 4 handlers run per 60 s; free ones run all 200 within seconds.
    await waitFor(() => handled === 200, { timeoutMs: 10_000, message: `all 200 handlers ran (${handled})` });
    const client = getRpcClient(clientT, { topic }, { timeout: 10_000 });
    const began = Date.now();
    await expect(client.call({}, 'echo', { n: 1 })).resolves.toEqual({ n: 1 });
    expect(Date.now() - began).toBeLessThan(10_000);
    await server.close();
  });
});
