// Raw-client baselines, one module per broker and kind, loaded lazily by URL driver so that a
// memory:// run never loads a broker library. A baseline module exports `baselines: BaselineSet`
// keyed by the scenario names of scenarios.ts; scenarios without a baseline print "-". Two kinds:
// `raw` (what a careful user of the client library writes for the same job) and `oslo` (the raw
// client doing the work oslo's wire protocol requires, so tidings' own overhead shows).
//
// To add one (e.g. RabbitMQ with plain amqplib): write bench/raw-amqp.ts exporting
// `export const baselines: BaselineSet = { 'call-sequential': async (ctx) => ..., ... }`
// and add `rabbit: { raw: () => import('./raw-amqp.js') }` (and the amqp/amqps/kombu aliases) below.
import type { BaselineSet } from './harness.js';

type BaselineModule = { baselines: BaselineSet };
type Loaders = { raw?: () => Promise<BaselineModule>; oslo?: () => Promise<BaselineModule> };

const RABBIT: Loaders = { raw: () => import('./raw-amqp.js'), oslo: () => import('./raw-amqp-oslo.js') };
// Redis' second column is raw ioredis doing tidings' own Redis protocol (requests in streams,
// oslo's envelope, reply lists): Python oslo.messaging has no Redis driver, but the design the
// Redis issue asks for costs Redis work that plain list request/reply does not do.
const REDIS: Loaders = { raw: () => import('./raw-redis.js'), oslo: () => import('./raw-redis-protocol.js') };

// Kafka: plain kafkajs, and kafkajs writing oslo's Kafka notification format (Python
// oslo.messaging's Kafka driver carries notifications only: the RPC scenarios have no second column).
const KAFKA: Loaders = { raw: () => import('./raw-kafka.js'), oslo: () => import('./raw-kafka-oslo.js') };

export const BASELINE_LOADERS: Readonly<Record<string, Loaders>> = {
  // memory:// has no raw client to compare with.
  rabbit: RABBIT,
  amqp: RABBIT,
  amqps: RABBIT,
  kombu: RABBIT,
  redis: REDIS,
  rediss: REDIS,
  kafka: KAFKA,
};

/** The baselines of both kinds for a URL's driver, or none. */
export async function loadBaselines(driver: string): Promise<{ raw: BaselineSet; oslo: BaselineSet }> {
  const loaders = BASELINE_LOADERS[driver];
  const [raw, oslo] = await Promise.all([loaders?.raw?.(), loaders?.oslo?.()]);
  return { raw: raw?.baselines ?? {}, oslo: oslo?.baselines ?? {} };
}
