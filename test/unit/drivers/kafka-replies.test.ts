// The Kafka driver's reply sender (KafkaRpc.sendReply) over a stand-in for its own connection
// class (tidings' seam; kafkajs is not involved): a reply is handed off at once, retried alone,
// bounded in number, logged and counted when lost, and waited for (bounded) at close.
import { afterEach, describe, expect, it } from 'vitest';
import type { CallRegistry } from '../../../src/contract/pending-replies.js';
import { MessageDeliveryFailure } from '../../../src/core/errors.js';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { TransportURL } from '../../../src/core/transport-url.js';
import type { OutgoingRecord } from '../../../src/drivers/kafka/client/index.js';
import type { KafkaConnection } from '../../../src/drivers/kafka/connection.js';
import { KafkaRpc, MAX_REPLIES_IN_FLIGHT } from '../../../src/drivers/kafka/kafka-rpc.js';
import { resolveOptions } from '../../../src/drivers/kafka/options.js';
import { deferred, waitFor, type Deferred } from '../../../src/testing/wait.js';

const REPLY_TOPIC = `reply_${'a'.repeat(32)}`;

/** What the reply sender asked of the connection: shared-request produces and lone ones, each settled by the test. */
class FakeConnection {
  readonly shared: Array<{ record: OutgoingRecord; settle: Deferred<void> }> = [];
  readonly alone: Array<{ record: OutgoingRecord; settle: Deferred<void> }> = [];

  produce(record: OutgoingRecord): Promise<void> {
    const settle = deferred<void>();
    this.shared.push({ record, settle });
    return settle.promise;
  }

  produceAlone(record: OutgoingRecord): Promise<void> {
    const settle = deferred<void>();
    this.alone.push({ record, settle });
    return settle.promise;
  }
}

describe('KafkaRpc.sendReply', () => {
  const opened: KafkaRpc[] = [];
  const closing = new AbortController();
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((r) => r.close(0)));
  });

  const rig = (signal: AbortSignal = closing.signal) => {
    const conn = new FakeConnection();
    const logger = createMemoryLogger();
    const options = resolveOptions(TransportURL.parse('kafka://127.0.0.1:9092/'));
    const rpc = new KafkaRpc(conn as unknown as KafkaConnection, options, logger, {} as CallRegistry, signal);
    opened.push(rpc);
    return { conn, logger, rpc };
  };

  it('returns before the reply is produced: a reply that never leaves holds nothing of its caller', () => {
    const { conn, rpc } = rig();
    expect(rpc.sendReply(REPLY_TOPIC, 'm1', '{"result":1}')).toBeUndefined();
    expect(conn.shared.map((s) => s.record)).toEqual([{ topic: REPLY_TOPIC, value: '{"result":1}' }]);
    expect(rpc.repliesInFlight).toBe(1);
  });

  it(`keeps at most ${MAX_REPLIES_IN_FLIGHT} in flight: past that a reply is dropped, logged and counted, and sending resumes once they leave`, async () => {
    const { conn, logger, rpc } = rig();
    for (let i = 0; i < MAX_REPLIES_IN_FLIGHT; i++) rpc.sendReply(REPLY_TOPIC, `m${i}`, 'body');
    rpc.sendReply(REPLY_TOPIC, 'over', 'secret body');
    expect(conn.shared).toHaveLength(MAX_REPLIES_IN_FLIGHT);
    expect(rpc.lostReplies).toBe(1);
    const dropped = logger.records.filter((r) => r.msg === 'Too many replies in flight; dropping a reply');
    expect(dropped.map((r) => r.fields.msgId)).toEqual(['over']);
    expect(JSON.stringify(dropped)).not.toContain('secret body');
    for (const s of conn.shared) s.settle.resolve();
    await waitFor(() => rpc.repliesInFlight === 0, { message: 'the replies produced' });
    rpc.sendReply(REPLY_TOPIC, 'after', 'body');
    expect(conn.shared).toHaveLength(MAX_REPLIES_IN_FLIGHT + 1);
    expect(rpc.lostReplies).toBe(1);
  });

  it('retries a failed reply in a produce request of its own', { timeout: 10_000 }, async () => {
    const { conn, logger, rpc } = rig();
    rpc.sendReply(REPLY_TOPIC, 'm1', 'body');
    conn.shared[0].settle.reject(new MessageDeliveryFailure('UNKNOWN_TOPIC_OR_PARTITION', { retriable: true }));
    await waitFor(() => conn.alone.length === 1, { timeoutMs: 5000, message: 'the retry produced alone' });
    expect(conn.alone[0].record).toEqual({ topic: REPLY_TOPIC, value: 'body' });
    expect(conn.shared).toHaveLength(1);
    conn.alone[0].settle.resolve();
    await waitFor(() => rpc.repliesInFlight === 0, { message: 'the reply produced' });
    expect(rpc.lostReplies).toBe(0);
    expect(logger.records.filter((r) => r.level === 'warn')).toEqual([]);
  });

  it('a reply that cannot be produced is logged once and counted, never thrown', async () => {
    const { conn, logger, rpc } = rig();
    rpc.sendReply(REPLY_TOPIC, 'm1', 'secret body');
    conn.shared[0].settle.reject(new MessageDeliveryFailure('TOPIC_AUTHORIZATION_FAILED', { retriable: false }));
    await waitFor(() => rpc.lostReplies === 1, { message: 'the reply counted as lost' });
    expect(rpc.repliesInFlight).toBe(0);
    expect(conn.alone).toEqual([]);
    const lost = logger.records.filter((r) => r.msg === 'Could not send a reply');
    expect(lost.map((r) => [r.fields.replyTopic, r.fields.msgId])).toEqual([[REPLY_TOPIC, 'm1']]);
    expect(JSON.stringify(lost)).not.toContain('secret body');
  });

  it('cleanup stops the retries at once and waits no longer than its timeout for a produce that hangs', async () => {
    const signal = new AbortController();
    const { conn, rpc } = rig(signal.signal);
    rpc.sendReply(REPLY_TOPIC, 'waiting', 'body');
    rpc.sendReply(REPLY_TOPIC, 'hanging', 'body');
    // The first is between attempts (its first failed), the second's produce never answers.
    conn.shared[0].settle.reject(new MessageDeliveryFailure('leader not available', { retriable: true }));
    signal.abort();
    const began = Date.now();
    await rpc.close(300);
    expect(Date.now() - began).toBeLessThan(5000);
    expect(conn.alone).toEqual([]);
    expect(rpc.lostReplies).toBe(1);
    expect(rpc.repliesInFlight).toBe(1);
  });
});
