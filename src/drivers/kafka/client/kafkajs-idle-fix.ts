// kafkajs 2.2.x keeps a 1 ms timer running on every broker connection it ever used: its request
// queue checks for pending requests after each response and then schedules the next check even
// when nothing is pending (kafkajs issues 1556, 1604 and 1704; the fixes were never released).
// Each idle connection then wakes the process a thousand times a second, and a listener has
// several (group coordinator, partition leaders, its retry reader's). tidings stops that loop when
// it loads its kafkajs adapter: a check is only scheduled while a request is queued or the broker
// throttles. A queued request schedules its own check when it is queued, and a response checks the
// queue before anything else, so nothing waits longer than before. The fix changes kafkajs's
// RequestQueue class itself: every kafkajs client of the process (the application's own
// included) stops spinning, and none of them behaves differently otherwise.
import { createRequire } from 'node:module';
import type { Logger } from '../../../core/logger.js';

/** The part of kafkajs's (internal) RequestQueue the fix relies on. */
interface RequestQueue {
  pending: unknown[];
  throttledUntil: number;
  scheduleCheckPendingRequests(): void;
}

const FIXED = Symbol.for('tidings.kafkajsIdleFix');

/** What applying the fix found: `fixed` (now or before), or why it was left alone. */
export type KafkajsIdleFixResult = 'fixed' | 'not-kafkajs-2.2' | 'queue-not-found';

/**
 * Stops kafkajs 2.2.x's idle 1 ms timer loop (see the file comment); idempotent. Other kafkajs
 * versions, or a queue class of another shape, are left as they are (logged at debug).
 */
export function applyKafkajsIdleFix(logger: Logger): KafkajsIdleFixResult {
  const require = createRequire(import.meta.url);
  let version: string;
  let proto: RequestQueue & { [FIXED]?: true };
  try {
    version = (require('kafkajs/package.json') as { version: string }).version;
    if (!/^2\.2\./.test(version)) {
      logger.debug('kafkajs is not 2.2.x: its request queue is left as it is', { version });
      return 'not-kafkajs-2.2';
    }
    proto = (require('kafkajs/src/network/requestQueue/index.js') as { prototype: RequestQueue & { [FIXED]?: true } }).prototype;
  } catch (err) {
    logger.debug('kafkajs request queue not found: its idle timer is left as it is', { err });
    return 'queue-not-found';
  }
  if (proto[FIXED]) return 'fixed';
  const schedule = proto.scheduleCheckPendingRequests;
  if (typeof schedule !== 'function') {
    logger.debug('kafkajs request queue has no scheduleCheckPendingRequests: its idle timer is left as it is', { version });
    return 'queue-not-found';
  }
  proto.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(this: RequestQueue): void {
    // Nothing queued and no throttle to wait out: the next queued request schedules its own check.
    if (this.pending.length === 0 && !(this.throttledUntil > Date.now())) return;
    schedule.call(this);
  };
  Object.defineProperty(proto, FIXED, { value: true });
  logger.debug('kafkajs request queue: idle 1 ms timer loop stopped (kafkajs issue 1556)', { version });
  return 'fixed';
}
