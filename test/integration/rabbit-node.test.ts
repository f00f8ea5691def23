// test/support/rabbit-node.ts against the real rabbitmq-server package: a node that cannot boot
// fails with its log; a 3-node cluster forms, serves a tidings call across nodes, and follows a
// node's SIGKILL and restart. Slow by nature (each boot takes seconds): one cluster for the file.
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRpcClient, getRpcServer, getRpcTransport, Target, type Transport } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { startRabbitCluster, startRabbitNode, type RabbitCluster } from '../support/rabbit-node.js';

describe('private RabbitMQ nodes (test/support/rabbit-node.ts)', () => {
  it('a node that cannot boot fails with its log tail, and leaves no process or dir behind', async () => {
    const err = await startRabbitNode({ config: ['no_such_setting_at_all = 1'] }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err, 'the start failed').toBeInstanceOf(Error);
    expect(err!.message).toMatch(/Test RabbitMQ node tidings-[0-9a-f]+-1@localhost did not start: the VM exited/);
    expect(err!.message, 'the log tail names the bad setting').toContain('no_such_setting_at_all');
    const dir = /log \(([^)]+)\)/.exec(err!.message)?.[1];
    expect(dir && existsSync(dir)).toBe(false);
  }, 120_000);

  describe('a 3-node cluster', () => {
    let cluster: RabbitCluster;
    const transports: Transport[] = [];

    beforeAll(async () => {
      cluster = await startRabbitCluster(3);
    }, 240_000);

    afterAll(async () => {
      await Promise.all(transports.map((t) => t.cleanup().catch(() => undefined)));
      await cluster?.stop();
    }, 60_000);

    it('forms: every node lists the three as running, and a call through one node reaches a server on another', async () => {
      const names = cluster.nodes.map((n) => n.nodeName).sort();
      for (const node of cluster.nodes) expect((await cluster.runningNodes(node)).sort()).toEqual(names);
      const [clientT, serverT] = await Promise.all([getRpcTransport(cluster.urls[0]), getRpcTransport(cluster.urls[2])]);
      transports.push(clientT, serverT);
      const topic = uniqueName('t-rabbit-node');
      const server = getRpcServer(serverT, new Target({ topic, server: 's1' }), [{ echo: (_ctx: unknown, args: { n: number }) => args.n }]);
      await server.start();
      try {
        expect(await getRpcClient(clientT, { topic }, { timeout: 20_000 }).call({}, 'echo', { n: 7 })).toBe(7);
      } finally {
        await server.stop();
        await server.wait();
      }
      await Promise.all(transports.splice(0).map((t) => t.cleanup()));
    }, 120_000);

    it('kill() takes a node out of the cluster at once and restart() brings it back into the cluster', async () => {
      const [first, , third] = cluster.nodes;
      await third.kill();
      expect(third.running).toBe(false);
      await waitFor(async () => !(await cluster.runningNodes(first)).includes(third.nodeName), { timeoutMs: 60_000, intervalMs: 500, message: `${third.nodeName} gone from cluster_status` });
      await third.restart();
      expect(third.running).toBe(true);
      await waitFor(async () => (await cluster.runningNodes(first)).includes(third.nodeName), { timeoutMs: 60_000, intervalMs: 500, message: `${third.nodeName} back in cluster_status` });
    }, 240_000);
  });
});
