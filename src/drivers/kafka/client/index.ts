// The client-library seam of the Kafka driver: the adapter interface (adapter.ts) and the factory
// that picks kafkajs or @platformatic/kafka, importing the chosen one only when a transport first
// needs it, so an application loads the one library it chose.
import { DriverLoadFailure } from '../../../core/errors.js';
import type { Logger } from '../../../core/logger.js';
import type { ResolvedKafkaOptions } from '../options.js';
import type { KafkaClientAdapter, KafkaClientModule } from './adapter.js';

export type { Assignment, CommitOffset, ConsumerHandlers, ConsumerSettings, IncomingRecord, KafkaClientAdapter, KafkaClientModule, KafkaConsumerHandle, KafkaReaderHandle, OutgoingRecord, ReaderSettings } from './adapter.js';
export { partitionKey } from './adapter.js';

/** The npm package behind each `client` choice. */
const CLIENT_PACKAGES: Readonly<Record<ResolvedKafkaOptions['client'], string>> = { kafkajs: 'kafkajs', platformatic: '@platformatic/kafka' };

/** Loads the chosen client's adapter (and with it the library) on first use only. */
export async function loadClient(options: ResolvedKafkaOptions, logger: Logger, clientId: string): Promise<KafkaClientAdapter> {
  let mod: KafkaClientModule;
  const pkg = CLIENT_PACKAGES[options.client];
  try {
    mod = options.client === 'platformatic' ? await import('./platformatic.js') : await import('./kafkajs.js');
  } catch (err) {
    throw new DriverLoadFailure(`The kafka driver with client=${options.client} needs the package ${pkg}: npm install ${pkg}`, { cause: err });
  }
  return mod.createClient(options, logger, clientId);
}
