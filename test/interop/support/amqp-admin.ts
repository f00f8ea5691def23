// Broker-side helpers for interop and fault tests, through amqplib itself (never through
// tidings): raw publishes, queue depths, and deleting the queues a test left behind.
import amqp from 'amqplib';
import { PRIORITIES } from '../../../src/index.js';

export const AMQP_URL = process.env.TIDINGS_AMQP_ADMIN_URL ?? 'amqp://guest:guest@127.0.0.1:5672/';

/** Deletes queues; missing ones are ignored (each delete gets its own channel, since a 404 closes it). */
export async function deleteQueues(names: Iterable<string>): Promise<void> {
  const conn = await amqp.connect(AMQP_URL);
  conn.on('error', () => {});
  try {
    for (const name of new Set(names)) {
      const ch = await conn.createChannel();
      ch.on('error', () => {});
      await ch.deleteQueue(name).catch(() => {});
      await ch.close().catch(() => {});
    }
  } finally {
    await conn.close().catch(() => {});
  }
}

/** The queues an RPC topic and its servers use (fanout queues vanish on their own). */
export function rpcQueues(topic: string, servers: readonly string[]): string[] {
  return [topic, ...servers.map((s) => `${topic}.${s}`)];
}

/** `<topic>.<priority>` for every priority, plus pool queues. */
export function notificationQueues(topics: readonly string[], pools: readonly string[] = []): string[] {
  return [...topics.flatMap((t) => PRIORITIES.map((p) => `${t}.${p}`)), ...pools];
}

/** Ready + unacked message count of a queue (undefined when it does not exist). */
export async function queueDepth(name: string): Promise<{ messageCount: number; consumerCount: number } | undefined> {
  const conn = await amqp.connect(AMQP_URL);
  conn.on('error', () => {});
  try {
    const ch = await conn.createChannel();
    ch.on('error', () => {});
    const r = await ch.checkQueue(name).catch(() => undefined);
    return r && { messageCount: r.messageCount, consumerCount: r.consumerCount };
  } finally {
    await conn.close().catch(() => {});
  }
}

/** Publishes a raw body with oslo's properties unless overridden; resolves after the broker confirms. */
export async function publishRaw(exchange: string, routingKey: string, body: string | Buffer, props: amqp.Options.Publish = {}): Promise<void> {
  const conn = await amqp.connect(AMQP_URL);
  conn.on('error', () => {});
  try {
    const ch = await conn.createConfirmChannel();
    ch.on('error', () => {});
    ch.publish(exchange, routingKey, Buffer.isBuffer(body) ? body : Buffer.from(body), {
      contentType: 'application/json',
      contentEncoding: 'utf-8',
      deliveryMode: 2,
      priority: 0,
      headers: {},
      ...props,
    });
    await ch.waitForConfirms();
  } finally {
    await conn.close().catch(() => {});
  }
}
