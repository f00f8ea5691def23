// Replies that cannot be delivered on the Redis at 127.0.0.1:6379: 200 calls whose reply lists
// (`reply_<hex>`, valid-looking) are keys of the wrong type. A Redis reply is one RPUSH on the
// command connection, never retried: it fails at once (WRONGTYPE, logged) and frees the executor
// slot, so a normal call behind them is answered at once. Nothing to move off the executor.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createMemoryLogger } from '../../src/core/logger.js';
import { Target } from '../../src/core/target.js';
import { replyKey, TopicKeys } from '../../src/drivers/redis/topology.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcServer } from '../../src/rpc/server.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { getRpcTransport } from '../../src/transport.js';
import { useRedisTestKeys } from '../support/redis-keys.js';

const PREFIX = `t-redisreply-${randomUUID().slice(0, 8)}`;
const URL = `redis://127.0.0.1:6379/?key_prefix=${PREFIX}`;
const { redis, transports } = useRedisTestKeys(PREFIX);
const hex = () => randomUUID().replaceAll('-', '');

/** A call in oslo's 2.0 envelope, as Python oslo.messaging writes it. */
const osloCall = (args: object, replyQueue: string) =>
  JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ method: 'echo', args, namespace: null, version: '1.0', _unique_id: hex(), _msg_id: hex(), _reply_q: replyQueue, _timeout: null }) });

describe('undeliverable replies (Redis)', () => {
  it('200 calls whose reply keys have the wrong type on 4 slots: every handler runs and a normal call is answered at once', async () => {
    const logger = createMemoryLogger();
    const serverT = await getRpcTransport(URL, { logger });
    const clientT = await getRpcTransport(URL);
    transports.push(serverT, clientT);
    const topic = uniqueName('rs');
    let handled = 0;
    const server = getRpcServer(serverT, new Target({ topic, server: 's1' }), [{ echo: (_ctx: unknown, args: unknown) => (handled++, args) }], { executorSize: 4 });
    await server.start();
    const stream = new TopicKeys(PREFIX, 'openstack', topic).topicStream;
    const pipeline = redis.pipeline();
    for (let i = 0; i < 200; i++) {
      const replyQueue = `reply_${hex()}`;
      pipeline.set(replyKey(PREFIX, replyQueue), 'not a list');
      pipeline.xadd(stream, '*', 'b', osloCall({ i }, replyQueue));
    }
    await pipeline.exec();
    await waitFor(() => handled === 200, { timeoutMs: 10_000, message: `all 200 handlers ran (${handled})` });
    await waitFor(() => logger.records.filter((r) => r.msg === 'Could not send a reply').length > 0, { timeoutMs: 5000, message: 'the failed replies logged' });
    const client = getRpcClient(clientT, { topic }, { timeout: 5000 });
    const began = Date.now();
    await expect(client.call({}, 'echo', { n: 1 })).resolves.toEqual({ n: 1 });
    expect(Date.now() - began).toBeLessThan(2000);
    await server.close();
  });
});
