// Driver-level RabbitMQ test helpers: an AmqpDriver built like transport.ts builds it, a raw
// amqplib channel for inspecting the wire, a sample notification body, and cleanup.
import { connect, type Channel, type ChannelModel } from 'amqplib';
import { afterAll, beforeAll } from 'vitest';
import type { BaseDriver } from '../../src/contract/base-driver.js';
import type { IncomingMessage } from '../../src/contract/incoming-message.js';
import type { Listener } from '../../src/contract/listener.js';
import { Target } from '../../src/core/target.js';
import { defaultRemoteErrorRegistry } from '../../src/contract/remote-error.js';
import { createDriver, type AmqpDriver } from '../../src/drivers/amqp/index.js';
import { createMemoryLogger, type Logger } from '../../src/core/logger.js';
import { TransportURL } from '../../src/core/transport-url.js';
import { RABBIT_URL, requireRabbitMQ } from './brokers.js';
import { deleteRabbitObjectsWithPrefix } from './rabbit-admin.js';

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

/** A describe block's RabbitMQ driver fixture: a raw channel, the drivers and listeners to clean up. */
export interface AmqpDriverFixture {
  /** The raw channel (valid once the block's `beforeAll` ran). */
  readonly ch: Channel;
  readonly drivers: AmqpDriver[];
  readonly listeners: Listener<any>[];
}

/**
 * Registers the block's hooks: requires RabbitMQ and opens a raw channel before; afterwards cleans
 * up listeners and drivers, closes the channel and deletes every queue and exchange named `prefix…`.
 */
export function useAmqpDrivers(prefix: string): AmqpDriverFixture {
  let opened: { raw: ChannelModel; ch: Channel } | undefined;
  const fixture = {
    get ch(): Channel {
      if (!opened) throw new Error('useAmqpDrivers: the channel is not open yet (used before beforeAll)');
      return opened.ch;
    },
    drivers: [] as AmqpDriver[],
    listeners: [] as Listener<any>[],
  };
  beforeAll(async () => {
    await requireRabbitMQ();
    opened = await openRawChannel();
  });
  afterAll(async () => {
    await cleanupAmqpDrivers(fixture.drivers, fixture.listeners, opened?.ch);
    await opened?.raw.close().catch(() => undefined);
    await deleteRabbitObjectsWithPrefix(prefix);
  });
  return fixture;
}

/**
 * Listens for `<topic>.info` on `driver`, keeps `listener` in `listeners` for cleanup, and
 * acknowledges each notification after recording it in `got`.
 */
export async function collectNotifications(driver: Pick<BaseDriver, 'listenForNotifications'>, topic: string, listeners: Listener<any>[]): Promise<{ listener: Listener<any>; got: IncomingMessage[] }> {
  const listener = await driver.listenForNotifications([[new Target({ topic }), 'info']]);
  listeners.push(listener);
  const got: IncomingMessage[] = [];
  listener.start(async (msgs) => {
    for (const m of msgs) {
      got.push(m);
      await m.acknowledge();
    }
  });
  return { listener, got };
}
