// Driver-level RabbitMQ test helpers: an AmqpDriver built like transport.ts builds it, a raw
// amqplib channel for inspecting the wire, a sample notification body, and cleanup.
import { connect, type Channel, type ChannelModel } from 'amqplib';
import type { Listener } from '../../src/contract/listener.js';
import { defaultRemoteErrorRegistry } from '../../src/contract/remote-error.js';
import { createDriver, type AmqpDriver } from '../../src/drivers/amqp/index.js';
import { createMemoryLogger, type Logger } from '../../src/core/logger.js';
import { TransportURL } from '../../src/core/transport-url.js';
import { RABBIT_URL } from './brokers.js';

export function makeAmqpDriver(exchange: string, options: Record<string, unknown> = {}, logger: Logger = createMemoryLogger(), url = RABBIT_URL): AmqpDriver {
  return createDriver({ url: TransportURL.parse(url), defaultExchange: exchange, allowedRemoteExmods: [], remoteErrors: defaultRemoteErrorRegistry, logger, options }) as AmqpDriver;
}

/** An oslo notification body (§1.10) numbered `i`. */
export const sampleNotification = (i: number) => ({ message_id: `m-${i}`, publisher_id: 'p', event_type: 'e.t', priority: 'INFO', payload: { i }, timestamp: '2026-01-01 00:00:00' });

/** A plain amqplib connection and channel to the test broker. */
export async function openRawChannel(): Promise<{ raw: ChannelModel; ch: Channel }> {
  const raw = await connect({ hostname: '127.0.0.1', port: 5672, username: 'guest', password: 'guest' });
  return { raw, ch: await raw.createChannel() };
}

/** Cleans up listeners and drivers, then deletes the drivers' reply queues through `ch`. */
export async function cleanupAmqpDrivers(drivers: readonly AmqpDriver[], listeners: readonly Listener<any>[], ch?: Channel): Promise<void> {
  for (const l of listeners) await l.cleanup().catch(() => undefined);
  const replyQueues = drivers.map((d) => d.replyQueue).filter((q): q is string => !!q);
  for (const d of drivers) await d.cleanup();
  if (ch) for (const q of replyQueues) await ch.deleteQueue(q).catch(() => undefined);
}
