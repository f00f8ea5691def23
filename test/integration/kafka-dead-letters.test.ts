// `tidings dead-letters` on the Kafka driver (librdkafka mock cluster, 3 brokers): a handler that
// always throws dead-letters its notification with the handler's last error; the CLI lists it,
// replays it to the pool that gave up on it, and purges.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run-cli.js';
import { getNotificationListener, getNotificationTransport, Notifier, Target, type Context, type Transport } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { SHORT_GROUP_QUERY, useKafkaMock } from '../support/kafka-raw.js';
import { captureIO } from '../support/cli-io.js';


describe('Kafka dead letters through `tidings dead-letters`', () => {
  const kafka = useKafkaMock();
  const closers = kafka.closers;

  const cli = async (url: string, ...args: string[]): Promise<{ code: number; lines: string[]; errors: string[] }> => {
    const io = captureIO();
    const code = await runCli(['dead-letters', ...args, '--url', url], io);
    return { code, lines: io.lines, errors: io.errors };
  };

  it('a handler that always throws: listed with its last error, replayed to its pool only, purged', { timeout: 180_000 }, async () => {
    const url = `${kafka.broker.url}/?${SHORT_GROUP_QUERY}&max_deliveries=2`;
    const topic = uniqueName('t');
    const address = `${topic}.info`;
    const t: Transport = await getNotificationTransport(url);
    closers.push(() => t.cleanup());
    let failing = true;
    let attempts = 0;
    const billed: number[] = [];
    const audited: number[] = [];
    const billing = getNotificationListener(
      t,
      [new Target({ topic })],
      [
        {
          info(_c: Context, _p: unknown, _e: string, payload: { id: number }) {
            if (failing) throw new Error(`tax service down (attempt ${++attempts})`);
            billed.push(payload.id);
          },
        },
      ],
      { allowRequeue: true, pool: 'billing' },
    );
    // Another pool that handles everything: its copy is never dead-lettered nor replayed to it.
    const audit = getNotificationListener(t, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: number }) => void audited.push(payload.id) }], { pool: 'audit' });
    for (const l of [billing, audit]) {
      await l.start();
      closers.push(async () => {
        await l.stop();
        await l.wait();
      });
    }
    const notifier = new Notifier(t, { publisherId: 'billing.test', driver: 'messagingv2', topics: [topic] });
    const dlq = await kafka.raw.collect(`${address}.dlq`, uniqueName('raw'));
    const deadLetters = () => dlq.filter((r) => r.headers['x-tidings-removes'] === undefined);

    await notifier.info({}, 'invoice.created', { id: 1 });
    await waitFor(() => deadLetters().length === 1, { timeoutMs: 60_000, message: 'the notification was dead-lettered' });
    expect(attempts).toBe(2);
    expect(audited).toEqual([1]);

    const listed = await cli(url, 'list', '--address', address);
    expect(listed.errors).toEqual([]);
    expect(listed.code).toBe(0);
    expect(listed.lines).toHaveLength(1);
    const letter = JSON.parse(listed.lines[0]);
    expect(letter).toMatchObject({ id: `${dlq[0].partition}:${dlq[0].offset}`, address, pool: 'billing', error: 'tax service down (attempt 2)', deliveries: 2 });
    expect(new Date(letter.deadAt).toISOString()).toBe(letter.deadAt);
    expect(letter.consumer).toMatch(/^tidings-/);
    expect(JSON.parse(JSON.parse(letter.body)['oslo.message'])).toMatchObject({ event_type: 'invoice.created', payload: { id: 1 } });

    // A bad id is bad input: exit 2, nothing replayed.
    expect((await cli(url, 'replay', '--address', address, '--id', 'nope')).code).toBe(2);

    failing = false;
    const replayed = await cli(url, 'replay', '--address', address);
    expect(replayed.lines).toEqual(['{"replayed":1}']);
    await waitFor(() => billed.length === 1, { timeoutMs: 60_000, message: 'the billing pool got the replayed notification' });
    expect(billed).toEqual([1]);
    expect((await cli(url, 'list', '--address', address)).lines).toEqual([]);

    // A second poison message, then purge --all.
    failing = true;
    await notifier.info({}, 'invoice.created', { id: 2 });
    await waitFor(() => deadLetters().length === 2, { timeoutMs: 60_000, message: 'the second notification was dead-lettered' });
    const second = (await cli(url, 'list', '--address', address)).lines.map((l) => JSON.parse(l));
    expect(second.map((l) => JSON.parse(JSON.parse(l.body)['oslo.message']).payload.id)).toEqual([2]);
    expect(second[0].error).toMatch(/^tax service down \(attempt \d+\)$/);
    expect((await cli(url, 'purge', '--address', address, '--all')).lines).toEqual(['{"purged":1}']);
    expect((await cli(url, 'list', '--address', address)).lines).toEqual([]);
    // The audit pool handled each notification once: a replay goes to billing's retry topic only.
    await waitFor(() => audited.length === 2, { timeoutMs: 30_000, message: 'the audit pool got the second notification' });
    expect(audited).toEqual([1, 2]);
    expect(billed).toEqual([1]);
  });

  it('an address without dead letters lists none; replay and purge count zero', { timeout: 60_000 }, async () => {
    const url = `${kafka.broker.url}/?${SHORT_GROUP_QUERY}`;
    const address = `${uniqueName('t')}.error`;
    expect(await cli(url, 'list', '--address', address)).toEqual({ code: 0, lines: [], errors: [] });
    expect((await cli(url, 'replay', '--address', address)).lines).toEqual(['{"replayed":0}']);
    expect((await cli(url, 'purge', '--address', address, '--id', `0:${randomUUID().length}`)).lines).toEqual(['{"purged":0}']);
  });

  it('a record in the .dlq topic without tidings headers lists as Redis lists one without metadata', { timeout: 60_000 }, async () => {
    const url = `${kafka.broker.url}/?${SHORT_GROUP_QUERY}`;
    const address = `${uniqueName('t')}.warn`;
    await kafka.raw.publish(`${address}.dlq`, [{ value: '{"oslo.version":"2.0"}', partition: 0 }]);
    const listed = await cli(url, 'list', '--address', address);
    expect(listed.errors).toEqual([]);
    expect(listed.lines.map((l) => JSON.parse(l))).toEqual([{ id: '0:0', address, body: '{"oslo.version":"2.0"}', error: 'no error recorded', deadAt: new Date(0).toISOString(), deliveries: 0 }]);
  });
});

