// The notification façade: Notifier, listeners (plain and batch), dispatcher results and filters.
export { Notifier, NOTIFIER_DEFAULTS, formatTimestamp, type NotifierOptions, type NotifierPrepareOptions } from './notifier.js';
export {
  TestNotificationSink,
  maskSecrets,
  SECRET_KEY_PATTERN,
  NOTIFIER_DRIVER_NAMES,
  type NotifierDriver,
  type NotifierDriverName,
  type NotificationBody,
  type TestNotificationRecord,
  type WirePriority,
} from './notifier-drivers.js';
export {
  NotificationListener,
  getNotificationListener,
  getBatchNotificationListener,
  NOTIFICATION_LISTENER_DEFAULTS,
  BATCH_NOTIFICATION_LISTENER_DEFAULTS,
  type NotificationListenerOptions,
  type BatchNotificationListenerOptions,
} from './listener.js';
export {
  NotificationDispatcher,
  BatchNotificationDispatcher,
  NotificationResult,
  type NotificationEndpoint,
  type BatchNotificationEndpoint,
  type NotificationMetadata,
  type NotificationBatchItem,
  type NotificationHandlerResult,
  type HandlerFailure,
} from './dispatcher.js';
export { type CheckedEndpoints, type HasPriorityMethod, type MissingPriorityMethod } from './endpoint-check.js';
export { eventMetadataOf, eventTypeGlob, type NotificationEventHandler, type NotificationEventOptions, type NotificationEventMetadata } from './event-routes.js';
export { NotificationFilter, type NotificationFilterInit, type FilterPattern, type FilterPatternMap } from './filter.js';
export {
  NOTIFY_CHANNELS,
  type NotifierEvents,
  type NotificationListenerEvents,
  type NotificationSentEvent,
  type NotificationFailedEvent,
  type NotificationDispatchedEvent,
  type NotificationHandlerTimeoutEvent,
} from './instrumentation.js';
