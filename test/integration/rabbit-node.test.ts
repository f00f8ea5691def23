// test/support/rabbit-node.ts against the real rabbitmq-server package: a node that cannot boot
// fails with its log. The cluster side (forms, serves a call across nodes, follows a node's SIGKILL
// and restart) is shown by rabbit-cluster.test.ts, which boots the one cluster it needs.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startRabbitNode } from '../support/rabbit-node.js';

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
});
