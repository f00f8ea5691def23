// Typed events and diagnostics channels of the notification façade; both cost nothing
// when nobody listens (payload objects are built only after a `hasSubscribers` check).
import { channel } from 'node:diagnostics_channel';
import type { Priority } from '../driver/types.js';
import type { HandlerFailure } from './dispatcher.js';

/** `node:diagnostics_channel` names published by the notification façade. */
export const NOTIFY_CHANNELS = Object.freeze({
  /** A notification was handed to every driver (message `NotificationSentEvent` or `NotificationFailedEvent`). */
  send: 'tidings:notify:send',
  /** A listener finished one message or batch (message `NotificationDispatchedEvent`). */
  dispatch: 'tidings:notify:dispatch',
});

export const sendChannel = channel(NOTIFY_CHANNELS.send);
export const dispatchChannel = channel(NOTIFY_CHANNELS.dispatch);

export interface NotificationSentEvent {
  messageId: string;
  eventType: string;
  priority: Priority;
  publisherId: string | null;
  /** Milliseconds from the call until every driver accepted the notification. */
  durationMs: number;
}

export interface NotificationFailedEvent extends NotificationSentEvent {
  error: unknown;
}

export interface NotificationDispatchedEvent {
  /** Distinct priorities of the messages (lower-case, as received). */
  priorities: string[];
  /** Messages in this dispatch: 1 for a plain listener, the batch size for a batch listener. */
  messages: number;
  /** How many of them were acknowledged and how many requeued. */
  acknowledged: number;
  requeued: number;
  durationMs: number;
}

/** Events of `Notifier#events` (shared with its `prepare()`d children). */
export interface NotifierEvents {
  sent: [NotificationSentEvent];
  failed: [NotificationFailedEvent];
}

/** Events of `NotificationListener#events`. */
export interface NotificationListenerEvents {
  /** Subscribed; messages flow. */
  started: [];
  /** `stop()` finished: nothing new is taken. */
  stopped: [];
  dispatched: [NotificationDispatchedEvent];
  /** An endpoint threw; the message is requeued (allowRequeue) or acknowledged. */
  handlerError: [HandlerFailure];
}
