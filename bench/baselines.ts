// Raw-client baselines, one module per broker, loaded lazily by URL driver so that a memory://
// run never loads a broker library. A baseline module exports `baselines: BaselineSet` keyed by
// the scenario names of scenarios.ts; scenarios without a baseline print "-".
//
// To add one (e.g. RabbitMQ with plain amqplib): write bench/raw-amqp.ts exporting
// `export const baselines: BaselineSet = { 'call-sequential': async (ctx) => ..., ... }`
// and add `rabbit: () => import('./raw-amqp.js')` (and the amqp/amqps/kombu aliases) below.
import type { BaselineSet } from './harness.js';

type BaselineModule = { baselines: BaselineSet };

export const BASELINE_LOADERS: Readonly<Record<string, () => Promise<BaselineModule>>> = {
  // memory:// has no raw client to compare with.
  rabbit: () => import('./raw-amqp.js'),
  amqp: () => import('./raw-amqp.js'),
  amqps: () => import('./raw-amqp.js'),
  kombu: () => import('./raw-amqp.js'),
};

/** The baselines for a URL's driver, or none. */
export async function loadBaselines(driver: string): Promise<BaselineSet> {
  const load = BASELINE_LOADERS[driver];
  return load ? (await load()).baselines : {};
}
