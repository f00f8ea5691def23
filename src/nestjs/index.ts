// tidings/nestjs: a NestJS transport over tidings (a server strategy and a ClientProxy). The only
// part of tidings that imports NestJS; the core never loads it.
export {
  ServerTidings,
  TIDINGS_TRANSPORT,
  type TidingsServerOptions,
  type TidingsRpcOptions,
  type TidingsNotificationOptions,
  type TidingsMessageExtras,
  type TidingsEventExtras,
  type TidingsBatchExtras,
  type TidingsServerParts,
} from './server.js';
export { ClientTidings, type TidingsClientOptions, type TidingsClientParts } from './client.js';
export { TidingsContext, TidingsRecord, type TidingsRecordOptions } from './context.js';
export { NESTJS_REMOTE_MODULE } from './errors.js';
