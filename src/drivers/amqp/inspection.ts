// Pool inspection on RabbitMQ without its management API: a passive queue.declare (checkQueue) of
// each queue a listener would consume, named by topology.ts as the listeners name them. A missing
// queue answers 404 and closes the channel, so the probe uses channels of its own and never
// declares, binds or consumes anything.
import type { Channel, ChannelModel } from 'amqplib';
import type { ResolvedPoolQuery } from '../../contract/addressing.js';
import type { Inspection, PoolView } from '../../contract/inspection.js';
import type { Logger } from '../../core/logger.js';
import { isNotFound, toMessagingError } from './errors.js';
import { notificationQueueFor } from './topology.js';
import type { AmqpOptions } from './options.js';

/**
 * What RabbitMQ tells through AMQP alone: no listing of queues or exchanges (pools are the default
 * one and those named in the query), but each queue's consumers and ready messages.
 */
export const AMQP_INSPECTION: Inspection = Object.freeze({ listsTopics: false, listsPools: false, consumers: true, backlog: true });

/** A queue's counts from a passive declare, or undefined when it does not exist. */
type Probe = (queue: string) => Promise<{ messageCount: number; consumerCount: number } | undefined>;

/**
 * The default queue of each address and the queue of each named pool, where they exist.
 * `backlog` is the queue's ready messages (not the unacknowledged ones, which AMQP does not
 * report); `consumers` its consumer count. With oslo's naming a pool's queue is one for every
 * address of the pool: it is reported once, under the first address of the query, `shared`.
 * The query's exchange means nothing here (queues belong to the virtual host).
 */
export async function inspectAmqpPools(probe: Probe, query: ResolvedPoolQuery, options: Pick<AmqpOptions, 'poolQueuePerTopic'>): Promise<PoolView[]> {
  const views: PoolView[] = [];
  const seen = new Set<string>();
  const look = async (address: string, queue: string, pool: string | undefined): Promise<void> => {
    if (seen.has(queue)) return;
    seen.add(queue);
    const counts = await probe(queue);
    if (counts === undefined) return;
    const shared = pool !== undefined && !options.poolQueuePerTopic;
    views.push({ address, pool: pool ?? queue, isDefault: pool === undefined, consumers: counts.consumerCount, backlog: counts.messageCount, ...(shared ? { shared } : {}) });
  };
  for (const address of query.addresses) {
    await look(address, notificationQueueFor(address, undefined, options), undefined);
    for (const pool of query.pools) await look(address, notificationQueueFor(address, pool, options), pool);
  }
  return views;
}

/**
 * Runs `act` with a probe on channels of its own on `model`: a 404 closes the channel it came on,
 * so the next look opens another. Every channel is closed before it resolves.
 */
export async function withQueueProbe<T>(model: ChannelModel, logger: Logger, act: (probe: Probe) => Promise<T>): Promise<T> {
  let ch: Channel | undefined;
  const open = async (): Promise<Channel> => {
    try {
      const c = await model.createChannel();
      c.on('error', (err: Error) => logger.debug('AMQP inspection channel closed', { err: err.message }));
      return c;
    } catch (err) {
      throw toMessagingError(err, 'Could not open a channel to inspect queues');
    }
  };
  const probe: Probe = async (queue) => {
    ch ??= await open();
    try {
      const { messageCount, consumerCount } = await ch.checkQueue(queue);
      return { messageCount, consumerCount };
    } catch (err) {
      // The broker closed this channel (404, or any other channel error): the next look opens one.
      ch = undefined;
      if (isNotFound(err)) return undefined;
      throw toMessagingError(err, `Could not inspect the queue ${queue}`);
    }
  };
  try {
    return await act(probe);
  } finally {
    await (ch as Channel | undefined)?.close().catch(() => undefined);
  }
}
