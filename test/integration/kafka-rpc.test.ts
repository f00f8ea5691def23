// RPC over Kafka on the Kafka test broker (librdkafka's mock cluster, 3 brokers): what the
// conformance suite cannot see: calls join no consumer group, requests are committed on receipt,
// and fanout needs no group (a stopped server leaves none behind). The mock has no ListGroups:
// joins are counted on the transport's client adapter (tidings' seam, not kafkajs).
import { describe, expect, it } from 'vitest';
import { getRpcClient, getRpcServer, getRpcTransport, Target, type Context, type Transport } from '../../src/index.js';
import { deferred, uniqueName, waitFor } from '../../src/testing/wait.js';
import type { KafkaClientAdapter } from '../../src/drivers/kafka/client/index.js';
import { serverGroup } from '../../src/drivers/kafka/topology.js';
import { SHORT_GROUP_QUERY, useKafkaMock } from '../support/kafka-raw.js';

type Started = { stop(): Promise<void>; wait(): Promise<void> };

describe('Kafka RPC (librdkafka mock cluster)', () => {
  const kafka = useKafkaMock();
  const closers = kafka.closers;

  const url = () => `${kafka.broker.url}/?${SHORT_GROUP_QUERY}&rpc_max_wait_ms=20`;
  const transport = async (): Promise<Transport> => {
    const t = await getRpcTransport(url());
    closers.push(() => t.cleanup());
    return t;
  };
  const started = async <S extends Started & { start(): Promise<void> }>(s: S): Promise<S> => {
    await s.start();
    closers.push(async () => {
      await s.stop();
      await s.wait();
    });
    return s;
  };
  /** Counts, per transport, the group consumers and direct readers its client adapter starts (a spy on tidings' own seam). */
  const countStarts = async (t: Transport): Promise<{ groups: string[]; readers: string[][] }> => {
    const conn = (t.driver as unknown as { conn: { getClient(): Promise<KafkaClientAdapter> } }).conn;
    const client = await conn.getClient();
    const seen = { groups: [] as string[], readers: [] as string[][] };
    const consume = client.consume.bind(client);
    const read = client.read.bind(client);
    client.consume = (settings, handlers) => {
      seen.groups.push(settings.groupId);
      return consume(settings, handlers);
    };
    client.read = (settings, onRecords) => {
      seen.readers.push([...settings.topics]);
      return read(settings, onRecords);
    };
    return seen;
  };

  it('calls join no consumer group: the reply topic is read directly, once per transport', async () => {
    const st = await transport();
    const ct = await transport();
    const topic = uniqueName('t-rpc');
    const server = await countStarts(st);
    const caller = await countStarts(ct);
    await started(getRpcServer(st, new Target({ topic, server: 's1' }), [{ echo: (_c: Context, a: unknown) => a }]));
    // The probe sees joins: the server joined its two groups and reads its fanout topic directly.
    expect(server.groups.sort()).toEqual([serverGroup('openstack', topic), serverGroup('openstack', `${topic}.s1`)].sort());
    expect(server.readers).toEqual([[`${topic}_fanout`]]);
    const client = getRpcClient(ct, { topic }, { timeout: 30_000 });
    for (let n = 0; n < 5; n++) await expect(client.call({}, 'echo', { n })).resolves.toEqual({ n });
    expect(caller.groups).toEqual([]);
    expect(caller.readers).toHaveLength(1);
    expect(caller.readers[0][0]).toMatch(/^reply_[0-9a-f]+$/);
  });

  it('a request is committed on receipt, before its handler finished', async () => {
    const st = await transport();
    const topic = uniqueName('t-rpc');
    const release = deferred<void>();
    let running = false;
    const server = await started(
      getRpcServer(st, new Target({ topic, server: 's1' }), [
        {
          async slow() {
            running = true;
            await release.promise;
          },
        },
      ]),
    );
    await getRpcClient(await transport(), { topic }).cast({}, 'slow', {});
    await waitFor(() => running, { timeoutMs: 20_000, message: 'the handler started' });
    const admin = kafka.raw.kafka.admin();
    await admin.connect();
    try {
      const committed = async () => {
        const [offsets] = await admin.fetchOffsets({ groupId: serverGroup('openstack', topic), topics: [topic] });
        const ends = await admin.fetchTopicOffsets(topic);
        // Every partition's commit is at its end: the one request is committed past.
        return offsets.partitions.every((p) => p.offset === ends.find((e) => e.partition === p.partition)?.offset);
      };
      let done = false;
      await waitFor(async () => (done = await committed()), { timeoutMs: 20_000, message: 'the request committed while its handler runs' });
      expect(done).toBe(true);
      expect(running).toBe(true);
    } finally {
      await admin.disconnect();
      release.resolve();
      await server.stop();
    }
  });

  it('fanout needs no group: a stopped server leaves nothing behind and gets nothing more', async () => {
    const st = await transport();
    const topic = uniqueName('t-rpc');
    const got: Record<string, number[]> = { s1: [], s2: [] };
    const ep = (s: string) => ({ fan: (_c: Context, a: { n: number }) => void got[s].push(a.n) });
    const starts = await countStarts(st);
    const s1 = await started(getRpcServer(st, new Target({ topic, server: 's1' }), [ep('s1')]));
    await started(getRpcServer(st, new Target({ topic, server: 's2' }), [ep('s2')]));
    const fan = getRpcClient(await transport(), { topic, fanout: true });
    await fan.cast({}, 'fan', { n: 1 });
    await waitFor(() => got.s1.length === 1 && got.s2.length === 1, { timeoutMs: 20_000, message: 'fanout 1 reached both' });
    await s1.stop();
    await s1.wait();
    await fan.cast({}, 'fan', { n: 2 });
    await waitFor(() => got.s2.length === 2, { timeoutMs: 20_000, message: 'fanout 2 reached s2' });
    expect(got).toEqual({ s1: [1], s2: [1, 2] });
    // No group was ever made for fanout: nothing of s1's stays in the kafka.broker.
    expect(starts.groups.filter((g) => g.includes('_fanout'))).toEqual([]);
    expect(starts.readers).toEqual([[`${topic}_fanout`], [`${topic}_fanout`]]);
  });
});
