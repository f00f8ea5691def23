// The kafkajs 2.2 consumer-stop fix: a stopped runner of a group tidings consumes with ends its
// fetch loop (its fetch rejects); the runner of any other group, an application's own kafkajs
// consumer, fetches exactly as kafkajs ships it.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { ConsumerStoppedSignal, coverConsumerStop } from '../../../src/drivers/kafka/client/kafkajs-stop-fix.js';

interface FakeRunner {
  running: boolean;
  consumerGroup: { groupId: string; memberId: string; fetch: (nodeId: number) => Promise<unknown[]> };
  logger: { debug: () => void };
  instrumentationEmitter: { emit: () => void };
}

const Runner = createRequire(import.meta.url)('kafkajs/src/consumer/runner.js') as { prototype: { fetch(this: FakeRunner, nodeId: number): Promise<unknown[]> } };

const runner = (groupId: string, running: boolean): FakeRunner => ({
  running,
  consumerGroup: { groupId, memberId: 'm', fetch: async () => ['batch'] },
  logger: { debug: () => {} },
  instrumentationEmitter: { emit: () => {} },
});

describe('kafkajs consumer-stop fix', () => {
  coverConsumerStop('tidings-group', createMemoryLogger());

  it("a stopped runner of tidings' group rejects its fetch, so the fetcher ends instead of spinning", async () => {
    await expect(Runner.prototype.fetch.call(runner('tidings-group', false), 1)).rejects.toBeInstanceOf(ConsumerStoppedSignal);
  });

  it("an application's own consumer (another group) keeps kafkajs's behaviour, stopped or running", async () => {
    // kafkajs itself: a stopped runner's fetch resolves [] at once.
    await expect(Runner.prototype.fetch.call(runner('app-group', false), 1)).resolves.toEqual([]);
    // A running runner of either group fetches through its consumer group.
    const fetched = await Runner.prototype.fetch.call(runner('app-group', true), 1).catch((e: unknown) => e);
    const ours = await Runner.prototype.fetch.call(runner('tidings-group', true), 1).catch((e: unknown) => e);
    expect(fetched).not.toBeInstanceOf(ConsumerStoppedSignal);
    expect(ours).not.toBeInstanceOf(ConsumerStoppedSignal);
  });
});
