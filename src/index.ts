// Public surface: façades, Target, errors, types. Never a driver.
export * from './errors.js';
export { Target, versionIsCompatible, type TargetInit } from './target.js';
export { TransportURL, type TransportHost } from './transport-url.js';
export { getRpcTransport, getNotificationTransport, Transport, DEFAULT_TRANSPORT_URL, type TransportOptions, type TransportKind } from './transport.js';
export { silentLogger, createConsoleLogger, createMemoryLogger, type Logger, type LogLevel, type LogFields, type MemoryLogger } from './logger.js';
export {
  toLogger,
  fromPino,
  fromBunyan,
  fromWinston,
  fromConsole,
  type LoggerLike,
  type ObjectFirstLogger,
  type WinstonLikeLogger,
  type ConsoleLike,
  type ConsoleAdapterOptions,
} from './logger-adapters.js';
export { NoOpSerializer, JsonPayloadSerializer, toPrimitive, type Serializer } from './serializer.js';
export { RETRY_DEFAULTS, type RetryPolicy } from './retry.js';
export { RemoteErrorRegistry, defaultRemoteErrorRegistry, remoteOrigin, type FailureInfo, type RemoteOrigin } from './driver/remote-error.js';
export { PRIORITIES, type Priority, type Context } from './driver/types.js';
export {
  getRpcClient,
  RpcClient,
  RPC_CLIENT_DEFAULTS,
  getRpcServer,
  RpcServer,
  RPC_SERVER_DEFAULTS,
  RpcDispatcher,
  DefaultRpcAccessPolicy,
  LegacyRpcAccessPolicy,
  ExplicitRpcAccessPolicy,
  expose,
  expectedExceptions,
  RPC_CHANNELS,
  type RpcClientOptions,
  type RpcPrepareOptions,
  type RpcCallOptions,
  type RpcCastOptions,
  type RpcServerOptions,
  type RpcServerEvents,
  type RpcDispatchInfo,
  type RpcAccessPolicy,
  type RpcMeta,
  type EndpointMethod,
  type UntypedApi,
  type RpcMethodName,
  type RpcArgs,
  type RpcResult,
  type RpcTraceContext,
} from './rpc/index.js';
export {
  Notifier,
  NOTIFIER_DEFAULTS,
  TestNotificationSink,
  NotificationListener,
  getNotificationListener,
  getBatchNotificationListener,
  NOTIFICATION_LISTENER_DEFAULTS,
  BATCH_NOTIFICATION_LISTENER_DEFAULTS,
  NotificationResult,
  NotificationFilter,
  NOTIFY_CHANNELS,
  type NotifierOptions,
  type NotifierPrepareOptions,
  type NotifierDriver,
  type NotifierDriverName,
  type NotificationBody,
  type TestNotificationRecord,
  type NotificationListenerOptions,
  type BatchNotificationListenerOptions,
  type NotificationEndpoint,
  type CheckedEndpoints,
  type MissingPriorityMethod,
  type BatchNotificationEndpoint,
  type NotificationMetadata,
  type NotificationBatchItem,
  type NotificationHandlerResult,
  type NotificationFilterInit,
  type NotifierEvents,
  type NotificationListenerEvents,
} from './notify/index.js';
