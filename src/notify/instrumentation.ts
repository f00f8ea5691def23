// Typed events and diagnostics channels of the notification façade; both cost nothing
// when nobody listens (payload objects are built only after a `hasSubscribers` check).
import { channel } from 'node:diagnostics_channel';
import type { Context, Priority } from '../contract/types.js';
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

/** A notification every driver accepted: the `sent` event and a `tidings:notify:send` message. */
export interface NotificationSentEvent {
  /** The notification's `message_id`. */
  messageId: string;
  /** Its event type. */
  eventType: string;
  /** Its priority, lower-case. */
  priority: Priority;
  /** The notifier's publisher id. */
  publisherId: string | null;
  /** Milliseconds from the call until every driver accepted the notification. */
  durationMs: number;
  /** The context as sent on the wire (after the serializer and secret filtering; with `traceparent` when OpenTelemetry is on). */
  context: Readonly<Context>;
}

/** A notification a driver failed to deliver: the `failed` event and a `tidings:notify:send` message (with `error`). */
export interface NotificationFailedEvent extends NotificationSentEvent {
  /** The error the send rejects with (a MessagingError). */
  error: unknown;
}

/** One message or batch handled: the `dispatched` event and a `tidings:notify:dispatch` message. */
export interface NotificationDispatchedEvent {
  /** Distinct priorities of the messages (lower-case, as received). */
  priorities: string[];
  /** Messages in this dispatch: 1 for a plain listener, the batch size for a batch listener. */
  messages: number;
  /** How many of them were acknowledged and how many requeued. */
  acknowledged: number;
  /** How many were requeued (only with `allowRequeue`). */
  requeued: number;
  /** From the start of dispatch until every message was settled, ms. */
  durationMs: number;
  /** The context of each message as it arrived (before the serializer), in order. */
  contexts: ReadonlyArray<Readonly<Context>>;
}

/** Notifications given up on at the listener's `handlerTimeout`: the `handlerTimeout` event. */
export interface NotificationHandlerTimeoutEvent {
  /** Distinct event types of the messages. */
  eventTypes: string[];
  /** Messages given up on: 1 for a plain listener, the batch's size for a batch listener. */
  messages: number;
  /** The messages' ids as the driver knows them (undefined when it knows none). */
  messageIds: Array<string | undefined>;
  /** True when they were requeued (`allowRequeue`), false when acknowledged. */
  requeued: boolean;
  /** The configured `handlerTimeout`, ms. */
  timeoutMs: number;
  /** Milliseconds the handler had run when it was given up on. */
  elapsedMs: number;
}

/** Events of `Notifier#events` (shared with its `prepare()`d children). */
export interface NotifierEvents {
  /** Every driver accepted a notification. */
  sent: [NotificationSentEvent];
  /** A notification was not delivered; the send rejects with the same error. */
  failed: [NotificationFailedEvent];
}

/** Events of `NotificationListener#events`. */
export interface NotificationListenerEvents {
  /** Subscribed; messages flow. */
  started: [];
  /** `stop()` finished: nothing new is taken. */
  stopped: [];
  /** One message (plain listener) or batch (batch listener) was handled and settled. */
  dispatched: [NotificationDispatchedEvent];
  /** An endpoint threw; the message is requeued (allowRequeue) or acknowledged. */
  handlerError: [HandlerFailure];
  /** A handler (a batch) ran past `handlerTimeout`; its messages were requeued or acknowledged (also logged at warn level). */
  handlerTimeout: [NotificationHandlerTimeoutEvent];
}
