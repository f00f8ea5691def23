// Records carrying forged tidings headers (delivery count, original topic, due time), produced
// with a raw kafkajs producer on the librdkafka mock cluster: dead-lettered with the reason, never
// handled nor obeyed, and a far-future due time does not stall its retry partition.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { getNotificationListener, getNotificationTransport, Target, type Context } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { HEADERS, retryTopic } from '../../src/drivers/kafka/topology.js';
import { SHORT_GROUP_QUERY, useKafkaMock } from '../support/kafka-raw.js';

const osloRecord = (id: number) =>
  JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ message_id: randomUUID(), publisher_id: 'p', event_type: 'ev', priority: 'INFO', payload: { id }, timestamp: '2026-11-25 00:00:00.000000', _context: {} }) });

describe('Kafka: forged tidings headers', () => {
  const kafka = useKafkaMock();
  const closers = kafka.closers;

  it('are dead-lettered and logged, never obeyed; a far-future due time stalls nothing', { timeout: 120_000 }, async () => {
    const topic = uniqueName('t');
    const address = `${topic}.info`;
    const pool = uniqueName('pool');
    const t = await getNotificationTransport(`${kafka.broker.url}/?${SHORT_GROUP_QUERY}&requeue_backoff_ms=200&max_deliveries=5`);
    closers.push(() => t.cleanup());
    const handled: Array<{ id: number }> = [];
    const l = getNotificationListener(t, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: number }) => void handled.push(payload) }], { pool, allowRequeue: true });
    await l.start();
    closers.push(async () => {
      await l.stop();
      await l.wait();
    });
    const dlq = await kafka.raw.collect(`${address}.dlq`, uniqueName('raw'));
    const retries = retryTopic(address, pool);
    const farFuture = String(Date.now() + 10 * 365 * 86_400_000);

    // On the address: a huge count, a negative one, another address as the origin.
    await kafka.raw.publish(address, [
      { partition: 0, value: osloRecord(1), headers: { [HEADERS.deliveries]: '99999999999999' } },
      { partition: 0, value: osloRecord(2), headers: { [HEADERS.deliveries]: '-3' } },
      { partition: 0, value: osloRecord(3), headers: { [HEADERS.originalTopic]: 'payroll.info' } },
      { partition: 0, value: osloRecord(4) },
    ]);
    // On the retry partition: a copy due in ten years, then a genuine one due now behind it.
    await kafka.raw.publish(retries, [
      { partition: 0, value: osloRecord(5), headers: { [HEADERS.deliveries]: '1', [HEADERS.originalTopic]: address, [HEADERS.notBefore]: farFuture } },
      { partition: 0, value: osloRecord(6), headers: { [HEADERS.deliveries]: '1', [HEADERS.originalTopic]: address, [HEADERS.notBefore]: String(Date.now()) } },
    ]);

    await waitFor(() => handled.length >= 2 && dlq.length >= 4, { timeoutMs: 60_000, message: 'the genuine records handled and the forged ones dead-lettered' });
    expect(handled.map((p) => p.id).sort()).toEqual([4, 6]);
    const reasons = dlq.map((r) => ({ id: (JSON.parse(JSON.parse(r.value)['oslo.message']) as { payload: { id: number } }).payload.id, reason: r.headers[HEADERS.error], origin: r.headers[HEADERS.originalTopic] }));
    expect(reasons.map((r) => r.id).sort()).toEqual([1, 2, 3, 5]);
    for (const r of reasons) {
      expect(r.reason).toMatch(/^malformed headers: header x-tidings-/);
      expect(r.origin).toBe(address);
    }
    expect(reasons.find((r) => r.id === 5)!.reason).toContain(HEADERS.notBefore);
    expect(reasons.find((r) => r.id === 3)!.reason).toContain('payroll.info');
    // Nothing went to the forged origin's dead letters or retry topic.
    const topics = await (async () => {
      const admin = kafka.raw.kafka.admin();
      await admin.connect();
      try {
        return await admin.listTopics();
      } finally {
        await admin.disconnect();
      }
    })();
    expect(topics.filter((n) => n.startsWith('payroll.info'))).toEqual([]);
  });
});
