// Faults of the Kafka driver on the Kafka test broker (librdkafka's mock cluster): a pool member
// SIGKILLed mid-stream (its partitions go to the other member from the last commit), and the
// broker process killed and restarted (clients reconnect, the listener goes on).
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { getNotificationListener, getNotificationTransport, Notifier, Target, type Context, type Transport } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { externalKafkaBrokers, startKafkaMock, type KafkaTestBroker } from '../support/kafka-broker.js';
import { RawKafka, SHORT_GROUP_QUERY } from '../support/kafka-raw.js';
import { spawnMember } from './support/member-child.js';

const FIXTURE = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'kafka-pool-member.ts');


/** A notification record in oslo's Kafka format (the envelope with a nested `_context`). */
function osloRecord(payload: unknown): string {
  const message = { message_id: randomUUID(), publisher_id: 'faults.barrier', event_type: 'kill.test', priority: 'INFO', payload, timestamp: '2026-01-01 00:00:00.000000', _context: {} };
  return JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify(message) });
}

describe('Kafka faults (librdkafka mock cluster)', () => {
  let broker: KafkaTestBroker;
  const closers: Array<() => Promise<unknown>> = [];
  const children: ChildProcessWithoutNullStreams[] = [];

  beforeAll(async () => {
    broker = await startKafkaMock({ brokers: 3 });
  });

  afterEach(async () => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  }, 60_000);

  afterAll(async () => {
    await broker?.stop();
  });

  const transport = async (url: string): Promise<Transport> => {
    const t = await getNotificationTransport(url);
    closers.push(() => t.cleanup());
    return t;
  };

  it('a pool member SIGKILLed mid-stream: nothing is lost, and the survivor runs no notification twice', { timeout: 180_000 }, async () => {
    const topic = uniqueName('t-kill');
    const pool = uniqueName('pool');
    const url = `${broker.url}/?${SHORT_GROUP_QUERY}`;
    // Four partitions, so that both members own some.
    await broker.createTopic({ name: `${topic}.info`, partitions: 4 });
    const member = spawnMember(FIXTURE, { url, topic, pool });
    children.push(member.child);
    await waitFor(() => member.events.some((e) => e.event === 'ready'), { timeoutMs: 60_000, message: `the pool-member child to start (${member.state()})` });

    const t = await transport(url);
    const received: number[] = [];
    const survivor = getNotificationListener(t, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { seq: number }) => void received.push(payload.seq) }], { pool });
    await survivor.start();
    closers.push(async () => {
      await survivor.stop();
      await survivor.wait();
    });
    const seqs = (event: string) => member.events.filter((e) => e.event === event).map((e) => e.seq as number);

    const N = 400;
    const notifier = new Notifier(t, { publisherId: 'faults.kafka', driver: 'messagingv2', topics: [topic] });
    let sent = 0;
    const sending = (async () => {
      for (; sent < N; sent++) await notifier.info({}, 'kill.test', { seq: sent });
    })();
    // Both members own partitions once the child has handled some and the survivor too.
    await waitFor(() => seqs('handled').length >= 20 && received.length >= 20, { timeoutMs: 60_000, message: `both members handling (child ${seqs('handled').length}, survivor ${received.length}; ${member.state()})` });
    const exited = new Promise((r) => member.child.once('exit', r));
    member.child.kill('SIGKILL');
    await exited;
    const startedByChild = new Set(seqs('started'));
    const sentAtKill = sent;
    await sending;

    const handledByChild = new Set(seqs('handled'));
    const all = () => new Set([...received, ...handledByChild]);
    await waitFor(() => all().size === N, { timeoutMs: 90_000, message: `every notification handled by one member or the other (${all().size}/${N})` });
    // A barrier per partition (Kafka keeps order within one): anything the survivor still had to
    // read again from the child's partitions comes before these.
    const raw = new RawKafka(broker.brokers);
    closers.push(() => raw.close());
    await raw.publish(
      `${topic}.info`,
      [0, 1, 2, 3].map((partition) => ({ partition, value: osloRecord({ seq: N + partition }) })),
    );
    await waitFor(() => [0, 1, 2, 3].every((p) => received.includes(N + p)), { timeoutMs: 30_000, message: 'the barrier on every partition' });

    const mine = received.filter((s) => s < N);
    // Nothing lost: every seq was handled, by the survivor or by the child before it died.
    expect(new Set([...mine, ...handledByChild]).size).toBe(N);
    // The survivor never ran one twice (its own dedupe and commits).
    expect(mine.length).toBe(new Set(mine).size);
    // What both ran are only records the child had taken and not committed when it died.
    const twice = mine.filter((s) => startedByChild.has(s));
    console.info(`kafka pool member killed: sent ${sentAtKill}/${N} at the kill; the child started ${startedByChild.size}, handled ${handledByChild.size}; the survivor ran ${twice.length} of those again`);
    // How many of the child's records run again depends on whether its last batched commit (every
    // commit_interval_ms, refused by the mock while the group rebalances) landed before the kill: all
    // of them may, which is at-least-once as documented, so the count is reported, not asserted.
  });

  // KAFKA_BROKERS names a cluster this test cannot restart: reported as skipped there.
  it.skipIf(externalKafkaBrokers() !== undefined)('the broker killed and restarted: the listener reconnects and goes on', { timeout: 180_000 }, async () => {
    // The mock keeps nothing across a restart: topics, records, committed offsets and groups are
    // gone. So this shows that clients reconnect to the same addresses, the listener's consumer
    // rejoins its group and handles what is sent after the restart, and the notifier resumes;
    // it cannot show that records or commits survive a broker restart (a real cluster keeps
    // them).
    const topic = uniqueName('t-restart');
    const url = `${broker.url}/?${SHORT_GROUP_QUERY}&consumer_group=${uniqueName('g')}`;
    const t = await transport(url);
    const received: string[] = [];
    const listener = getNotificationListener(t, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: string }) => void received.push(payload.id) }]);
    await listener.start();
    closers.push(async () => {
      await listener.stop();
      await listener.wait();
    });
    const notifier = new Notifier(t, { publisherId: 'faults.kafka', driver: 'messagingv2', topics: [topic] });
    await notifier.info({}, 'before', { id: 'before' });
    await waitFor(() => received.includes('before'), { timeoutMs: 30_000, message: 'the notification before the restart' });

    await broker.kill(); // SIGKILL: every connection drops at once
    await broker.restart();
    // Notifications after the restart, until the listener has rejoined and reads again: sends
    // may fail while the clients reconnect (then the notifier's retry applies or the probe is
    // sent again).
    let n = 0;
    await waitFor(
      async () => {
        await notifier.info({}, 'after', { id: `after-${n++}` }).catch(() => undefined);
        return received.some((id) => id.startsWith('after-'));
      },
      { timeoutMs: 120_000, intervalMs: 1000, message: `a notification sent after the restart handled (sent ${n}, received ${JSON.stringify(received)})` },
    );
    // And it goes on: a later one arrives too.
    await notifier.info({}, 'later', { id: 'later' });
    await waitFor(() => received.includes('later'), { timeoutMs: 30_000, message: 'a later notification handled' });
    expect(received[0]).toBe('before');
  });
});
