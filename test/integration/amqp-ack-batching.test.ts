// Coalesced notification acks (AckBatcher) on a real RabbitMQ: a `multiple` ack never covers a
// delivery that is still being handled, and every delivery is acked in the end.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IncomingMessage } from '../../src/contract/incoming-message.js';
import type { Listener } from '../../src/contract/listener.js';
import type { AmqpDriver } from '../../src/drivers/amqp/index.js';
import { makeAmqpDriver } from '../support/amqp-driver.js';
import { Target } from '../../src/core/target.js';
import { requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';

const run = promisify(execFile);
const PREFIX = uniqueName('t-ackbatch');

const notification = (i: number) => ({ message_id: `m-${i}`, publisher_id: 'p', event_type: 'e.t', priority: 'INFO', payload: { i }, timestamp: '2026-01-01 00:00:00' });

/** Ready and unacknowledged counts of a queue, as the broker sees them. */
async function queueCounts(queue: string): Promise<{ ready: number; unacked: number } | undefined> {
  const { stdout } = await run('rabbitmqctl', ['-q', 'list_queues', 'name', 'messages_ready', 'messages_unacknowledged'], { timeout: 60_000 });
  for (const line of stdout.split('\n')) {
    const [name, ready, unacked] = line.trim().split(/\s+/);
    if (name === queue) return { ready: Number(ready), unacked: Number(unacked) };
  }
  return undefined;
}

describe('amqp notification ack batching (RabbitMQ)', () => {
  let driver: AmqpDriver;
  let listener: Listener<IncomingMessage> | undefined;

  beforeAll(async () => {
    await requireRabbitMQ();
    driver = makeAmqpDriver(`${PREFIX}-x`);
  });

  afterAll(async () => {
    await listener?.cleanup().catch(() => undefined);
    await driver?.cleanup();
    await deleteRabbitObjectsWithPrefix(PREFIX);
  });

  it('acks settled out of order leave the held delivery unacked until it is settled', async () => {
    const topic = `${PREFIX}-t`;
    const pool = `${PREFIX}-pool`;
    listener = await driver.listenForNotifications([[new Target({ topic }), 'info']], { pool });
    const held: IncomingMessage[] = [];
    let acked = 0;
    listener.start(async (msgs) => {
      for (const m of msgs) {
        // The first delivery is held; the later ones are acked, so their acks come first.
        if ((m.notification.payload as { i: number }).i === 0) held.push(m);
        else {
          await m.acknowledge();
          acked++;
        }
      }
    });
    for (let i = 0; i < 5; i++) await driver.sendNotification(new Target({ topic: `${topic}.info` }), {}, notification(i));
    await waitFor(() => held.length === 1 && acked === 4, { timeoutMs: 10_000, message: 'four acked, one held' });

    // Before the fix could go wrong, the broker held 5 unacked; a `multiple` ack of the last tag
    // would drop that to 0. It must settle at exactly 1: the held delivery.
    const counts = await waitFor(async () => {
      const c = await queueCounts(pool);
      return c && c.unacked <= 1 ? c : undefined;
    }, { timeoutMs: 20_000, intervalMs: 200, message: 'acks of the four reach the broker' });
    expect(counts).toEqual({ ready: 0, unacked: 1 });

    await held[0].acknowledge();
    await waitFor(async () => (await queueCounts(pool))?.unacked === 0, { timeoutMs: 20_000, intervalMs: 200, message: 'the held delivery acked' });
  }, 60_000);
});
