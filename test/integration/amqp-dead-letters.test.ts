// Delivery limits and dead letters on a real RabbitMQ, classic and quorum queues alike: a
// notification whose handler always throws, in a pool of two members with allowRequeue, stops
// after max_deliveries (counted across both members) and lands in `<address>.dlq` with the last
// error, the consumer and the time; `tidings dead-letters` lists, replays (to that pool only,
// once) and purges it; forged x-tidings-* headers are dead-lettered, never obeyed.
import { connect } from 'amqplib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run-cli.js';
import type { DeadLetter } from '../../src/contract/dead-letters.js';
import { getNotificationListener, getNotificationTransport, Notifier, Target, type Context, type Transport } from '../../src/index.js';
import type { NotificationMetadata } from '../../src/notify/dispatcher.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { captureIO } from '../support/cli-io.js';
import { deleteRabbitObjectsWithPrefix, publishRawToRabbit } from '../support/rabbit-admin.js';
import { sampleNotification } from '../support/amqp-driver.js';

const PREFIX = uniqueName('t-amqpdlq');
const closers: Array<() => Promise<void>> = [];

beforeAll(requireRabbitMQ);
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});
afterAll(async () => {
  await deleteRabbitObjectsWithPrefix(PREFIX);
});

const withQuery = (query: string) => `${RABBIT_URL}${RABBIT_URL.includes('?') ? '&' : '?'}${query}`;

async function open(url: string, controlExchange: string): Promise<Transport> {
  const t = await getNotificationTransport(url, { controlExchange });
  closers.push(() => t.cleanup());
  return t;
}

/** Dead letters as a listener leaves them in `dlq`; `address`, when given, is declared too (the queue a replay goes back to). */
async function seedDeadLetters(dlq: string, ids: string[], address?: string): Promise<void> {
  const conn = await connect('amqp://guest:guest@127.0.0.1:5672/');
  try {
    const ch = await conn.createConfirmChannel();
    await ch.assertQueue(dlq, { durable: true });
    if (address !== undefined) await ch.assertQueue(address, { durable: true });
    for (const id of ids) ch.sendToQueue(dlq, Buffer.from(JSON.stringify({ id })), { headers: { 'x-tidings-id': id, 'x-tidings-reason': 'poison' }, deliveryMode: 2 });
    await ch.waitForConfirms();
    await ch.close();
  } finally {
    await conn.close();
  }
}

async function cli(url: string, ...args: string[]): Promise<{ code: number; lines: string[]; errors: string[] }> {
  const io = captureIO();
  const code = await runCli(['dead-letters', ...args, '--url', url], io);
  return { code, lines: io.lines, errors: io.errors };
}

type Delivery = { member: number; id: number; deliveryCount: number };

describe('RabbitMQ delivery limits and dead letters', () => {
  it.each([
    ['classic', 'max_deliveries=4'],
    ['quorum', 'max_deliveries=4&rabbit_quorum_queue=true'],
  ])('%s queues: a poison notification stops after max_deliveries across a pool of two, is listed, replayed once to its pool, purged', { timeout: 90_000 }, async (kind, query) => {
    const url = withQuery(query);
    const exchange = `${PREFIX}-${kind}-x`;
    const topic = `${PREFIX}-${kind}`;
    const address = `${topic}.info`;
    const pool = `${PREFIX}-${kind}-billing`;
    const members = [await open(url, exchange), await open(url, exchange)];
    let failing = true;
    const deliveries: Delivery[] = [];
    const billed: number[] = [];
    const audited: number[] = [];
    for (const [member, t] of members.entries()) {
      const listener = getNotificationListener(
        t,
        [new Target({ topic })],
        [
          {
            info(_c: Context, _p: unknown, _e: string, payload: { id: number }, meta: NotificationMetadata) {
              deliveries.push({ member, id: payload.id, deliveryCount: meta.deliveryCount });
              if (failing && payload.id > 0) throw new Error(`tax service down (attempt ${deliveries.filter((d) => d.id === payload.id).length})`);
              billed.push(payload.id);
            },
          },
        ],
        { pool, allowRequeue: true },
      );
      await listener.start();
      closers.push(async () => {
        await listener.stop();
        await listener.wait();
      });
    }
    // Another pool that handles everything: its copy is never dead-lettered nor replayed to it.
    const audit = getNotificationListener(members[0], [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: { id: number }) => void audited.push(payload.id) }], { pool: `${PREFIX}-${kind}-audit` });
    await audit.start();
    closers.push(async () => {
      await audit.stop();
      await audit.wait();
    });
    const store = members[0].driver.deadLetters();
    const notifier = new Notifier(members[0], { publisherId: 'billing.test', driver: 'messagingv2', topics: [topic] });

    await notifier.info({}, 'invoice.created', { id: 1 });
    await waitFor(async () => (await store.list({ address })).length === 1, { timeoutMs: 30_000, message: `the poison notification in ${address}.dlq` }).catch((err: Error) => {
      throw new Error(`${err.message}; deliveries so far: ${deliveries.filter((d) => d.id === 1).length}`);
    });
    // The listeners keep serving: a good notification after it is handled, and the poison one came no more.
    await notifier.info({}, 'invoice.created', { id: 0 });
    await waitFor(() => billed.includes(0), { timeoutMs: 15_000, message: 'the pool handled a good notification after the poison one' });
    const poison = deliveries.filter((d) => d.id === 1);
    expect(poison.map((d) => d.deliveryCount).sort()).toEqual([1, 2, 3, 4]);

    const listed = await cli(url, 'list', '--address', address);
    expect(listed.errors).toEqual([]);
    expect(listed.code).toBe(0);
    expect(listed.lines).toHaveLength(1);
    const letter = JSON.parse(listed.lines[0]);
    expect(letter).toMatchObject({ address, pool, error: 'tax service down (attempt 4)', deliveries: 4 });
    expect(letter.id).toMatch(/^[0-9a-f]{32}$/);
    expect(new Date(letter.deadAt).toISOString()).toBe(letter.deadAt);
    expect(Date.now() - Date.parse(letter.deadAt)).toBeLessThan(60_000);
    expect(letter.consumer).toMatch(new RegExp(`/${process.pid}/amq\\.ctag-`));
    expect(JSON.parse(JSON.parse(letter.body)['oslo.message'])).toMatchObject({ event_type: 'invoice.created', payload: { id: 1 } });
    // Listing took nothing away.
    expect((await cli(url, 'list', '--address', address)).lines).toEqual(listed.lines);

    failing = false;
    expect((await cli(url, 'replay', '--address', address)).lines).toEqual(['{"replayed":1}']);
    await waitFor(() => billed.includes(1), { timeoutMs: 15_000, message: 'the billing pool got the replayed notification' });
    expect((await cli(url, 'list', '--address', address)).lines).toEqual([]);

    failing = true;
    await notifier.info({}, 'invoice.created', { id: 2 });
    await waitFor(async () => (await store.list({ address })).length === 1, { timeoutMs: 30_000, message: 'the second poison notification dead-lettered' });
    expect((await cli(url, 'purge', '--address', address, '--all')).lines).toEqual(['{"purged":1}']);
    expect(await store.list({ address })).toEqual([]);
    // Replayed once, to billing only; audit handled each notification once.
    await waitFor(() => audited.length === 3, { timeoutMs: 15_000, message: 'the audit pool got all three' });
    expect(audited.sort()).toEqual([0, 1, 2]);
    expect(billed.sort()).toEqual([0, 1]);
  });

  it('a replay while the same letters are being listed still finds them: in this process (a console polling) and from another connection (the CLI, another console)', { timeout: 60_000 }, async () => {
    const address = `${PREFIX}-busy.info`;
    const dlq = `${address}.dlq`;
    const t = await open(RABBIT_URL, `${PREFIX}-busy-x`);
    const store = t.driver.deadLetters();
    // Dead letters as a listener leaves them, and the address's queue a replay goes back to.
    const seed = (ids: string[]) => seedDeadLetters(dlq, ids, address);
    // In one process: lists started before and after each replay; every replay finds its letter
    // and every list sees the letters not yet replayed, all of them.
    const ids = Array.from({ length: 8 }, (_, i) => `busy-${i}`);
    await seed(ids);
    const runs: Array<Promise<unknown>> = [];
    const lists: Array<Promise<string[]>> = [];
    const list = () => lists.push(store.list({ address }).then((ls) => ls.map((l) => l.id)));
    for (const id of ids) {
      list();
      runs.push(store.replay({ address, ids: [id] }));
      list();
    }
    expect(await Promise.all(runs)).toEqual(ids.map(() => 1));
    for (const seen of await Promise.all(lists)) expect(ids.slice(ids.length - seen.length)).toEqual(seen);
    expect(await store.list({ address })).toEqual([]);

    // From another connection: a replay by id waits out another client's list holding the letters
    // (taken unacknowledged, given back 200 ms later by closing its channel, as a list does).
    const held = ['busy-cli-1', 'busy-cli-2'];
    await seed(held);
    const conn = await connect('amqp://guest:guest@127.0.0.1:5672/');
    closers.push(() => conn.close());
    for (const id of held) {
      const ch = await conn.createChannel();
      let taken = 0;
      while ((await ch.get(dlq, { noAck: false })) !== false) taken++;
      expect(taken, 'the other client holds every letter').toBe(held.length - held.indexOf(id));
      const replaying = store.replay({ address, ids: [id] });
      await new Promise((resolve) => setTimeout(resolve, 200));
      await ch.close();
      expect(await replaying).toBe(1);
    }
    expect(await store.list({ address })).toEqual([]);
  });

  it('every store the driver hands out takes turns: lists made through deadLetters() at once each see every letter (a console makes one call per request)', { timeout: 60_000 }, async () => {
    const address = `${PREFIX}-turns.info`;
    const dlq = `${address}.dlq`;
    const t = await open(RABBIT_URL, `${PREFIX}-turns-x`);
    const ids = Array.from({ length: 8 }, (_, i) => `turns-${i}`);
    await seedDeadLetters(dlq, ids);
    expect(t.driver.deadLetters()).toBe(t.driver.deadLetters());
    // A console's poll and the body request beside it: each a deadLetters() call of its own.
    const seen = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 3 === 2 ? t.driver.deadLetters().list({ address, ids: [ids[i % ids.length]] }) : t.driver.deadLetters().list({ address }))));
    for (const [i, letters] of seen.entries()) expect(letters.map((l) => l.id), `list ${i}`).toEqual(i % 3 === 2 ? [ids[i % ids.length]] : ids);
    expect(await t.driver.deadLetters().purge({ address })).toBe(ids.length);
  });

  it('forged x-tidings-* headers are dead-lettered with the reason, never obeyed; a valid count is', { timeout: 60_000 }, async () => {
    const url = withQuery('max_deliveries=3');
    const exchange = `${PREFIX}-forged-x`;
    const topic = `${PREFIX}-forged`;
    const address = `${topic}.info`;
    const t = await open(url, exchange);
    const seen: Array<{ i: number; deliveryCount: number }> = [];
    const listener = getNotificationListener(
      t,
      [new Target({ topic })],
      [{ info: (_c: Context, _p: unknown, _e: string, payload: { i: number }, meta: NotificationMetadata) => void seen.push({ i: payload.i, deliveryCount: meta.deliveryCount }) }],
      { pool: `${PREFIX}-forged-pool`, allowRequeue: true },
    );
    await listener.start();
    closers.push(async () => {
      await listener.stop();
      await listener.wait();
    });
    const body = (i: number) => JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ ...sampleNotification(i), _unique_id: `${i}`.padStart(32, 'a') }) });
    const forged: Array<Record<string, unknown>> = [
      { 'x-tidings-deliveries': -1 },
      { 'x-tidings-deliveries': 'abc' },
      { 'x-tidings-deliveries': 1e12 },
      { 'x-tidings-deliveries': 1.5 },
      { 'x-tidings-address': 'another-service.info' },
    ];
    for (const [i, headers] of forged.entries()) await publishRawToRabbit(exchange, address, body(i + 1), undefined, headers);
    await publishRawToRabbit(exchange, address, body(100), undefined, { 'x-tidings-deliveries': 2 });
    await publishRawToRabbit(exchange, address, body(101));
    await waitFor(() => seen.some((s) => s.i === 101), { timeoutMs: 15_000, message: 'the valid notifications handled' });
    expect(seen).toEqual([
      { i: 100, deliveryCount: 3 },
      { i: 101, deliveryCount: 1 },
    ]);
    // The forged ones are dead-lettered (a confirmed publish, then an ack) while 100 and 101 run: wait for all five.
    let dead: DeadLetter[] = [];
    await waitFor(async () => (dead = await t.driver.deadLetters().list({ address })).length >= forged.length, { timeoutMs: 15_000, message: 'the forged notifications dead-lettered' });
    expect(dead.map((d) => JSON.parse(JSON.parse(d.body)['oslo.message']).payload.i)).toEqual([1, 2, 3, 4, 5]);
    for (const d of dead) expect(d.error).toMatch(/^malformed headers: header x-tidings-(deliveries is not a delivery count|address names "another-service.info")/);
  });
});
