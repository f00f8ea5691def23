// server_queue_expires_ms (issue 29): the <topic>.<server> queue of an RPC server that is gone is
// deleted by RabbitMQ (x-expires) once it has had no consumer that long; a call to that server
// afterwards times out with MessagingTimeout (the broker drops what no queue is bound for).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRpcClient, getRpcServer, getRpcTransport, InvalidArgument, MessagingTimeout, Target, type Transport } from 'tidings';
import { waitFor } from 'tidings/testing';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix, listRabbitNames } from '../support/rabbit-admin.js';

const prefix = `tsqexp${randomUUID().slice(0, 8)}`;
const transports: Transport[] = [];

beforeAll(async () => {
  await requireRabbitMQ();
});
afterAll(async () => {
  for (const t of transports) await t.cleanup();
  await deleteRabbitObjectsWithPrefix(prefix);
});

async function transport(query: string): Promise<Transport> {
  const t = await getRpcTransport(`${RABBIT_URL}${query}`);
  transports.push(t);
  return t;
}

/** Whether `queue` exists, by rabbitmqctl (a passive declare would count as use and renew its lease). */
async function queueExists(queue: string): Promise<boolean> {
  return (await listRabbitNames('queues', prefix)).includes(queue);
}

describe('RabbitMQ server queues that expire (server_queue_expires_ms)', () => {
  it('a stopped server’s <topic>.<server> queue is gone after the expiry; a call to that server then times out', async () => {
    const topic = `${prefix}-topic`;
    const server = `pod-${randomUUID().slice(0, 8)}`;
    const t = await transport('?server_queue_expires_ms=1000');
    const s = getRpcServer(t, new Target({ topic, server }), [{ ping: () => 'pong' }]);
    await s.start();
    const client = getRpcClient(t, { topic, server }, { timeout: 5000 });
    expect(await client.call({}, 'ping', {})).toBe('pong');
    expect(await queueExists(`${topic}.${server}`)).toBe(true);
    await s.stop();
    await s.wait();
    // The shared <topic> queue (no expiry, as oslo) stays; the server's own one goes.
    await waitFor(async () => !(await queueExists(`${topic}.${server}`)), { timeoutMs: 15_000, intervalMs: 200, message: 'the server queue expired' });
    expect(await queueExists(topic)).toBe(true);
    await expect(client.call({}, 'ping', {}, { timeout: 1000 })).rejects.toThrow(MessagingTimeout);
  });

  it('is refused with durable or quorum queues, naming the option', async () => {
    for (const query of ['?server_queue_expires_ms=1000&amqp_durable_queues=true', '?server_queue_expires_ms=1000&rabbit_quorum_queue=true']) {
      await expect(getRpcTransport(`${RABBIT_URL}${query}`)).rejects.toThrow(InvalidArgument);
      await expect(getRpcTransport(`${RABBIT_URL}${query}`)).rejects.toThrow(/serverQueueExpires/);
    }
  });
});
