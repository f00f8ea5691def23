// Conformance: pool inspection (`inspection()`, `inspectPools`, `listRpcTopics`): a pool's backlog
// while nobody consumes it and its consumers once a listener does, addresses that do not exist
// left out and never created, served RPC topics listed where the broker can list them.
import { describe, expect, it } from 'vitest';
import { InvalidArgument, NotSupportedError, type Transport } from '../index.js';
import type { Inspection, PoolQuery, PoolView } from '../contract/inspection.js';
import { markStopped, type ConformanceEnv } from './harness.js';
import { notifier, recordingEndpoint, startListener, type Seen } from './notify.js';
import { startServer } from './rpc.js';
import { waitFor } from './wait.js';

/** Notifications sent while the pool has no listener. */
const WAITING = 3;

/** True when the driver says it can tell nothing: then inspectPools MUST reject with NotSupportedError. */
function tellsNothing(what: Inspection): boolean {
  return !what.listsTopics && !what.listsPools && !what.consumers && !what.backlog;
}

/** The driver's inspectPools, or undefined after checking that a driver that tells nothing refuses it. */
async function inspector(nt: Transport): Promise<((q: PoolQuery) => Promise<PoolView[]>) | undefined> {
  const driver = nt.driver;
  if (tellsNothing(driver.inspection())) {
    const err = await driver.inspectPools({ topic: 'any' }).then(() => undefined, (e: unknown) => e);
    // A driver that tells nothing may still report which pools exist.
    if (err instanceof NotSupportedError) return undefined;
    if (err !== undefined) throw err;
  }
  return (q) => driver.inspectPools(q);
}

export function inspectionTests(env: ConformanceEnv): void {
  describe('pool inspection', () => {
    it('inspectPools shows a pool backlog while nobody consumes it and its consumers once a listener does', async () => {
      const nt = await env.notificationTransport();
      const inspect = await inspector(nt);
      if (!inspect) return;
      const what = nt.driver.inspection();
      const topic = env.name('topic');
      const pool = env.caps.pools ? env.name('pool') : undefined;
      const address = `${topic}.info`;
      const query: PoolQuery = { topic, priorities: ['info'], pools: pool === undefined ? [] : [pool] };
      const mine = async () => (await inspect(query)).find((v) => v.address === address && (pool === undefined ? v.isDefault : v.pool === pool && !v.isDefault));
      const log: Seen[] = [];
      const options = pool === undefined ? undefined : { pool };
      const timing = { timeoutMs: env.ms(20_000), intervalMs: 100 };

      // A first listener makes the pool (and, on Kafka, commits a position in it).
      const first = await startListener(env, nt, [topic], [recordingEndpoint('first', log)], options);
      const n = notifier(nt, topic);
      await n.info({}, 'ev', { id: 0 });
      await waitFor(() => log.length >= 1, { ...timing, message: 'the first listener received notification 0' });
      if (what.consumers) await waitFor(async () => ((await mine())?.consumers ?? 0) >= 1, { ...timing, message: 'the pool shows the first listener as a consumer' });
      await first.stop();
      await first.wait();
      markStopped(first);

      for (let id = 1; id <= WAITING; id++) await n.info({}, 'ev', { id });
      let last: PoolView | undefined;
      const idle = await waitFor(
        async () => {
          const v = (last = await mine());
          return v !== undefined && (!what.backlog || v.backlog === WAITING) && (!what.consumers || v.consumers === 0) ? v : undefined;
        },
        { ...timing, message: `the pool of ${address} shows ${WAITING} waiting and no consumer` },
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}; last view: ${JSON.stringify(last)}`);
      });
      expect(idle.isDefault).toBe(pool === undefined);
      if (!what.backlog) expect(idle.backlog).toBeUndefined();
      if (!what.consumers) expect(idle.consumers).toBeUndefined();

      await startListener(env, nt, [topic], [recordingEndpoint('second', log)], options);
      await waitFor(() => log.length >= 1 + WAITING, { ...timing, message: 'the second listener received the waiting notifications' });
      if (what.consumers) await waitFor(async () => ((await mine())?.consumers ?? 0) >= 1, { ...timing, message: 'the pool shows the second listener as a consumer' });
      if (what.backlog) await waitFor(async () => (await mine())?.backlog === 0, { ...timing, message: 'the backlog drained' });
    });

    it('inspectPools leaves out addresses and pools that do not exist, and creates none of them', async () => {
      const nt = await env.notificationTransport();
      const inspect = await inspector(nt);
      if (!inspect) return;
      const topic = env.name('topic');
      const pool = env.name('pool');
      const query: PoolQuery = { topic, pools: [pool] };
      expect(await inspect(query)).toEqual([]);
      // Had the first look created anything (a queue, a stream, a group), the second would see it.
      expect(await inspect(query)).toEqual([]);
      // The transport still works after looking (a RabbitMQ passive declare of a missing queue closes its channel)...
      await notifier(nt, topic).info({}, 'ev', { id: 1 });
      // ...and only what the notifier made is there: the pool was never created.
      const views = await inspect(query);
      expect(views.filter((v) => v.pool === pool || !v.isDefault)).toEqual([]);
      expect(views.every((v) => v.address === `${topic}.info`)).toBe(true);
    });

    it('inspectPools refuses a bad query with InvalidArgument', async () => {
      const nt = await env.notificationTransport();
      const inspect = await inspector(nt);
      if (!inspect) return;
      await expect(inspect({ topic: '' })).rejects.toThrow(InvalidArgument);
      await expect(inspect({ topic: env.name('topic'), priorities: ['loud'] })).rejects.toThrow(/priorities/);
      await expect(inspect({ topic: env.name('topic'), pools: [''] })).rejects.toThrow(/pools/);
    });

    if (!env.caps.rpc) return;

    it('listRpcTopics lists a served topic where the broker can list topics, else resolves with undefined', async () => {
      const t = await env.rpcTransport();
      const topic = env.name('topic');
      const unserved = env.name('topic');
      await startServer(env, t, topic, 's1', [{}]);
      if (!t.driver.inspection().listsTopics) {
        expect(await t.driver.listRpcTopics()).toBeUndefined();
        return;
      }
      const listed = await waitFor(async () => {
        const topics = await t.driver.listRpcTopics();
        return topics?.includes(topic) ? topics : undefined;
      }, { timeoutMs: env.ms(20_000), intervalMs: 100, message: `listRpcTopics() includes ${topic}` });
      expect(listed).not.toContain(unserved);
      expect(listed).toEqual([...new Set(listed)].sort());
    });
  });
}
