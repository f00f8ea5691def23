// Events by name: `listener.on('compute.instance.*', handler)` routes notifications by event type
// (a glob), beside the priority-named endpoints, with the payload checked by an optional schema.
import { InvalidArgument } from '../core/errors.js';
import { isPlainObject } from '../core/json-check.js';
import { isStandardSchema, validateWith, type StandardSchemaV1 } from '../core/schema.js';
import { PRIORITIES, isPriority, type Context, type Priority } from '../contract/types.js';
import type { NotificationBatchItem, NotificationHandlerResult, NotificationMetadata } from '../contract/handlers.js';

/** The metadata an `on()` handler gets: the endpoint metadata plus the event type and publisher. */
export interface NotificationEventMetadata extends NotificationMetadata {
  /** The notification's event type, e.g. `compute.instance.create.end`. */
  readonly eventType: string;
  /** The sender's `publisherId`; null when it sent none. */
  readonly publisherId: string | null;
}

/** An `on()` handler: `(ctx, payload, metadata)`; its result means what an endpoint method's does. */
export type NotificationEventHandler<Ctx = Context, Payload = any> = (
  ctx: Ctx,
  payload: Payload,
  metadata: NotificationEventMetadata,
) => NotificationHandlerResult | Promise<NotificationHandlerResult>;

/** Options of `listener.on(pattern, options, handler)`. */
export interface NotificationEventOptions<S extends StandardSchemaV1 = StandardSchemaV1<any>> {
  /**
   * Schema of the payload (any Standard Schema library); the handler gets its output. A payload
   * it refuses is logged (without the payload), reported on `handlerError` and acknowledged.
   * @default undefined (the payload as received)
   */
  payload?: S;
  /** Priorities to subscribe to for this handler. @default every priority (PRIORITIES) */
  priorities?: readonly Priority[];
}

/** @internal One checked `on()` registration. */
export interface EventRoute {
  readonly pattern: string;
  readonly eventType: RegExp;
  readonly payload?: StandardSchemaV1;
  readonly priorities: readonly Priority[];
  readonly handler: NotificationEventHandler<unknown, unknown>;
}

/**
 * The event-type glob as an anchored RegExp: `*` matches any run of characters, dots included
 * (`compute.*` matches `compute.instance.create.end`); every other character is literal, and the
 * whole event type must match.
 */
export function eventTypeGlob(pattern: string): RegExp {
  return new RegExp(`^${pattern.split('*').map(escapeRegExp).join('.*')}$`);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** @internal Checks the arguments of `on()`; throws InvalidArgument naming the bad one. */
export function eventRoute(pattern: unknown, optionsOrHandler: unknown, maybeHandler: unknown): EventRoute {
  if (typeof pattern !== 'string' || pattern.length === 0) throw new InvalidArgument('pattern', 'a non-empty event type glob, e.g. "compute.instance.*"', pattern);
  const withoutOptions = typeof optionsOrHandler === 'function' || maybeHandler === undefined;
  const options = withoutOptions ? {} : optionsOrHandler;
  const handler = withoutOptions ? optionsOrHandler : maybeHandler;
  if (!isPlainObject(options)) throw new InvalidArgument('options', 'an object {payload?, priorities?}', options);
  if (typeof handler !== 'function') throw new InvalidArgument('handler', 'a function (ctx, payload, metadata)', handler);
  const { payload, priorities = PRIORITIES } = options as NotificationEventOptions;
  if (payload !== undefined && !isStandardSchema(payload)) throw new InvalidArgument('options.payload', 'a Standard Schema (zod, valibot, arktype...)', payload);
  if (!Array.isArray(priorities) || priorities.length === 0 || !priorities.every(isPriority)) {
    throw new InvalidArgument('options.priorities', `a non-empty array of ${PRIORITIES.join(', ')}`, priorities);
  }
  return { pattern, eventType: eventTypeGlob(pattern), payload, priorities: [...new Set(priorities)], handler: handler as EventRoute['handler'] };
}

/**
 * @internal Runs `route` for one notification: the payload through its schema (a refusal goes to
 * `refused` and counts as handled, so it is acknowledged, never requeued), then the handler.
 */
export async function runEventRoute(route: EventRoute, item: NotificationBatchItem<unknown>, refused: (error: unknown) => void): Promise<NotificationHandlerResult> {
  let payload = item.payload;
  if (route.payload) {
    try {
      payload = await validateWith(route.payload, payload, 'payload');
    } catch (error) {
      refused(error);
      return undefined; // HANDLED
    }
  }
  return route.handler(item.ctx, payload, eventMetadataOf(item));
}

/** The metadata an `on()` handler gets, for one notification of a batch (its event type and publisher included). */
export function eventMetadataOf(item: NotificationBatchItem<unknown>): NotificationEventMetadata {
  const m = item.metadata;
  return {
    message_id: m.message_id,
    timestamp: m.timestamp,
    messageId: m.messageId,
    priority: m.priority,
    redelivered: m.redelivered,
    deliveryCount: m.deliveryCount,
    signal: m.signal,
    unwrap: m.unwrap,
    eventType: item.eventType,
    publisherId: item.publisherId,
  };
}
