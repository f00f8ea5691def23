// kafkajs 2.2.x keeps a 1 ms timer running on every broker connection it ever used: its request
// queue checks for pending requests after each response and then schedules the next check even
// when nothing is pending (kafkajs issues 1556, 1604 and 1704; the fixes were never released).
// Each idle connection then wakes the process a thousand times a second, and a listener has
// several (group coordinator, partition leaders, its retry reader's). tidings stops that loop on
// the connections of the Kafka instances it creates, and only there: a check is only scheduled
// while a request is queued or the broker throttles. A queued request schedules its own check when
// it is queued, and a response checks the queue before anything else, so nothing waits longer than
// before. kafkajs's classes and prototypes are left alone: an application's own kafkajs clients in
// the same process behave exactly as kafkajs ships them.
import { createRequire } from 'node:module';
import type { Kafka } from 'kafkajs';
import type { Logger } from '../../../core/logger.js';

/** The part of kafkajs's (internal) RequestQueue the fix relies on. */
interface RequestQueue {
  pending: unknown[];
  throttledUntil: number;
  scheduleCheckPendingRequests(): void;
}

/** The parts of kafkajs's (internal, frozen since 2.2.4) Cluster and ConnectionPool the fix walks. */
interface ConnectionPoolBuilder {
  build(destination?: unknown): Promise<{ pool?: Array<{ requestQueue?: RequestQueue }> }>;
  [QUIET]?: true;
}
type ClusterFactory = (options: unknown) => { connectionPoolBuilder?: ConnectionPoolBuilder; brokerPool?: { connectionPoolBuilder?: ConnectionPoolBuilder } };

const QUIET = Symbol('tidings.kafkajsIdleFix');

/** What applying the fix found: `fixed` (now or before), or why it was left alone. */
export type KafkajsIdleFixResult = 'fixed' | 'not-kafkajs-2.2' | 'cluster-not-found';

/**
 * Stops kafkajs 2.2.x's idle 1 ms timer loop (see the file comment) on every connection `kafka`
 * opens from now on, its producers', consumers', admins' and direct readers' alike; idempotent.
 * Other kafkajs versions, or an instance of another shape, are left as they are (logged at debug).
 */
export function fixKafkajsIdleLoop(kafka: Kafka, logger: Logger): KafkajsIdleFixResult {
  let version: string;
  try {
    version = (createRequire(import.meta.url)('kafkajs/package.json') as { version: string }).version;
  } catch (err) {
    logger.debug('kafkajs version not found: its idle timer is left as it is', { err });
    return 'cluster-not-found';
  }
  if (!/^2\.2\./.test(version)) {
    logger.debug('kafkajs is not 2.2.x: its request queue is left as it is', { version });
    return 'not-kafkajs-2.2';
  }
  // Every producer, consumer and admin of the instance gets its cluster from this factory, an own
  // property of the instance (a symbol described `private:Kafka:createCluster`).
  const owner = kafka as unknown as Record<symbol, unknown>;
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  const factory = symbol && owner[symbol];
  if (!symbol || typeof factory !== 'function') {
    logger.debug('kafkajs has no cluster factory on its Kafka instance: its idle timer is left as it is', { version });
    return 'cluster-not-found';
  }
  if ((factory as { [QUIET]?: true })[QUIET]) return 'fixed';
  const create = factory as ClusterFactory;
  const quietFactory: ClusterFactory = (options) => {
    const cluster = create(options);
    quietPools(cluster.connectionPoolBuilder);
    quietPools(cluster.brokerPool?.connectionPoolBuilder);
    return cluster;
  };
  Object.defineProperty(quietFactory, QUIET, { value: true });
  owner[symbol] = quietFactory;
  logger.debug('kafkajs request queues of this transport: idle 1 ms timer loop stopped (kafkajs issue 1556)', { version });
  return 'fixed';
}

/** Makes the pools a cluster's builder builds (seed broker, every broker found later) quiet. */
function quietPools(builder: ConnectionPoolBuilder | undefined): void {
  if (!builder || builder[QUIET] || typeof builder.build !== 'function') return;
  const build = builder.build.bind(builder);
  builder.build = async (destination) => {
    const pool = await build(destination);
    for (const connection of pool.pool ?? []) if (connection.requestQueue) quietQueue(connection.requestQueue);
    return pool;
  };
  Object.defineProperty(builder, QUIET, { value: true });
}

/** The queue's own scheduleCheckPendingRequests, in front of kafkajs's (looked up on each call). */
function quietQueue(queue: RequestQueue): void {
  if (typeof queue.scheduleCheckPendingRequests !== 'function' || Object.hasOwn(queue, 'scheduleCheckPendingRequests')) return;
  queue.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(this: RequestQueue): void {
    // Nothing queued and no throttle to wait out: the next queued request schedules its own check.
    if (this.pending.length === 0 && !(this.throttledUntil > Date.now())) return;
    (Object.getPrototypeOf(this) as RequestQueue).scheduleCheckPendingRequests.call(this);
  };
}
