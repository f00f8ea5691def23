// Public surface: façades, Target, errors, types. Never a driver.
export * from './core/errors.js';
export { Target, versionIsCompatible, type TargetInit } from './core/target.js';
export { TransportURL, redactString, type TransportHost } from './core/transport-url.js';
export {
  getRpcTransport,
  getNotificationTransport,
  Transport,
  DEFAULT_TRANSPORT_URL,
  TRANSPORT_URL_ENV,
  registerDriver,
  type DriverLoader,
  type RegisterDriverOptions,
  type TransportOptions,
  type TransportKind,
  type TransportURLSource,
} from './transport.js';
export { OTEL_METRICS, type InstrumentationOptions, type TracerProviderLike, type MeterProviderLike, type PropagatorLike } from './observability/instrumentation.js';
export type { TransportHealth, HealthError } from './contract/base-driver.js';
export { CLOSE_DEFAULTS, type CloseOptions } from './core/lifecycle.js';
export { silentLogger, createConsoleLogger, createMemoryLogger, type Logger, type LogLevel, type LogFields, type MemoryLogger } from './core/logger.js';
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
} from './core/logger-adapters.js';
export { NoOpSerializer, JsonPayloadSerializer, toPrimitive, type Serializer } from './core/serializer.js';
export type { Jsonify, JsonifyResult, NotJsonSerialisable } from './core/jsonify.js';
export { RETRY_DEFAULTS, RPC_RETRY_DEFAULTS, type RetryPolicy, type RpcRetryPolicy } from './core/retry.js';
export type { CircuitState, CircuitView, ResilienceCounts, ResilienceStats } from './contract/resilience-stats.js';
export { RemoteErrorRegistry, defaultRemoteErrorRegistry, remoteOrigin, type FailureInfo, type RemoteOrigin } from './contract/remote-error.js';
export { PRIORITIES, type Priority, type Context } from './contract/types.js';
export type {
  Middleware,
  RpcClientMiddleware,
  RpcServerMiddleware,
  NotifierMiddleware,
  ListenerMiddleware,
  RpcClientInvocation,
  RpcServerInvocation,
  NotifierInvocation,
  ListenerInvocation,
  TransportMiddleware,
} from './middleware/middleware.js';
export * from './rpc/index.js';
export {
  isStandardSchema,
  validateWith,
  type StandardSchemaV1,
  type StandardSchemaProps,
  type StandardSchemaResult,
  type StandardSchemaIssue,
  type StandardSchemaPathSegment,
  type InferInput,
  type InferOutput,
} from './core/schema.js';
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
  eventMetadataOf,
  eventTypeGlob,
  type NotificationEventHandler,
  type NotificationEventOptions,
  type NotificationEventMetadata,
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
  type HasPriorityMethod,
  type BatchNotificationEndpoint,
  type NotificationMetadata,
  type NotificationBatchItem,
  type NotificationHandlerResult,
  type NotificationFilterInit,
  type FilterPattern,
  type FilterPatternMap,
  type HandlerFailure,
  type NotificationSentEvent,
  type NotificationFailedEvent,
  type NotificationDispatchedEvent,
  type NotificationHandlerTimeoutEvent,
  type NotifierEvents,
  type NotificationListenerEvents,
} from './notify/index.js';
