// Kafka reply topics (`reply_<hex>`, one per live transport) are reused, not left behind: the
// mock cannot delete topics, and deleting would not help (a server answering a late call would
// auto-create the topic again). 50 short-lived client transports in a row leave at most one.
import { describe, expect, it } from 'vitest';
import { getRpcClient, getRpcServer, getRpcTransport, Target, type Context } from '../../src/index.js';
import { uniqueName } from '../../src/testing/wait.js';
import { SHORT_GROUP_QUERY, useKafkaMock } from '../support/kafka-raw.js';

describe('Kafka reply topics', () => {
  const kafka = useKafkaMock();
  const closers = kafka.closers;

  const replyTopics = async (): Promise<string[]> => {
    const admin = kafka.raw.kafka.admin();
    await admin.connect();
    try {
      return (await admin.listTopics()).filter((t) => t.startsWith('reply_')).sort();
    } finally {
      await admin.disconnect();
    }
  };

  it('50 short-lived client transports, one call each, leave at most one new reply topic', { timeout: 180_000 }, async () => {
    const url = `${kafka.broker.url}/?${SHORT_GROUP_QUERY}&rpc_max_wait_ms=20`;
    const topic = uniqueName('t');
    const st = await getRpcTransport(url);
    closers.push(() => st.cleanup());
    const server = getRpcServer(st, new Target({ topic, server: 's1' }), [{ echo: (_c: Context, a: unknown) => a }]);
    await server.start();
    closers.push(async () => {
      await server.stop();
      await server.wait();
    });
    const before = await replyTopics();
    for (let i = 0; i < 50; i++) {
      const ct = await getRpcTransport(url);
      try {
        expect(await getRpcClient(ct, new Target({ topic }), { timeout: 20_000 }).call({}, 'echo', { i })).toEqual({ i });
      } finally {
        await ct.cleanup();
      }
    }
    const after = await replyTopics();
    const added = after.filter((t) => !before.includes(t));
    expect({ before: before.length, after: after.length, added: added.length }).toEqual({ before: before.length, after: before.length + added.length, added: 1 });
  });

  it('two live transports never share a reply topic; a cleaned-up one hands its topic on', async () => {
    const url = `${kafka.broker.url}/?${SHORT_GROUP_QUERY}&rpc_max_wait_ms=20`;
    const topic = uniqueName('t');
    const st = await getRpcTransport(url);
    closers.push(() => st.cleanup());
    const server = getRpcServer(st, new Target({ topic, server: 's1' }), [{ echo: (_c: Context, a: unknown) => a }]);
    await server.start();
    closers.push(async () => {
      await server.stop();
      await server.wait();
    });
    const [a, b] = await Promise.all([getRpcTransport(url), getRpcTransport(url)]);
    closers.push(() => a.cleanup(), () => b.cleanup());
    // Both answered, each on its own reply topic, at the same time.
    const calls = await Promise.all([a, b].map((t, i) => getRpcClient(t, new Target({ topic }), { timeout: 20_000 }).call({}, 'echo', { i })));
    expect(calls).toEqual([{ i: 0 }, { i: 1 }]);
    const before = await replyTopics();
    await a.cleanup();
    const c = await getRpcTransport(url);
    closers.push(() => c.cleanup());
    expect(await getRpcClient(c, new Target({ topic }), { timeout: 20_000 }).call({}, 'echo', { c: 1 })).toEqual({ c: 1 });
    expect(await getRpcClient(b, new Target({ topic }), { timeout: 20_000 }).call({}, 'echo', { b: 1 })).toEqual({ b: 1 });
    expect(await replyTopics()).toEqual(before);
  }, 120_000);
});
