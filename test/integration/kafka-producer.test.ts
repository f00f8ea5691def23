// The Kafka driver's producer settings on the Kafka test broker (librdkafka's mock cluster): when
// a send resolves, linger (`producer_batch_timeout`), gzip compression, acks and idempotence,
// each observed on the broker or in what a raw kafkajs consumer reads back.
import { performance } from 'node:perf_hooks';
import { Kafka, logLevel, type KafkaMessage } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { getNotificationListener, getNotificationTransport, InvalidArgument, Notifier, Target, type Context, type Transport } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { startKafkaMock } from '../support/kafka-broker.js';
import { SHORT_GROUP_QUERY, useKafkaMock } from '../support/kafka-raw.js';

/** A record as a raw kafkajs consumer read it, with the producer fields of its record batch. */
interface ReadRecord {
  value: string;
  /** Offset of the first record of its record batch: records of one produce request share it. */
  batchOffset: string;
  /** Producer id of its record batch: -1 unless an idempotent producer wrote it. */
  producerId: string;
}

/** kafkajs decodes each record batch's header into `batchContext`; its types leave it out. */
type WithBatchContext = KafkaMessage & { batchContext?: { firstOffset: string; producerId: string } };

describe('Kafka producer settings (librdkafka mock cluster)', () => {
  const kafka = useKafkaMock();
  const closers = kafka.closers;

  const url = (query = '') => `${kafka.broker.url}/?${SHORT_GROUP_QUERY}&consumer_group=${uniqueName('g')}${query}`;
  const transport = async (u: string): Promise<Transport> => {
    const t = await getNotificationTransport(u);
    closers.push(() => t.cleanup());
    return t;
  };
  const notifier = (t: Transport, topic: string) => new Notifier(t, { publisherId: 'tidings.test', driver: 'messagingv2', topics: [topic] });

  /** Records a topic holds, summed over its partitions' high watermarks, read by a kafkajs admin connected to `brokers` once. */
  const highWatermarks = async (brokers: readonly string[] = kafka.broker.brokers): Promise<(topic: string) => Promise<number>> => {
    const admin = new Kafka({ brokers: [...brokers], clientId: 'tidings-test-offsets', logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    closers.push(() => admin.disconnect());
    return async (topic) => (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
  };

  /**
   * Reads `topic` from the beginning with a raw kafkajs consumer of a fresh group: the records
   * (with their batch's first offset and producer id) and the size in bytes of every Fetch
   * response, as received on the wire.
   */
  const rawRead = async (topic: string): Promise<{ records: ReadRecord[]; fetchSizes: number[] }> => {
    const records: ReadRecord[] = [];
    const fetchSizes: number[] = [];
    const c = kafka.raw.kafka.consumer({ groupId: uniqueName('raw'), sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10_000, maxWaitTimeInMs: 200 });
    closers.push(() => c.disconnect());
    c.on(c.events.REQUEST, (e) => {
      if (e.payload.apiName === 'Fetch') fetchSizes.push(e.payload.size);
    });
    let joined = false;
    c.on(c.events.GROUP_JOIN, () => (joined = true));
    await c.connect();
    await c.subscribe({ topic, fromBeginning: true });
    await c.run({
      eachMessage: async ({ message }) => {
        const batch = (message as WithBatchContext).batchContext;
        records.push({ value: message.value?.toString() ?? '', batchOffset: batch?.firstOffset ?? '?', producerId: batch?.producerId ?? '?' });
      },
    });
    await waitFor(() => joined, { timeoutMs: 20_000, message: `raw consumer of ${topic} joined` });
    return { records, fetchSizes };
  };
  const payloadOf = (r: ReadRecord) => (JSON.parse(JSON.parse(r.value)['oslo.message']) as { payload: { id: number } }).payload;

  it('sendNotification resolves only once the broker stored the record: each awaited send is already counted in the high watermark', async () => {
    const topic = uniqueName('t');
    await kafka.broker.createTopic({ name: `${topic}.info`, partitions: 4 });
    const n = notifier(await transport(url()), topic);
    const highWatermark = await highWatermarks();
    expect(await highWatermark(`${topic}.info`)).toBe(0);
    for (let i = 1; i <= 10; i++) {
      await n.info({}, 'ev', { id: i });
      expect(await highWatermark(`${topic}.info`), `records stored when send ${i} resolved`).toBe(i);
    }
  });

  it('producer_batch_timeout (linger, seconds) holds a send for the linger, and sends made within it go in one request', async () => {
    const lingerMs = 300;
    const topic = uniqueName('t');
    // One partition: records of one produce request form one record batch there.
    await kafka.broker.createTopic({ name: `${topic}.info`, partitions: 1 });
    const n = notifier(await transport(url(`&producer_batch_timeout=${lingerMs / 1000}`)), topic);
    await n.info({}, 'ev', { id: 0 }); // connects the producer: not timed

    const single = performance.now();
    await n.info({}, 'ev', { id: 1 });
    // Timers may fire up to a millisecond early by performance.now().
    expect(performance.now() - single, 'one send waited out the linger').toBeGreaterThanOrEqual(lingerMs - 5);

    // Three sends 40 ms apart: the later ones join the first one's request (their timers are due before its linger timer).
    const start = performance.now();
    const resolvedAt: number[] = [];
    const sent = [2, 3, 4].map((id, i) => new Promise((r) => setTimeout(r, i * 40)).then(() => n.info({}, 'ev', { id })).then(() => resolvedAt.push(performance.now() - start)));
    await Promise.all(sent);
    expect(Math.min(...resolvedAt), 'no send resolved before the linger').toBeGreaterThanOrEqual(lingerMs - 5);

    const read = await rawRead(`${topic}.info`);
    await waitFor(() => read.records.length === 5, { timeoutMs: 20_000, message: `the five records read back (read: ${read.records.length})` });
    const batchOf = new Map(read.records.map((r) => [payloadOf(r).id, r.batchOffset]));
    expect(new Set([2, 3, 4].map((id) => batchOf.get(id))).size, 'the three sends share one record batch').toBe(1);
    expect(batchOf.get(1)).not.toBe(batchOf.get(2));
  });

  it('without producer_batch_timeout a send goes out in its own turn: sends 150 ms apart, which a linger of 300 ms would join, go in separate requests', async () => {
    const topic = uniqueName('t');
    await kafka.broker.createTopic({ name: `${topic}.info`, partitions: 1 });
    const n = notifier(await transport(url()), topic);
    await n.info({}, 'ev', { id: 0 }); // connects the producer
    await Promise.all([6, 7, 8].map((id, i) => new Promise((r) => setTimeout(r, i * 150)).then(() => n.info({}, 'ev', { id }))));
    const read = await rawRead(`${topic}.info`);
    await waitFor(() => read.records.length === 4, { timeoutMs: 20_000, message: `the four records read back (read: ${read.records.length})` });
    const batchOf = new Map(read.records.map((r) => [payloadOf(r).id, r.batchOffset]));
    expect(new Set([6, 7, 8].map((id) => batchOf.get(id))).size, 'each of the spaced sends has a record batch of its own').toBe(3);
  });

  it('compression_codec=gzip: records are stored and fetched gzip-compressed, and arrive intact to a raw consumer and to a listener', async () => {
    // A highly compressible payload of about 100 kB: uncompressed, any Fetch response carrying it is larger than that.
    const blob = 'tidings '.repeat(12_500);
    const sizes: Record<string, number> = {};
    // Both codecs at once: each waits for two group joins on the mock.
    await Promise.all(
      ['gzip', 'none'].map(async (codec) => {
        const topic = uniqueName('t');
        const t = await transport(url(`&compression_codec=${codec}`));
        const received: Array<{ id: number; blob: string }> = [];
        const listener = getNotificationListener(t, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: number; blob: string }) => void received.push(payload) }]);
        await listener.start();
        closers.push(async () => {
          await listener.stop();
          await listener.wait();
        });
        await notifier(t, topic).info({}, 'ev', { id: 1, blob });
        await notifier(t, topic).info({}, 'ev', { id: 2, blob: 'small' });

        const read = await rawRead(`${topic}.info`);
        await waitFor(() => read.records.length === 2, { timeoutMs: 20_000, message: `the raw consumer read both ${codec} records` });
        expect(read.records.map((r) => payloadOf(r)).sort((a, b) => a.id - b.id)).toEqual([
          { id: 1, blob },
          { id: 2, blob: 'small' },
        ]);
        await waitFor(() => received.length === 2, { timeoutMs: 30_000, message: `the listener got both ${codec} records` });
        expect(received.sort((a, b) => a.id - b.id)).toEqual([
          { id: 1, blob },
          { id: 2, blob: 'small' },
        ]);
        sizes[codec] = Math.max(...read.fetchSizes);
      }),
    );
    // The mock stores a produced record batch as it arrived and serves it as stored.
    expect(sizes.none, `largest Fetch response without compression (${JSON.stringify(sizes)})`).toBeGreaterThan(blob.length);
    expect(sizes.gzip, `largest Fetch response with gzip (${JSON.stringify(sizes)})`).toBeLessThan(blob.length / 10);
  });

  it('idempotent producer by default (acks all): its batches carry a producer id; idempotent=false and acks=leader write without one', async () => {
    const ids: Record<string, string[]> = {};
    const cases = { default: '', 'idempotent=false': '&idempotent=false', 'acks=leader': '&acks=leader' };
    await Promise.all(
      Object.entries(cases).map(async ([name, query]) => {
        const topic = uniqueName('t');
        const n = notifier(await transport(url(query)), topic);
        await n.info({}, 'ev', { id: 1 });
        await n.info({}, 'ev', { id: 2 });
        const read = await rawRead(`${topic}.info`);
        await waitFor(() => read.records.length === 2, { timeoutMs: 20_000, message: `both records read back (${name})` });
        ids[name] = read.records.map((r) => r.producerId);
      }),
    );
    expect(ids.default.every((id) => BigInt(id) >= 0n), `producer ids ${JSON.stringify(ids)}`).toBe(true);
    expect(ids['idempotent=false']).toEqual(['-1', '-1']);
    expect(ids['acks=leader']).toEqual(['-1', '-1']);
  });

  it('acks=none resolves a send without waiting for the broker; acks=all waits for its answer (the broker process frozen)', async () => {
    // A broker of its own, frozen with SIGSTOP: connections stay open and take bytes, nothing is answered.
    const second = await startKafkaMock({ brokers: 1, alwaysMock: true });
    closers.push(() => second.stop());
    const { brokers } = second;
    const base = `kafka://${brokers.join(',')}/?${SHORT_GROUP_QUERY}`;
    const topic = uniqueName('t');
    const highWatermark = await highWatermarks(brokers);
    const none = notifier(await transport(`${base}&acks=none`), topic);
    const all = notifier(await transport(`${base}&acks=all`), topic);
    // Connected, with the topic's metadata known, before the broker freezes.
    await none.info({}, 'ev', { id: 1 });
    await all.info({}, 'ev', { id: 2 });
    await waitFor(async () => (await highWatermark(`${topic}.info`)) === 2, { timeoutMs: 10_000, message: 'the two first records stored' });

    await second.freeze();
    let settledAll = false;
    const sendAll = all.info({}, 'ev', { id: 4 }).finally(() => (settledAll = true));
    try {
      const sendNone = none.info({}, 'ev', { id: 3 });
      let timer: NodeJS.Timeout | undefined;
      const noneResolved = await Promise.race([sendNone.then(() => true), new Promise<false>((r) => (timer = setTimeout(() => r(false), 10_000)))]);
      clearTimeout(timer);
      expect(noneResolved, 'the acks=none send resolved while the broker was frozen').toBe(true);
      // Bounded the other way round: whatever the load, a frozen broker cannot answer.
      await new Promise((r) => setTimeout(r, 1000));
      expect(settledAll, 'the acks=all send waits for the frozen broker').toBe(false);
    } finally {
      await second.thaw();
    }
    await sendAll;
    await waitFor(async () => (await highWatermark(`${topic}.info`)) === 4, { timeoutMs: 10_000, message: 'all four records stored once the broker runs again' });
  });

  it('an invalid acks in the URL is refused when the transport is made, with InvalidArgument naming acks: nothing can be sent', async () => {
    const made = getNotificationTransport(`${url()}&acks=two`);
    await expect(made).rejects.toBeInstanceOf(InvalidArgument);
    await expect(made).rejects.toMatchObject({ field: 'acks' });
    await expect(made).rejects.toThrow(/acks.*"all", "leader" or "none".*two/);
  });
});
