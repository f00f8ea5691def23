// Replies that cannot be delivered on the Kafka test broker (librdkafka's mock cluster, its own
// process: the test marks topics broken, which a shared or real cluster cannot do). 200 calls whose
// reply topics (`reply_<hex>`, valid-looking) the broker answers with UNKNOWN_TOPIC_OR_PARTITION,
// as a broker without auto-creation answers for a topic it does not have: their replies are retried
// off the executor, so a server's slots stay free and a normal call behind them is answered.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryLogger } from '../../src/core/logger.js';
import { Target } from '../../src/core/target.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcServer } from '../../src/rpc/server.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { getRpcTransport, type Transport } from '../../src/transport.js';
import { MOCK_RPC_MAX_WAIT_MS, SHORT_GROUP_QUERY, startKafkaMock, type KafkaTestBroker } from '../support/kafka-broker.js';
import { RawKafka } from '../support/kafka-raw.js';

const hex = () => randomUUID().replaceAll('-', '');
/** Kafka's UNKNOWN_TOPIC_OR_PARTITION: retriable, so a client retries it (kafkajs for seconds, tidings on top). */
const UNKNOWN_TOPIC_OR_PARTITION = 3;

/** A call in oslo's 2.0 envelope, as Python oslo.messaging writes it. */
const osloCall = (args: object, replyQueue: string) =>
  JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ method: 'echo', args, namespace: null, version: '1.0', _unique_id: hex(), _msg_id: hex(), _reply_q: replyQueue, _timeout: null }) });

describe('undeliverable replies (Kafka)', () => {
  let broker: KafkaTestBroker;
  let raw: RawKafka;
  const transports: Transport[] = [];
  /** Topics broken by the running test, healed after it so the next one's clients can connect. */
  const broken: string[] = [];

  beforeAll(async () => {
    broker = await startKafkaMock({ brokers: 1, alwaysMock: true });
    raw = new RawKafka(broker.brokers);
  });
  afterEach(async () => {
    await Promise.all(transports.splice(0).map((t) => t.cleanup()));
    for (const t of broken.splice(0)) await broker.topicError(t, 0);
  });
  afterAll(async () => {
    await Promise.all(transports.splice(0).map((t) => t.cleanup()));
    await raw?.close();
    await broker?.stop();
  });

  /**
   * A server on 4 slots counting its handled calls, a client whose reply topic works, and 200
   * reply topics the broker refuses. Everything connects before the topics break: the mock lists
   * broken topics with their error in every all-topics Metadata answer (Kafka leaves out what a
   * client may not see), which would fail a client's first connection.
   */
  async function setup() {
    const logger = createMemoryLogger();
    const url = `${broker.url}/?${SHORT_GROUP_QUERY}&rpc_max_wait_ms=${MOCK_RPC_MAX_WAIT_MS}`;
    const serverT = await getRpcTransport(url, { logger });
    const clientT = await getRpcTransport(url);
    transports.push(serverT, clientT);
    const topic = uniqueName('t-kreply');
    const seen = { handled: 0 };
    const server = getRpcServer(serverT, new Target({ topic, server: 's1' }), [{ echo: (_ctx: unknown, args: unknown) => (seen.handled++, args) }], { executorSize: 4 });
    await server.start();
    const client = getRpcClient(clientT, { topic }, { timeout: 20_000 });
    await expect(client.call({}, 'echo', { n: 0 })).resolves.toEqual({ n: 0 });
    await raw.publish(`${topic}-warmup`, [{ value: 'warm-up' }]);
    seen.handled = 0;
    const replyTopics = Array.from({ length: 200 }, () => `reply_${hex()}`);
    for (const t of replyTopics) {
      broken.push(t);
      await broker.topicError(t, UNKNOWN_TOPIC_OR_PARTITION);
    }
    const rpc = (serverT.driver as unknown as { rpc: { lostReplies: number; repliesInFlight: number } }).rpc;
    /** Straight onto the server's request topic (one partition: read in the same fetches), as another oslo-speaking producer would. */
    const publish = () => raw.publish(topic, replyTopics.map((t, i) => ({ partition: 0, value: osloCall({ i }, t) })));
    /** Each lost reply is given up after its retries, counted and logged once, naming its topic and call, never its body. */
    const expectLost = async () => {
      await waitFor(() => rpc.lostReplies === 200 && rpc.repliesInFlight === 0, { timeoutMs: 150_000, message: 'the 200 replies given up' });
      const lost = logger.records.filter((r) => r.msg === 'Could not send a reply');
      expect(new Set(lost.map((r) => r.fields.replyTopic))).toEqual(new Set(replyTopics));
      expect(JSON.stringify(lost.map((r) => r.fields))).not.toMatch(/"i":|result/);
    };
    return { server, client, seen, publish, expectLost, serverT };
  }

  it('200 calls whose reply topics cannot be produced to, on 4 slots: every handler runs at once and a normal call is answered within its timeout', { timeout: 240_000 }, async () => {
    const { server, client, seen, publish, expectLost, serverT } = await setup();
    await publish();
    // Held slots would let 4 handlers run per reply given up (its first attempt and 3 retries, 1,
    // 3 and 5 s apart): minutes for 200; free ones run all 200 within seconds.
    await waitFor(() => seen.handled === 200, { timeoutMs: 20_000, message: 'all 200 handlers ran' });
    const began = Date.now();
    await expect(client.call({}, 'echo', { n: 1 })).resolves.toEqual({ n: 1 });
    expect(Date.now() - began).toBeLessThan(20_000);
    await expectLost();
    // Topics the broker refuses say nothing about the client: forged reply topics do not make the transport look broken.
    expect(serverT.health()).toEqual({ connected: true, blocked: false, reconnecting: false });
    await server.stop();
    await server.wait();
  });
});
