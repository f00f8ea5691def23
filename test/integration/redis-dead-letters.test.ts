// `tidings dead-letters list|replay|purge` end to end on the Redis at 127.0.0.1:6379: a handler
// that always throws sends its notification to the dead letters after max_deliveries; the CLI
// lists it with consumer, deliveries and time, replays it to a listener, purges what is left.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run-cli.js';
import type { DeadLetter } from '../../src/contract/dead-letters.js';
import { TopicKeys } from '../../src/drivers/redis/topology.js';
import { getNotificationListener, getNotificationTransport, Notifier, NotificationResult, Target, type NotificationListener, type Transport } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { useRedisTestKeys } from '../support/redis-keys.js';
import { captureIO } from '../support/cli-io.js';

const PREFIX = `t-redisdl-${randomUUID().slice(0, 8)}`;
const URL = `redis://127.0.0.1:6379/?key_prefix=${PREFIX}&lease_ms=300&sweep_interval_ms=100&max_deliveries=3`;
const { redis, transports } = useRedisTestKeys(PREFIX);


async function cli(...args: string[]): Promise<string[]> {
  const io = captureIO();
  const code = await runCli(['dead-letters', ...args, '--url', URL], io);
  expect(code, io.errors.join('\n')).toBe(0);
  return io.lines;
}

async function transport(): Promise<Transport> {
  const t = await getNotificationTransport(URL);
  transports.push(t);
  return t;
}


describe('tidings dead-letters on Redis', () => {
  it('lists a notification that failed max_deliveries times, replays it to a listener, purges the rest', async () => {
    const topic = uniqueName('dl');
    const address = `${topic}.info`;
    const t = await transport();
    const attempts: number[] = [];
    const failing = getNotificationListener(
      t,
      [new Target({ topic })],
      [
        {
          info(_ctx: unknown, _pub: string, _type: string, payload: { n: number }) {
            attempts.push(payload.n);
            throw new Error(`handler failed on ${payload.n}`);
          },
        },
      ],
      { pool: 'billing', allowRequeue: true },
    );
    await failing.start();
    const notifier = new Notifier(t, { publisherId: 'dl.test', driver: 'messagingv2', topics: [topic] });
    await notifier.info({}, 'dl.event', { n: 1 });
    await notifier.info({}, 'dl.event', { n: 2 });
    const dead = new TopicKeys(PREFIX, 'openstack', topic).deadLetters;
    await waitFor(async () => (await redis.xlen(dead)) === 2, { timeoutMs: 20_000, message: 'both notifications dead-lettered' });
    await failing.stop();
    await failing.wait();
    expect(attempts.filter((n) => n === 1)).toHaveLength(3);

    const letters = (await cli('list', '--address', address)).map((l) => JSON.parse(l) as DeadLetter);
    expect(letters).toHaveLength(2);
    for (const l of letters) {
      expect(l.address).toBe(address);
      expect(l.pool).toBe('billing');
      expect(l.deliveries).toBe(3);
      expect(l.consumer).toMatch(/:\d+:[0-9a-f]{8}:\d+$/);
      expect(Date.parse(l.deadAt)).toBeGreaterThan(Date.now() - 60_000);
      // The handler's last error, passed down by the dispatcher's requeue.
      expect(l.error).toMatch(/^handler failed on [12]$/);
      expect(JSON.parse(l.body).payload).toHaveProperty('n');
    }
    // Oldest first; --limit and --id narrow it; another address of the topic has none.
    expect(letters.map((l) => JSON.parse(l.body).payload.n)).toEqual([1, 2]);
    expect((await cli('list', '--address', address, '--limit', '1')).map((l) => JSON.parse(l).id)).toEqual([letters[0].id]);
    expect((await cli('list', '--address', address, '--id', letters[1].id)).map((l) => JSON.parse(l).id)).toEqual([letters[1].id]);
    expect(await cli('list', '--address', `${topic}.error`)).toEqual([]);

    // Replay the first to a pool that now handles it.
    const handled: number[] = [];
    const healthy: NotificationListener = getNotificationListener(
      t,
      [new Target({ topic })],
      [
        {
          info(_ctx: unknown, _pub: string, _type: string, payload: { n: number }) {
            handled.push(payload.n);
            return NotificationResult.HANDLED;
          },
        },
      ],
      { pool: 'billing', allowRequeue: true },
    );
    await healthy.start();
    try {
      expect(await cli('replay', '--address', address, '--id', letters[0].id)).toEqual(['{"replayed":1}']);
      await waitFor(() => handled.includes(1), { timeoutMs: 10_000, message: 'the replayed notification handled' });
      expect((await cli('list', '--address', address)).map((l) => JSON.parse(l).id)).toEqual([letters[1].id]);
      // Replaying an id that is gone changes nothing.
      expect(await cli('replay', '--address', address, '--id', letters[0].id)).toEqual(['{"replayed":0}']);
    } finally {
      await healthy.stop();
      await healthy.wait();
    }
    expect(handled).toEqual([1]);

    expect(await cli('purge', '--address', address, '--all')).toEqual(['{"purged":1}']);
    expect(await cli('list', '--address', address)).toEqual([]);
    expect(await redis.exists(dead)).toBe(0);
  }, 60_000);
});
