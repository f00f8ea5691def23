// Issue 28 "Bounded in-process backlog": 200,000 notifications queued on RabbitMQ and a listener
// with a slow handler in a child process; with the default prefetch (2 x executorSize x batchSize)
// the child holds a bounded window, not the queue, and its peak RSS stays under RSS_BOUND_MB.
// bench/README.md ("Memory: bounded backlog") has the figures and the unlimited comparison:
// TIDINGS_RSS_QUERY='?rabbit_qos_prefetch_count=0' runs the same steps with oslo's unlimited prefetch.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { connect } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getNotificationTransport, Notifier } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitQueues } from '../support/rabbit-admin.js';
import { spawnMember, type MemberChild } from './support/member-child.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/slow-consumer.ts', import.meta.url));
const AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672/';
const QUEUED = 200_000;
const BATCH = 10_000;
/** Generous: the child peaked at 89 MB with the default prefetch (bench/README.md, beside the unlimited figure). */
const RSS_BOUND_MB = 150;
const QUERY = process.env.TIDINGS_RSS_QUERY ?? '';
/** Handled before RSS is read: about four seconds of slow handling (TIDINGS_RSS_HANDLED for a longer look by hand). */
const HANDLED = Number(process.env.TIDINGS_RSS_HANDLED ?? 500);

/** A small notification in oslo's 2.0 envelope, with its own `_unique_id` so none is a duplicate. */
const body = (i: number) =>
  Buffer.from(
    JSON.stringify({
      'oslo.version': '2.0',
      'oslo.message': JSON.stringify({ message_id: randomUUID(), publisher_id: 'rss', event_type: 'rss.ev', priority: 'INFO', payload: { i }, timestamp: '2026-01-01 00:00:00.000000', _unique_id: randomUUID().replaceAll('-', ''), _context_user: 'u1' }),
    }),
  );

/** A field of /proc/<pid>/status in MB (VmRSS, VmHWM). */
function procMb(pid: number, field: string): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`));
  return Math.round(Number(line?.split(/\s+/)[1]) / 1024);
}

describe('RabbitMQ: a slow listener over a queue of 200,000 holds a bounded backlog', () => {
  const topic = uniqueName('t-rss');
  const queue = `${topic}.info`;
  let member: MemberChild | undefined;

  beforeAll(async () => {
    await requireRabbitMQ();
  });

  afterAll(async () => {
    if (member && member.child.exitCode === null) member.child.kill('SIGKILL');
    await deleteRabbitQueues([queue]);
  }, 60_000);

  it(`keeps the consumer's peak RSS under ${RSS_BOUND_MB} MB`, { timeout: 240_000 + HANDLED * 20 }, async () => {
    // The Notifier declares the queue as oslo does (store-and-forward) and binds it; the rest is raw.
    const t = await getNotificationTransport(RABBIT_URL);
    try {
      await new Notifier(t, { publisherId: 'rss', driver: 'messagingv2', topics: [topic] }).info({}, 'rss.ev', { i: 0 });
    } finally {
      await t.cleanup();
    }
    const started = Date.now();
    const conn = await connect(AMQP_URL);
    try {
      const ch = await conn.createConfirmChannel();
      for (let sent = 1; sent < QUEUED; ) {
        const end = Math.min(QUEUED, sent + BATCH);
        for (; sent < end; sent++) ch.publish('', queue, body(sent), { contentType: 'application/json', contentEncoding: 'utf-8' });
        await ch.waitForConfirms();
      }
      expect((await ch.checkQueue(queue)).messageCount).toBe(QUEUED);
      await ch.close();
    } finally {
      await conn.close();
    }
    const publishMs = Date.now() - started;

    // 64 handlers (the default executorSize) of 500 ms each: ~128 a second, far below the broker's pace.
    member = spawnMember(FIXTURE, { url: `${RABBIT_URL}${QUERY}`, topic, handlerMs: 500 });
    const { events, state } = member;
    await waitFor(() => events.some((e) => e.event === 'ready'), { timeoutMs: 30_000, message: `the consumer started; ${state()}` });
    const pid = member.child.pid!;
    // A few seconds of slow handling: long enough for an unbounded prefetch to pull the queue in.
    await waitFor(() => events.some((e) => e.event === 'handled' && (e.n as number) >= HANDLED), { timeoutMs: 60_000 + HANDLED * 20, message: `${HANDLED} handled; ${state()}` });
    const peak = procMb(pid, 'VmHWM');
    const rss = procMb(pid, 'VmRSS');
    const conn2 = await connect(AMQP_URL);
    let ready: number;
    try {
      const ch = await conn2.createChannel();
      ready = (await ch.checkQueue(queue)).messageCount;
    } finally {
      await conn2.close();
    }
    console.log(`amqp-rss${QUERY ? ` (${QUERY})` : ''}: ${QUEUED} queued in ${publishMs} ms; consumer RSS ${rss} MB, peak ${peak} MB; ${ready} still ready on the broker`);
    expect(peak).toBeLessThan(RSS_BOUND_MB);
    // The bound in messages: the broker still holds all but what was handled and the prefetch window.
    expect(ready).toBeGreaterThan(QUEUED - HANDLED - 1000);
  });
});
