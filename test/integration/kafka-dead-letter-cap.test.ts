// `dead_letter_max_len` on Kafka (librdkafka mock cluster): past the cap, the oldest dead letters
// of an address are removed with a marker and logged, so `tidings dead-letters list` shows the
// newest only. The records themselves stay in `<address>.dlq` until the broker's retention drops
// them (Kafka cannot delete one record; the mock has no retention at all).
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run-cli.js';
import { createConsoleLogger } from '../../src/core/logger.js';
import { getNotificationListener, getNotificationTransport, Notifier, Target, type Context } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { SHORT_GROUP_QUERY, useKafkaMock } from '../support/kafka-raw.js';
import { captureIO } from '../support/cli-io.js';

describe('Kafka dead letters bounded by dead_letter_max_len', () => {
  const kafka = useKafkaMock();
  const closers = kafka.closers;

  it('keeps the newest dead letters, drops the oldest with a log line', { timeout: 180_000 }, async () => {
    const url = `${kafka.broker.url}/?${SHORT_GROUP_QUERY}&max_deliveries=1&dead_letter_max_len=2`;
    const topic = uniqueName('t');
    const address = `${topic}.info`;
    const lines: string[] = [];
    const t = await getNotificationTransport(url, { logger: createConsoleLogger({ level: 'warn', sink: (l) => void lines.push(l) }) });
    closers.push(() => t.cleanup());
    const l = getNotificationListener(t, [new Target({ topic })], [{ info: () => { throw new Error('always fails'); } }], { allowRequeue: true, pool: 'p' });
    await l.start();
    closers.push(async () => {
      await l.stop();
      await l.wait();
    });
    const dlq = await kafka.raw.collect(`${address}.dlq`, uniqueName('raw'));
    const notifier = new Notifier(t, { publisherId: 'cap.test', driver: 'messagingv2', topics: [topic] });
    for (let id = 1; id <= 4; id++) {
      await notifier.info({} as Context, 'ev', { id });
      await waitFor(() => dlq.filter((r) => r.headers['x-tidings-removes'] === undefined).length === id, { timeoutMs: 30_000, message: `notification ${id} dead-lettered` });
    }
    const list = async () => {
      const io = captureIO();
      const code = await runCli(['dead-letters', 'list', '--address', address, '--url', url], io);
      expect(code).toBe(0);
      return io.lines.map((line) => (JSON.parse(JSON.parse(JSON.parse(line).body)['oslo.message']) as { payload: { id: number } }).payload.id);
    };
    await waitFor(async () => (await list()).length === 2, { timeoutMs: 60_000, intervalMs: 500, message: 'the dead letters trimmed to 2' });
    expect((await list()).sort()).toEqual([3, 4]);
    expect(lines.some((line) => line.includes('Dropped the oldest dead letters') && line.includes(`${address}.dlq`))).toBe(true);
    // Markers, not deletion: the records are still in the topic.
    expect(dlq.filter((r) => r.headers['x-tidings-removes'] === undefined).length).toBe(4);
  });
});
