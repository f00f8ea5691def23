// The Redis driver behind Sentinel (a master, a replica and three sentinels on loopback ports):
// 5,000 notifications sent with `wait_replicas=1` while the master is SIGKILLed midway. The driver
// follows the failover; every notification whose send resolved is delivered, none twice.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisDriver } from '../../src/drivers/redis/index.js';
import { MessagingError } from '../../src/core/errors.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcServer } from '../../src/rpc/server.js';
import { Target } from '../../src/core/target.js';
import { getNotificationTransport, getRpcTransport, type Transport } from '../../src/transport.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { countDeliveries } from '../support/redis-keys.js';
import { redisInfo, startRedisSentinel, type RedisSentinelGroup } from '../support/redis-servers.js';

const PREFIX = `t-rsent-${randomUUID().slice(0, 8)}`;
const TOTAL = 5000;
const IN_FLIGHT = 32;
const KILL_AT = TOTAL / 2;

const body = (id: number) => ({ message_id: `m${id}`, publisher_id: 'p', event_type: 'ev', priority: 'INFO', timestamp: 't', payload: { id } });

let group: RedisSentinelGroup;
const transports: Transport[] = [];

beforeAll(async () => {
  group = await startRedisSentinel({ replicas: 1, sentinels: 3, masterName: 'mymaster' });
}, 90_000);

afterAll(async () => {
  await Promise.all(transports.map((t) => t.cleanup()));
  await group?.stop();
});

describe('redis sentinel', () => {
  it('5,000 notifications with wait_replicas=1, master SIGKILLed midway: every resolved send is delivered once', async () => {
    // Short leases and retries so that the failover window costs seconds, not minutes; a dedup
    // window larger than the run so a redelivered entry is always recognised.
    const url = `${group.url}&key_prefix=${PREFIX}&wait_replicas=1&wait_timeout_ms=1000&lease_ms=2000&sweep_interval_ms=500&retry_interval_ms=50&retry_max_ms=500&dedup_window=${TOTAL * 2}`;
    const topic = uniqueName('failover');
    const target = new Target({ topic: `${topic}.info` });

    const listenerT = await getNotificationTransport(url);
    transports.push(listenerT);
    const { listener: listener, counts: handled } = await countDeliveries(listenerT.driver, topic);

    const notifierT = await getNotificationTransport(url);
    transports.push(notifierT);
    const notifier = notifierT.driver as RedisDriver;
    const resolved = new Set<number>();
    const failed = new Map<string, number>();
    let next = 0;
    let failover: Promise<{ killed: number; promoted: number }> | undefined;
    const oldMaster = await group.currentMasterPort();

    const startFailover = async () => {
      const killed = await group.killMaster();
      const promoted = await group.waitForFailover(30_000);
      // The old master comes back (empty: no persistence) and the sentinels make it the new
      // master's replica, so that WAIT 1 can be satisfied again.
      await group.master.restart();
      return { killed, promoted };
    };

    // A bounded loop: each send is tried (with the driver's own bounded retry) once per index.
    const worker = async () => {
      for (;;) {
        const i = next++;
        if (i >= TOTAL) return;
        try {
          await notifier.sendNotification(target, {}, body(i), { retry: 10 });
          resolved.add(i);
          if (resolved.size >= KILL_AT) failover ??= startFailover();
        } catch (err) {
          expect(err).toBeInstanceOf(MessagingError);
          const name = `${(err as Error).constructor.name}: ${(err as Error).message.replace(/[0-9a-f-]{8,}|\d+/g, 'N').slice(0, 90)}`;
          failed.set(name, (failed.get(name) ?? 0) + 1);
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    expect(failover).toBeDefined();
    const { killed, promoted } = await failover!;
    expect(killed).toBe(oldMaster);
    expect(promoted).not.toBe(oldMaster);
    // The sends after the failover went to the promoted master, through the sentinels.
    expect(Number((await redisInfo(promoted, 'replication')).master_repl_offset)).toBeGreaterThan(0);

    await waitFor(() => [...resolved].every((i) => handled.has(i)), { timeoutMs: 60_000, message: 'every notification whose send resolved delivered' });
    const twice = [...handled].filter(([, n]) => n > 1).map(([i]) => i);
    const failedTotal = [...failed.values()].reduce((a, b) => a + b, 0);
    console.info(`redis sentinel failover: ${resolved.size} sends resolved, ${failedTotal} failed (${JSON.stringify(Object.fromEntries(failed))}), ${handled.size} distinct delivered, ${twice.length} twice`);
    expect(twice).toEqual([]);
    expect(resolved.size + failedTotal).toBe(TOTAL);
    // Most sends resolve: only those in the failover window may fail.
    expect(resolved.size).toBeGreaterThan(KILL_AT);
    await listener.cleanup();
  }, 120_000);

  it('an RPC server and client follow a failover: calls succeed again through the sentinels', async () => {
    const url = `${group.url}&key_prefix=${PREFIX}-rpc&retry_interval_ms=50&retry_max_ms=500`;
    const topic = uniqueName('rpc');
    const serverT = await getRpcTransport(url);
    const clientT = await getRpcTransport(url);
    transports.push(serverT, clientT);
    const server = getRpcServer(serverT, new Target({ topic, server: 's1' }), [{ echo: (_c: unknown, a: unknown) => a }]);
    await server.start();
    const client = getRpcClient(clientT, { topic }, { timeout: 2000 });
    await expect(client.call({}, 'echo', { before: true })).resolves.toEqual({ before: true });

    const old = await group.killMaster();
    const promoted = await group.waitForFailover(30_000);
    expect(promoted).not.toBe(old);
    // A call in flight at the kill may be lost (RPC is at most once) and time out; a later one
    // reaches the server on the promoted master, and its reply comes back the same way.
    const result = await waitFor(() => client.call({}, 'echo', { after: true }).catch(() => undefined), { timeoutMs: 30_000, message: 'a call through the promoted master' });
    expect(result).toEqual({ after: true });
    expect((await redisInfo(promoted, 'replication')).role).toBe('master');
    await server.stop();
    await server.wait();
  }, 60_000);
});
