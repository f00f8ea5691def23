// PLACEHOLDER replaced below
import { DriverLoadFailure } from '../../errors.js';
import type { KafkaClientAdapter } from './client.js';
export function createClient(): KafkaClientAdapter {
  throw new DriverLoadFailure('not yet');
}
