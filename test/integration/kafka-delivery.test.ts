// Delivery rules of the Kafka driver on the Kafka test broker (librdkafka's mock cluster, 3
// brokers): commits after the handler, requeue through the group's retry topic (read by a group of
// its own), dead letters after maxDeliveries, malformed records committed past, per-key order,
// oslo's record format, the handover of partitions whose previous owner committed late.
import { randomUUID } from 'node:crypto';
import { AssignerProtocol, Kafka, logLevel, type PartitionAssigner } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import {
  createMemoryLogger,
  getNotificationListener,
  getNotificationTransport,
  NotificationResult,
  Notifier,
  Target,
  type Context,
  type Transport,
} from '../../src/index.js';
import { deferred, uniqueName, waitFor } from '../../src/testing/wait.js';
import { HANDOVER_GRACE_MS } from '../../src/drivers/kafka/kafka-listener.js';
import { SHORT_GROUP_QUERY, useKafkaMock } from '../support/kafka-raw.js';

type Started = { stop(): Promise<void>; wait(): Promise<void> };

/** A notification record as oslo's Kafka notifier writes it, with `payload.id`. */
const osloRecord = (id: number) =>
  JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ message_id: randomUUID(), publisher_id: 'p', event_type: 'ev', priority: 'INFO', payload: { id }, timestamp: '2026-11-25 00:00:00.000000', _context: {} }) });

describe('Kafka driver delivery (librdkafka mock cluster)', () => {
  const kafka = useKafkaMock();
  const closers = kafka.closers;

  const url = (query = '') => `${kafka.broker.url}/?${SHORT_GROUP_QUERY}&consumer_group=${uniqueName('g')}${query}`;
  const transport = async (u: string, options: Parameters<typeof getNotificationTransport>[1] = {}): Promise<Transport> => {
    const t = await getNotificationTransport(u, options);
    closers.push(() => t.cleanup());
    return t;
  };
  const started = async <L extends Started & { start(): Promise<void> }>(l: L): Promise<L> => {
    await l.start();
    closers.push(async () => {
      await l.stop();
      await l.wait();
    });
    return l;
  };
  const notifier = (t: Transport, topic: string, publisherId = 'tidings.test') => new Notifier(t, { publisherId, driver: 'messagingv2', topics: [topic] });

  /**
   * A first member of `u`'s group on `topic` that got notification 1 and never finishes its
   * handler (until `gate` is resolved).
   */
  const memberHoldingOne = async (u: string, topic: string, options: Parameters<typeof getNotificationTransport>[1] = {}) => {
    const gate = deferred<void>();
    const seen: number[] = [];
    const t = await transport(u, options);
    const l = getNotificationListener(t, [new Target({ topic })], [
      {
        async info(_c: Context, _p: unknown, _e: string, payload: { id: number }) {
          seen.push(payload.id);
          await gate.promise;
        },
      },
    ]);
    await l.start();
    await notifier(t, topic).info({}, 'ev', { id: 1 });
    await waitFor(() => seen.length === 1, { timeoutMs: 20_000, message: 'the first member got the message' });
    return { t, gate, seen };
  };

  /** Starts the next member of `u`'s group on `topic` and expects notification 1 to reach it. */
  const nextMemberGetsOne = async (u: string, topic: string, timeoutMs: number) => {
    const seen: number[] = [];
    const t = await transport(u);
    await started(getNotificationListener(t, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: number }) => void seen.push(payload.id) }]));
    await waitFor(() => seen.length === 1, { timeoutMs, message: 'the next member got the message the first one never finished' });
    expect(seen).toEqual([1]);
  };

  it('commits only after the handler finished: a member gone mid-handler leaves the message to the next member', async () => {
    const u = url('&shutdown_timeout_ms=100');
    const topic = uniqueName('t');
    // The first member never finishes its handler; its transport is cleaned up under it.
    const first = await memberHoldingOne(u, topic);
    await first.t.cleanup();
    await nextMemberGetsOne(u, topic, 30_000);
    first.gate.resolve();
  });

  it('a record read again after a rebalance while its first copy is being handled is not committed past: the next member gets it', async () => {
    const u = url('&shutdown_timeout_ms=100');
    const [topic, other] = [uniqueName('t'), uniqueName('t')];
    const logger = createMemoryLogger();
    const first = await memberHoldingOne(u, topic, { logger });
    // A member of the same group on another topic: the group rebalances and gives the first member
    // every partition of its topic again, which it reads again from the last commit, the record
    // still in its handler included.
    const t2 = await transport(u);
    await started(getNotificationListener(t2, [new Target({ topic: other })], [{ info() {} }]));
    const copy = (r: { msg: string }) => /copy of a notification being handled|duplicate notification/.test(r.msg);
    await waitFor(() => logger.records.some(copy), { timeoutMs: 30_000, message: 'the first member read the record again in the next generation' });
    expect(first.seen).toEqual([1]);
    // The first member goes without finishing its handler.
    await first.t.cleanup();
    await nextMemberGetsOne(u, topic, 40_000);
    first.gate.resolve();
  }, 100_000);

  it('commits a partition up to its lowest record still being handled, never past it, while later records are done', async () => {
    const group = uniqueName('pool');
    const topic = uniqueName('t');
    const t = await transport(url());
    const gate = deferred<void>();
    const handled: number[] = [];
    await started(
      getNotificationListener(t, [new Target({ topic })], [
        {
          async info(_c: Context, _p: unknown, _e: string, payload: { id: number }) {
            if (payload.id === 0) await gate.promise;
            handled.push(payload.id);
          },
        },
      ], { pool: group }),
    );
    // Partition 0: the first record's handler waits; the two after it finish. Partition 1: one record, the barrier.
    await kafka.raw.publish(`${topic}.info`, [0, 1, 2].map((id) => ({ partition: 0, value: osloRecord(id) })));
    await waitFor(() => handled.includes(1) && handled.includes(2), { timeoutMs: 20_000, message: 'the later records of partition 0 handled' });
    await kafka.raw.publish(`${topic}.info`, [{ partition: 1, value: osloRecord(9) }]);
    await waitFor(async () => (await kafka.raw.committed(group, `${topic}.info`)) >= 1, { timeoutMs: 20_000, message: 'the barrier on partition 1 committed' });
    expect(await kafka.raw.committed(group, `${topic}.info`), 'nothing of partition 0 is committed while its first record runs').toBe(1);
    gate.resolve();
    await waitFor(async () => (await kafka.raw.committed(group, `${topic}.info`)) === 4, { timeoutMs: 20_000, message: 'partition 0 committed past all three once the first finished' });
    expect(handled.sort()).toEqual([0, 1, 2, 9]);
  });

  it('commit_mode=before-dispatch (oslo) commits before the handler runs: a member gone mid-handler loses the message', async () => {
    const group = uniqueName('pool');
    const u = url('&commit_mode=before-dispatch&shutdown_timeout_ms=100');
    const topic = uniqueName('t');
    const gate = deferred<void>();
    const seenByFirst: number[] = [];
    const t1 = await transport(u);
    await getNotificationListener(t1, [new Target({ topic })], [
      {
        async info(_c: Context, _p: unknown, _e: string, payload: { id: number }) {
          seenByFirst.push(payload.id);
          await gate.promise;
        },
      },
    ], { pool: group }).start();
    await notifier(t1, topic).info({}, 'ev', { id: 1 });
    await waitFor(() => seenByFirst.length === 1, { timeoutMs: 20_000, message: 'the first member got the message' });
    await waitFor(async () => (await kafka.raw.committed(group, `${topic}.info`)) === 1, { timeoutMs: 20_000, message: 'committed while the handler still runs' });
    await t1.cleanup();
    const seenBySecond: number[] = [];
    const t2 = await transport(u);
    await started(getNotificationListener(t2, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: number }) => void seenBySecond.push(payload.id) }], { pool: group }));
    // A barrier: the next notification arrives, the unfinished one never does (at-most-once).
    await notifier(t2, topic).info({}, 'ev', { id: 2 });
    await waitFor(() => seenBySecond.length >= 1, { timeoutMs: 30_000, message: 'the next member got the barrier' });
    expect(seenBySecond).toEqual([2]);
    gate.resolve();
  });

  it('listeners without a pool or consumer_group share the group oslo_messaging_consumer', async () => {
    const topic = uniqueName('t');
    const t = await transport(`${kafka.broker.url}/?${SHORT_GROUP_QUERY}`);
    const seen: number[] = [];
    await started(getNotificationListener(t, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: number }) => void seen.push(payload.id) }]));
    await notifier(t, topic).info({}, 'ev', { id: 1 });
    await waitFor(() => seen.length === 1, { timeoutMs: 20_000, message: 'the notification' });
    await waitFor(async () => (await kafka.raw.committed('oslo_messaging_consumer', `${topic}.info`)) === 1, { timeoutMs: 20_000, message: "oslo's default group committed it" });
  });

  it("a partition whose previous owner commits only after the rebalance: its records below that commit are not run again", async () => {
    // The previous owner is a raw kafkajs member that read the records and commits them only once
    // the new assignment is known (as a member whose commits the broker refused during the
    // rebalance does), after the new owner has read its start positions. It speaks tidings'
    // assignment protocol and, as the group leader, hands every partition to the other member.
    const topic = uniqueName('t');
    const pool = uniqueName('pool');
    await kafka.broker.createTopic({ name: `${topic}.info`, partitions: 4 });
    await kafka.raw.publish(`${topic}.info`, [0, 1, 2, 3, 4, 5, 6, 7].map((id) => ({ partition: id % 4, value: osloRecord(id) })));
    const RAW = Buffer.from('raw-previous-owner');
    const giveAway: PartitionAssigner = ({ cluster }) => ({
      name: 'TidingsSubscriptionRoundRobin',
      version: 0,
      async assign({ members }) {
        const others = members.filter((m) => !AssignerProtocol.MemberMetadata.decode(m.memberMetadata)?.userData.equals(RAW));
        const partitions = cluster.findTopicPartitionMetadata(`${topic}.info`).map((p) => p.partitionId);
        return members.map((m) => ({
          memberId: m.memberId,
          // Everything to the first other member; to the previous owner while it is alone.
          memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment: m === (others[0] ?? m) ? { [`${topic}.info`]: partitions } : {}, userData: Buffer.alloc(0) }),
        }));
      },
      protocol: ({ topics }) => ({ name: 'TidingsSubscriptionRoundRobin', metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: RAW }) }),
    });
    const previous = kafka.raw.kafka.consumer({ groupId: pool, sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10_000, maxWaitTimeInMs: 200, partitionAssigners: [giveAway] });
    closers.push(() => previous.disconnect());
    let joins = 0;
    let lateCommit: Promise<void> | undefined;
    previous.on(previous.events.GROUP_JOIN, () => {
      // Its second generation is the new member's first: it commits past the 8 records a moment later.
      if (++joins === 2) lateCommit = new Promise((r) => setTimeout(r, 100)).then(() => previous.commitOffsets([0, 1, 2, 3].map((partition) => ({ topic: `${topic}.info`, partition, offset: '2' }))));
    });
    await previous.connect();
    await previous.subscribe({ topic: `${topic}.info`, fromBeginning: true });
    await previous.run({ autoCommit: false, eachBatch: async () => {} });
    await waitFor(() => joins === 1, { timeoutMs: 20_000, message: 'the previous owner joined the pool' });

    const t = await transport(url());
    const handled: number[] = [];
    await started(getNotificationListener(t, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: number }) => void handled.push(payload.id) }], { pool }));
    await waitFor(() => lateCommit !== undefined, { timeoutMs: 20_000, message: 'the previous owner in the new generation' });
    await lateCommit;
    // One record per partition after the handed-over ones: once all four are handled, anything
    // below them was either handled already or skipped (Kafka keeps order within a partition).
    await kafka.raw.publish(`${topic}.info`, [0, 1, 2, 3].map((partition) => ({ partition, value: osloRecord(100 + partition) })));
    await waitFor(() => [100, 101, 102, 103].every((id) => handled.includes(id)), { timeoutMs: 30_000, message: `the four later records (handled: ${handled.join(',')})` });
    expect(handled.filter((id) => id < 100), `records the previous owner committed within ${HANDOVER_GRACE_MS} ms of the rebalance`).toEqual([]);
  });

  it('requeue re-publishes to the group retry topic with a delivery count, and the same group reads it again', async () => {
    const group = uniqueName('pool');
    const u = url();
    const topic = uniqueName('t');
    const t = await transport(u);
    const deliveries: number[] = [];
    await started(
      getNotificationListener(t, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: number }) => (deliveries.push(payload.id), deliveries.length === 1 ? NotificationResult.REQUEUE : NotificationResult.HANDLED) }], {
        allowRequeue: true,
        pool: group,
      }),
    );
    await notifier(t, topic).info({}, 'ev', { id: 7 });
    await waitFor(() => deliveries.length === 2, { timeoutMs: 20_000, message: 'the requeued notification came back' });
    const retried = await kafka.raw.collect(`${topic}.info.retry.${group}`, uniqueName('raw'));
    await waitFor(() => retried.length === 1, { timeoutMs: 20_000, message: 'one record on the retry topic' });
    expect(retried[0].headers).toMatchObject({ 'x-tidings-deliveries': '1', 'x-tidings-original-topic': `${topic}.info` });
    expect(deliveries).toEqual([7, 7]);
    // The retry topic is read by a group of its own, so the group's consumer of the busy topic
    // never fetches its (nearly always empty) partitions; each group commits what it handled.
    await waitFor(async () => (await kafka.raw.committed(`${group}.retry`, `${topic}.info.retry.${group}`)) === 1, { timeoutMs: 20_000, message: 'the retry group committed the retried record' });
    await waitFor(async () => (await kafka.raw.committed(group, `${topic}.info`)) === 1, { timeoutMs: 20_000, message: 'the pool committed past the original' });
    expect(await kafka.raw.committed(group, `${topic}.info.retry.${group}`)).toBe(0);
  });

  it('requeue_backoff_ms holds a requeued notification until its backoff is over, while later notifications go on', async () => {
    const backoffMs = 2000;
    const group = uniqueName('pool');
    const topic = uniqueName('t');
    const t = await transport(url(`&requeue_backoff_ms=${backoffMs}`));
    const seen: Array<{ id: number; at: number }> = [];
    await started(
      getNotificationListener(
        t,
        [new Target({ topic })],
        [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: number }) => (seen.push({ id: payload.id, at: Date.now() }), seen.length === 1 ? NotificationResult.REQUEUE : NotificationResult.HANDLED) }],
        { allowRequeue: true, pool: group },
      ),
    );
    await notifier(t, topic).info({}, 'ev', { id: 7 });
    await waitFor(() => seen.length === 1, { timeoutMs: 20_000, message: 'the first delivery' });
    await notifier(t, topic).info({}, 'ev', { id: 8 });
    await waitFor(() => seen.length === 3, { timeoutMs: 20_000, message: `the later notification and the requeued one (seen: ${JSON.stringify(seen)})` });
    expect(seen.map((s) => s.id), 'the later notification is not held behind the requeued one').toEqual([7, 8, 7]);
    expect(seen[2].at - seen[0].at, 'the second delivery waited out the backoff').toBeGreaterThanOrEqual(backoffMs - 5);
    const retried = await kafka.raw.collect(`${topic}.info.retry.${group}`, uniqueName('raw'));
    await waitFor(() => retried.length === 1, { timeoutMs: 20_000, message: 'one record on the retry topic' });
    const notBefore = Number(retried[0].headers['x-tidings-not-before']);
    expect(notBefore - seen[0].at, 'the copy is due a backoff after the first delivery').toBeGreaterThanOrEqual(backoffMs);
    expect(seen[2].at, 'the copy was handed out once due, not before').toBeGreaterThanOrEqual(notBefore);
  });

  it('a listener stopped while it holds a requeued notification for its backoff leaves it to the next member, which waits out the rest', async () => {
    const backoffMs = 6000;
    const group = uniqueName('pool');
    const topic = uniqueName('t');
    const u = url(`&requeue_backoff_ms=${backoffMs}`);
    const first: number[] = [];
    const t1 = await transport(u);
    const l1 = await started(getNotificationListener(t1, [new Target({ topic })], [{ info: () => (first.push(Date.now()), NotificationResult.REQUEUE) }], { allowRequeue: true, pool: group }));
    await notifier(t1, topic).info({}, 'ev', { id: 1 });
    await waitFor(() => first.length === 1, { timeoutMs: 20_000, message: 'the first delivery' });
    const retried = await kafka.raw.collect(`${topic}.info.retry.${group}`, uniqueName('raw'));
    await waitFor(() => retried.length === 1, { timeoutMs: 20_000, message: 'the retry copy stored' });
    await l1.stop();
    await l1.wait();
    expect(first, 'the copy was not handled before its backoff was over').toHaveLength(1);
    const second: number[] = [];
    const t2 = await transport(u);
    await started(getNotificationListener(t2, [new Target({ topic })], [{ info: () => void second.push(Date.now()) }], { pool: group }));
    await waitFor(() => second.length === 1, { timeoutMs: 30_000, message: 'the next member handled the requeued notification' });
    expect(second[0]).toBeGreaterThanOrEqual(Number(retried[0].headers['x-tidings-not-before']) - 5);
    // A barrier on the main topic: the copy is not handled a second time.
    await notifier(t2, topic).info({}, 'ev', { id: 2 });
    await waitFor(() => second.length === 2, { timeoutMs: 20_000, message: 'the barrier notification' });
    expect(second).toHaveLength(2);
  });

  it('after maxDeliveries a notification goes to <topic>.dlq with why, and is not delivered again', async () => {
    const u = url('&max_deliveries=3');
    const topic = uniqueName('t');
    const logger = createMemoryLogger();
    const t = await transport(u, { logger });
    let deliveries = 0;
    let barrier = false;
    const endpoint = { info: (_c: Context, _p: unknown, event: string) => (event === 'poison' ? (deliveries++, NotificationResult.REQUEUE) : ((barrier = true), NotificationResult.HANDLED)) };
    await started(getNotificationListener(t, [new Target({ topic })], [endpoint], { allowRequeue: true }));
    await notifier(t, topic).info({}, 'poison', { id: 1 });
    const dead = await kafka.raw.collect(`${topic}.info.dlq`, uniqueName('raw'));
    await waitFor(() => dead.length === 1, { timeoutMs: 30_000, message: `the dead letter (deliveries so far: ${deliveries})` });
    expect(deliveries).toBe(3);
    expect(dead[0].headers).toMatchObject({ 'x-tidings-deliveries': '3', 'x-tidings-original-topic': `${topic}.info` });
    expect(dead[0].headers['x-tidings-reason']).toMatch(/requeued 3 times/);
    expect(JSON.parse(JSON.parse(dead[0].value)['oslo.message']).event_type).toBe('poison');
    // A later message as a barrier: the poison one is not handled a fourth time.
    await notifier(t, topic).info({}, 'after', { id: 2 });
    await waitFor(() => barrier, { timeoutMs: 20_000, message: 'the barrier notification' }).catch((err: Error) => {
      const log = logger.records.filter((r) => r.level !== 'debug' || /rebalanc|assigned|joined|crash/i.test(r.msg)).map((r) => `${r.level} ${r.msg} ${JSON.stringify(r.fields)}`);
      throw new Error(`${err.message}; poison deliveries ${deliveries}; log:\n${log.join('\n')}`);
    });
    expect(deliveries).toBe(3);
  });

  it('malformed records are logged without their body, committed past and never read again by the group', async () => {
    const u = url();
    const topic = uniqueName('t');
    const logger = createMemoryLogger();
    const t1 = await transport(u, { logger });
    const got: string[] = [];
    const endpoint = { info: (_c: Context, _p: unknown, event: string) => void got.push(event) };
    const l1 = await started(getNotificationListener(t1, [new Target({ topic })], [endpoint]));
    await kafka.raw.publish(`${topic}.info`, [{ value: '{not json SECRET-BODY' }, { value: JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': '{"payload":"SECRET-BODY"}' }) }, { value: '' }]);
    await notifier(t1, topic).info({}, 'good', {});
    await waitFor(() => got.length === 1, { timeoutMs: 20_000, message: 'the good one after the bad ones' });
    const warned = () => logger.records.filter((r) => r.level === 'warn' && /malformed/.test(r.msg)).length;
    await waitFor(() => warned() === 3, { timeoutMs: 10_000, message: 'three malformed records logged' });
    expect(JSON.stringify(logger.records)).not.toContain('SECRET-BODY');
    await l1.stop();
    await l1.wait();
    // A new member of the same group starts from the commit: past the malformed records.
    const logger2 = createMemoryLogger();
    const t2 = await transport(u, { logger: logger2 });
    await started(getNotificationListener(t2, [new Target({ topic })], [endpoint]));
    await notifier(t2, topic).info({}, 'barrier', {});
    await waitFor(() => got.includes('barrier'), { timeoutMs: 30_000 });
    expect(got).toEqual(['good', 'barrier']);
    expect(logger2.records.filter((r) => r.level === 'warn' && /malformed/.test(r.msg))).toEqual([]);
  });

  it('with key=publisher the notifications of one publisher are handled in order', async () => {
    const u = url('&key=publisher');
    const topic = uniqueName('t');
    const t = await transport(u);
    const seen: Array<{ from: string; i: number }> = [];
    await started(
      getNotificationListener(t, [new Target({ topic })], [{ info: (_c: Context, publisher: unknown, _e: string, payload: { i: number }) => void seen.push({ from: String(publisher), i: payload.i }) }], { executorSize: 1 }),
    );
    const publishers = ['p-a', 'p-b', 'p-c'].map((p) => notifier(t, topic, p));
    const N = 30;
    for (let i = 0; i < N; i++) await Promise.all(publishers.map((n) => n.info({}, 'ev', { i })));
    await waitFor(() => seen.length === 3 * N, { timeoutMs: 20_000, message: `${3 * N} notifications` });
    for (const p of ['p-a', 'p-b', 'p-c']) expect(seen.filter((s) => s.from === p).map((s) => s.i)).toEqual([...Array(N).keys()]);
    const records = await kafka.raw.collect(`${topic}.info`, uniqueName('raw'));
    await waitFor(() => records.length === 3 * N, { timeoutMs: 20_000 });
    expect(new Set(records.map((r) => r.key))).toEqual(new Set(['p-a', 'p-b', 'p-c']));
    for (const p of ['p-a', 'p-b', 'p-c']) expect(new Set(records.filter((r) => r.key === p).map((r) => r.partition)).size).toBe(1);
  });

  it('a key function in driverOptions keys each notification, and notifications of one key are handled in order', async () => {
    const topic = uniqueName('t');
    const seenTopics = new Set<string>();
    const key = (notification: Record<string, unknown>, recordTopic: string) => {
      seenTopics.add(recordTopic);
      const { i } = notification.payload as { i: number };
      return i % 10 === 9 ? undefined : `k${i % 3}`;
    };
    const t = await transport(url(), { driverOptions: { key } });
    const seen: number[] = [];
    await started(getNotificationListener(t, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { i: number }) => void seen.push(payload.i) }], { executorSize: 1 }));
    const n = notifier(t, topic);
    const N = 30;
    await Promise.all(Array.from({ length: N }, (_, i) => n.info({}, 'ev', { i })));
    await waitFor(() => seen.length === N, { timeoutMs: 20_000, message: `${N} notifications` });
    for (const k of [0, 1, 2]) {
      const ofKey = [...Array(N).keys()].filter((i) => i % 3 === k && i % 10 !== 9);
      expect(seen.filter((i) => ofKey.includes(i)), `key k${k} in order`).toEqual(ofKey);
    }
    expect([...seenTopics]).toEqual([`${topic}.info`]);
    const records = await kafka.raw.collect(`${topic}.info`, uniqueName('raw'));
    await waitFor(() => records.length === N, { timeoutMs: 20_000 });
    const keyOf = (r: (typeof records)[number]) => (JSON.parse(JSON.parse(r.value)['oslo.message']).payload as { i: number }).i;
    for (const r of records) expect(r.key).toBe(keyOf(r) % 10 === 9 ? null : `k${keyOf(r) % 3}`);
    for (const k of ['k0', 'k1', 'k2']) expect(new Set(records.filter((r) => r.key === k).map((r) => r.partition)).size).toBe(1);
  });

  it('on a broker without CreateTopics (the test broker) topics are auto-created, with a debug log', async () => {
    const logger = createMemoryLogger();
    const topic = uniqueName('t');
    const t = await transport(url(), { logger });
    const seen: number[] = [];
    await started(getNotificationListener(t, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: number }) => void seen.push(payload.id) }]));
    await notifier(t, topic).info({}, 'ev', { id: 1 });
    await waitFor(() => seen.length === 1, { timeoutMs: 20_000, message: 'the notification on the auto-created topic' });
    const fallback = logger.records.filter((r) => r.msg.includes('no CreateTopics'));
    expect(fallback.length).toBeGreaterThan(0);
    expect(fallback.every((r) => r.level === 'debug')).toBe(true);
    expect(fallback.flatMap((r) => r.fields.topics as string[])).toContain(`${topic}.info`);
    expect(logger.records.filter((r) => r.level === 'warn' || r.level === 'error')).toEqual([]);
  });

  it("writes oslo's record (no key, no headers, envelope, nested _context, no _unique_id) and reads one without _unique_id", async () => {
    const u = url();
    const topic = uniqueName('t');
    const t = await transport(u);
    await notifier(t, topic).warn({ user: 'u1', request_id: 'r1' }, 'written', { a: 1 });
    const records = await kafka.raw.collect(`${topic}.warn`, uniqueName('raw'));
    await waitFor(() => records.length === 1, { timeoutMs: 20_000 });
    expect(records[0].key).toBeNull();
    expect(records[0].headers).toEqual({});
    const envelope = JSON.parse(records[0].value);
    expect(Object.keys(envelope).sort()).toEqual(['oslo.message', 'oslo.version']);
    const inner = JSON.parse(envelope['oslo.message']);
    expect(Object.keys(inner).sort()).toEqual(['_context', 'event_type', 'message_id', 'payload', 'priority', 'publisher_id', 'timestamp']);
    expect(inner._context).toEqual({ user: 'u1', request_id: 'r1' });

    const got: Array<{ ctx: Context; payload: unknown; id: string }> = [];
    await started(getNotificationListener(t, [new Target({ topic })], [{ warn: (ctx: Context, _p: unknown, _e: string, payload: unknown, meta: { message_id: string }) => void got.push({ ctx, payload, id: meta.message_id }) }]));
    const id = randomUUID();
    const oslo = { message_id: id, publisher_id: 'py', event_type: 'from.oslo', priority: 'WARN', payload: { b: 2 }, timestamp: '2026-01-01 00:00:00.000000', _context: { user: 'u2' } };
    // The same record twice: without _unique_id, message_id is what dedupes.
    const value = JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify(oslo) });
    // A barrier on the same partition (same key), after the copy: once it is handled, so was the copy.
    const barrier = JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ ...oslo, message_id: randomUUID(), event_type: 'barrier' }) });
    await kafka.raw.publish(`${topic}.warn`, [{ value, key: 'same-partition' }, { value, key: 'same-partition' }, { value: barrier, key: 'same-partition' }]);
    await waitFor(() => got.length === 3, { timeoutMs: 20_000, message: 'the written one, the oslo one and the barrier' });
    expect(got.filter((g) => g.id === id)).toHaveLength(1);
    const fromOslo = got.find((g) => g.id === id)!;
    expect(fromOslo.ctx).toMatchObject({ user: 'u2' });
    expect(fromOslo.payload).toEqual({ b: 2 });
  });

  it('inspectPools: the default group shows once it committed, with high watermark minus committed as backlog; a missing topic is neither reported nor created', async () => {
    const u = url();
    const group = /consumer_group=([^&]+)/.exec(u)![1];
    const t = await transport(u);
    const [topic, missing] = [uniqueName('t'), uniqueName('t')];
    expect(t.driver.inspection()).toEqual({ listsTopics: true, listsPools: false, consumers: false, backlog: true });
    expect(await t.driver.inspectPools({ topic: missing, pools: ['p'] })).toEqual([]);
    const admin = new Kafka({ brokers: kafka.broker.brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    closers.push(() => admin.disconnect());
    expect((await admin.listTopics()).filter((name) => name.startsWith(missing))).toEqual([]);

    const n = notifier(t, topic);
    await n.info({}, 'ev', { id: 0 });
    // The topic exists, but the group has no position on it yet: it is not known to exist.
    expect(await t.driver.inspectPools({ topic, priorities: ['info'] })).toEqual([]);
    const seen: number[] = [];
    const l = getNotificationListener(t, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: number }) => void seen.push(payload.id) }]);
    await l.start();
    await waitFor(() => seen.length === 1, { timeoutMs: 20_000, message: 'the first notification' });
    await waitFor(async () => (await t.driver.inspectPools({ topic, priorities: ['info'] }))[0]?.backlog === 0, { timeoutMs: 20_000, message: 'the group committed it' });
    await l.stop();
    await l.wait();
    for (let id = 1; id <= 3; id++) await n.info({}, 'ev', { id });
    expect(await t.driver.inspectPools({ topic, priorities: ['info', 'error'] })).toEqual([{ address: `${topic}.info`, pool: group, isDefault: true, backlog: 3 }]);
  });
});
