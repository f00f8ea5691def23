// The bounded in-process backlog on RabbitMQ: unset, rabbit_qos_prefetch_count takes the façade's
// hint (2 x executorSize), so a slow handler holds only that many unacknowledged; 0 is unlimited.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Channel, ChannelModel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deferred, uniqueName, waitFor } from '../../src/testing/wait.js';
import { getNotificationListener, getNotificationTransport, Notifier, Target, type NotificationListener, type Transport } from '../../src/index.js';
import { openRawChannel } from '../support/amqp-driver.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';

const run = promisify(execFile);
const PREFIX = uniqueName('t-amqppf');
const N = 30;

/** `messages_unacknowledged` of one queue, as RabbitMQ counts it. */
async function unacknowledged(queue: string): Promise<number> {
  const { stdout } = await run('rabbitmqctl', ['-q', 'list_queues', 'name', 'messages_unacknowledged'], { timeout: 60_000 });
  const line = stdout.split('\n').find((l) => l.split(/\s+/)[0] === queue);
  return Number(line?.split(/\s+/)[1]);
}

describe('RabbitMQ prefetch bound (rabbit_qos_prefetch_count)', () => {
  let raw: ChannelModel;
  let ch: Channel;
  const transports: Transport[] = [];
  const listeners: NotificationListener[] = [];
  const release = deferred();

  beforeAll(async () => {
    await requireRabbitMQ();
    ({ raw, ch } = await openRawChannel());
  });

  afterAll(async () => {
    release.resolve();
    for (const l of listeners) {
      await l.stop();
      await l.wait();
    }
    await Promise.all(transports.map((t) => t.cleanup()));
    await raw?.close().catch(() => undefined);
    await deleteRabbitObjectsWithPrefix(PREFIX);
  });

  /** A listener with executorSize 2 whose handlers wait for `release`, and N notifications sent to it. */
  async function slowListener(query: string): Promise<{ queue: string; running: () => number }> {
    const topic = `${PREFIX}-${uniqueName('q')}`;
    const t = await getNotificationTransport(`${RABBIT_URL}${query}`);
    transports.push(t);
    let running = 0;
    const listener = getNotificationListener(
      t,
      [new Target({ topic })],
      [
        {
          async info() {
            running++;
            await release.promise;
          },
        },
      ],
      { executorSize: 2 },
    );
    listeners.push(listener);
    await listener.start();
    const notifier = new Notifier(t, { publisherId: 'pf.test', driver: 'messagingv2', topics: [topic] });
    for (let i = 0; i < N; i++) await notifier.info({}, 'pf.event', { i });
    return { queue: `${topic}.info`, running: () => running };
  }

  it('by default holds at most 2 x executorSize unacknowledged while handlers are slow', async () => {
    const { queue, running } = await slowListener('');
    await waitFor(() => running() === 2, { timeoutMs: 10_000, message: 'both handlers running' });
    await waitFor(async () => (await ch.checkQueue(queue)).messageCount === N - 4, { timeoutMs: 10_000, message: 'the broker delivered the prefetch' });
    // rabbitmqctl takes seconds: the broker had that long to push more, and did not.
    expect(await unacknowledged(queue)).toBe(4);
    expect((await ch.checkQueue(queue)).messageCount).toBe(N - 4);
  });

  it('with rabbit_qos_prefetch_count=0 given, holds every message (oslo behaviour)', async () => {
    const { queue, running } = await slowListener('?rabbit_qos_prefetch_count=0');
    await waitFor(() => running() === 2, { timeoutMs: 10_000, message: 'both handlers running' });
    await waitFor(async () => (await ch.checkQueue(queue)).messageCount === 0, { timeoutMs: 10_000, message: 'the broker pushed everything' });
    expect(await unacknowledged(queue)).toBe(N);
  });
});
