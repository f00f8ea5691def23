// How much of the tidings/raw gap on RabbitMQ is oslo's wire protocol rather than tidings' code:
// raw amqplib doing the bench's work, then adding oslo's protocol choices one at a time.
// `npx tsx bench/amqp-protocol-cost.ts [amqp://guest:guest@127.0.0.1:5672/]`; see bench/README.md.
// The bench's raw-oslo column (raw-amqp-oslo.ts) is the fifth step of the RPC ladder (the sixth
// replies on direct reply-to instead, a choice oslo's wire allows) and the last of the publish one.
import { randomUUID } from 'node:crypto';
import { connect, type ChannelModel, type ConsumeMessage, type Options } from 'amqplib';
import { osloNotification } from './oslo-envelope.js';
import { OSLO_PROPS } from './raw-amqp-oslo.js';
import { CONCURRENCY, PAYLOAD_TEXT, PUBLISH_WINDOW, keepInFlight } from './measure.js';

const url = process.argv[2] ?? 'amqp://guest:guest@127.0.0.1:5672/';
const ROUNDS = 5;
const CALLS = 2000;
const PUBLISHES = 20_000;

const small = (i: number) => Buffer.from(JSON.stringify({ i, text: PAYLOAD_TEXT }));
/** A notification as tidings puts it on the wire: the 2.0 envelope around the oslo dict. */
const enveloped = osloNotification;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const open = () => connect(url, { noDelay: true });

interface RpcVariant {
  confirmRequest: boolean;
  confirmReply: boolean;
  replyOwnConnection: boolean;
  topicAndOsloProps: boolean;
  /** Replies on RabbitMQ's direct reply-to (consumed with noAck on the requests' channel) instead of an acked reply queue. */
  directReplyTo?: boolean;
}

async function rpcCost(): Promise<void> {
  const [serverConn, serverPub, clientConn] = await Promise.all([open(), open(), open()]);
  const queue = `bench-cost-rpc-${randomUUID()}`;
  const exchange = `bench-cost-x-${randomUUID()}`;
  let v: RpcVariant = { confirmRequest: false, confirmReply: false, replyOwnConnection: false, topicAndOsloProps: false };
  try {
    const server = await serverConn.createChannel();
    await server.assertQueue(queue, { durable: false });
    await server.assertExchange(exchange, 'topic', { durable: false, autoDelete: true });
    await server.bindQueue(queue, exchange, queue);
    await server.prefetch(64);
    const replySame = await serverConn.createConfirmChannel();
    const replyOwn = await serverPub.createConfirmChannel();
    await server.consume(queue, (m) => {
      if (!m) return;
      server.ack(m);
      const body = Buffer.from(JSON.stringify({ result: JSON.parse(m.content.toString('utf8')) }));
      const props = { ...(v.topicAndOsloProps ? OSLO_PROPS : {}), correlationId: m.properties.correlationId as string };
      if (!v.confirmReply) server.sendToQueue(m.properties.replyTo as string, body, props);
      else (v.replyOwnConnection ? replyOwn : replySame).publish('', m.properties.replyTo as string, body, { ...props, mandatory: true }, () => undefined);
    });
    const plain = await clientConn.createChannel();
    const confirmed = await clientConn.createConfirmChannel();
    const { queue: replyTo } = await plain.assertQueue('', { exclusive: true });
    const pending = new Map<string, () => void>();
    const answered = (m: ConsumeMessage) => {
      JSON.parse(m.content.toString('utf8'));
      pending.get(m.properties.correlationId as string)?.();
    };
    await plain.consume(replyTo, (m) => {
      if (!m) return;
      plain.ack(m);
      answered(m);
    });
    // Direct reply-to: no reply queue, no ack; a Python oslo server answers it too (it replies to the
    // default exchange with `_reply_q` as routing key), but a reply sent while the caller reconnects is lost.
    await confirmed.consume('amq.rabbitmq.reply-to', (m) => m && answered(m), { noAck: true });
    const call = (i: number) =>
      new Promise<void>((resolve) => {
        const correlationId = randomUUID();
        pending.set(correlationId, resolve);
        const props = { ...(v.topicAndOsloProps ? OSLO_PROPS : {}), replyTo: v.directReplyTo ? 'amq.rabbitmq.reply-to' : replyTo, correlationId };
        const ex = v.topicAndOsloProps ? exchange : '';
        if (v.confirmRequest) confirmed.publish(ex, queue, small(i), props, () => undefined);
        else plain.publish(ex, queue, small(i), props);
      });
    const variants: Array<[string, RpcVariant]> = [
      ['raw request/reply (replies acked)', { confirmRequest: false, confirmReply: false, replyOwnConnection: false, topicAndOsloProps: false }],
      ['+ request on a confirm channel', { confirmRequest: true, confirmReply: false, replyOwnConnection: false, topicAndOsloProps: false }],
      ['+ reply confirmed and mandatory', { confirmRequest: true, confirmReply: true, replyOwnConnection: false, topicAndOsloProps: false }],
      ['+ reply on its own connection', { confirmRequest: true, confirmReply: true, replyOwnConnection: true, topicAndOsloProps: false }],
      ['+ topic exchange, oslo properties', { confirmRequest: true, confirmReply: true, replyOwnConnection: true, topicAndOsloProps: true }],
      ['oslo-shaped, direct reply-to', { confirmRequest: true, confirmReply: true, replyOwnConnection: true, topicAndOsloProps: true, directReplyTo: true }],
    ];
    const p50s = new Map<string, number[]>();
    const rates = new Map<string, number[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, variant] of variants) {
        v = variant;
        for (let i = 0; i < 200; i++) await call(i);
        const lat: number[] = [];
        for (let i = 0; i < CALLS; i++) {
          const t0 = performance.now();
          await call(i);
          lat.push(performance.now() - t0);
        }
        (p50s.get(name) ?? p50s.set(name, []).get(name)!).push(median(lat) * 1000);
        const t0 = performance.now();
        const done = await keepInFlight(4 * CALLS, CONCURRENCY, () => true, call);
        (rates.get(name) ?? rates.set(name, []).get(name)!).push((done * 1000) / (performance.now() - t0));
      }
    }
    console.log(`sequential call p50, µs (median of ${ROUNDS} rounds of ${CALLS})`);
    for (const [name, xs] of p50s) console.log(`  ${name.padEnd(36)} ${median(xs).toFixed(0).padStart(5)}   rounds ${xs.map((x) => x.toFixed(0)).join(' ')}`);
    console.log(`calls/s with ${CONCURRENCY} in flight (median of ${ROUNDS} rounds of ${4 * CALLS})`);
    for (const [name, xs] of rates) console.log(`  ${name.padEnd(36)} ${median(xs).toFixed(0).padStart(6)}   rounds ${xs.map((x) => x.toFixed(0)).join(' ')}`);
    await server.deleteQueue(queue);
  } finally {
    await Promise.all([serverConn, serverPub, clientConn].map((c: ChannelModel) => c.close().catch(() => undefined)));
  }
}

async function publishCost(): Promise<void> {
  const conn = await open();
  const queue = `bench-cost-pub-${randomUUID()}`;
  const exchange = `bench-cost-x-${randomUUID()}`;
  try {
    const ch = await conn.createConfirmChannel();
    await ch.assertQueue(queue, { durable: false });
    await ch.assertExchange(exchange, 'topic', { durable: false, autoDelete: true });
    await ch.bindQueue(queue, exchange, queue);
    const confirmed = (ex: string, content: Buffer, props: Options.Publish) =>
      new Promise<void>((resolve, reject) => ch.publish(ex, queue, content, props, (err) => (err ? reject(new Error(String(err))) : resolve())));
    const variants: Array<[string, (i: number) => Promise<void>]> = [
      ['raw: default exchange, {i, text} body', (i) => confirmed('', small(i), { persistent: true })],
      ['+ oslo properties (headers table)', (i) => confirmed('', small(i), OSLO_PROPS)],
      ['+ envelope body (~410 bytes)', (i) => confirmed('', enveloped(i), OSLO_PROPS)],
      ['+ topic exchange = oslo-shaped', (i) => confirmed(exchange, enveloped(i), OSLO_PROPS)],
    ];
    const rates = new Map<string, number[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, publish] of variants) {
        const t0 = performance.now();
        await keepInFlight(PUBLISHES, PUBLISH_WINDOW, () => true, publish);
        (rates.get(name) ?? rates.set(name, []).get(name)!).push((PUBLISHES * 1000) / (performance.now() - t0));
        await ch.purgeQueue(queue);
      }
    }
    console.log(`confirmed persistent publishes/s, ${PUBLISH_WINDOW} in flight (median of ${ROUNDS} rounds of ${PUBLISHES})`);
    for (const [name, xs] of rates) console.log(`  ${name.padEnd(36)} ${median(xs).toFixed(0).padStart(6)}   rounds ${xs.map((x) => x.toFixed(0)).join(' ')}`);
    await ch.deleteQueue(queue);
  } finally {
    await conn.close().catch(() => undefined);
  }
}

await rpcCost();
await publishCost();
