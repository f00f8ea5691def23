// Fault: a pool member killed (SIGKILL) while it holds unacknowledged notifications; the
// broker hands them to the other member of the pool.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getNotificationListener, getNotificationTransport, Notifier, NotificationResult, Target, type Transport } from '../../src/index.js';
import { deleteQueues, notificationQueues } from '../interop/support/amqp-admin.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { spawnMember } from './support/member-child.js';

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'pool-member.ts');
const N = 25;

describe('fault: a pool member dies holding unacknowledged notifications', () => {
  const topic = uniqueName('t-kill');
  const pool = uniqueName('pool');
  let transport: Transport;
  let child: ChildProcessWithoutNullStreams | undefined;

  beforeAll(async () => {
    await requireRabbitMQ();
    transport = await getNotificationTransport(RABBIT_URL);
  });

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await transport?.cleanup();
    await deleteQueues(notificationQueues([topic], [pool]));
  }, 60_000);

  it('another member of the pool receives every message the killed member held', async () => {
    const spawned = spawnMember(FIXTURE, { url: RABBIT_URL, topic, pool });
    child = spawned.child;
    const childEvents = spawned.events;
    const childState = spawned.state;

    await waitFor(() => childEvents.some((e) => e.event === 'ready'), { timeoutMs: 60_000, message: `the pool-member child to start (${childState()})` });

    const notifier = new Notifier(transport, { publisherId: 'faults.kill', driver: 'messagingv2', topics: [topic] });
    for (let seq = 0; seq < N; seq++) await notifier.info({}, 'kill.test', { seq });
    const held = () => new Set(childEvents.filter((e) => e.event === 'held').map((e) => e.seq as number));
    await waitFor(() => held().size === N, { timeoutMs: 30_000, message: `the child to hold all ${N} notifications (holds ${held().size}; ${childState()})` });

    // The second member joins the pool while the first still holds everything.
    const received: number[] = [];
    const member = getNotificationListener(
      transport,
      [new Target({ topic })],
      [
        {
          info(_ctx: unknown, _pub: string, _type: string, payload: { seq: number }) {
            received.push(payload.seq);
            return NotificationResult.HANDLED;
          },
        },
      ],
      { pool },
    );
    await member.start();
    try {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      await waitFor(() => new Set(received).size === N, { timeoutMs: 30_000, message: `the surviving member to receive all ${N} (has ${new Set(received).size})` });
      expect([...new Set(received)].sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i));
      expect(received).toHaveLength(N);
    } finally {
      await member.stop();
      await member.wait();
    }
  }, 120_000);
});
