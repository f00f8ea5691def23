// What a driver can do. Asking for a capability a driver lacks fails at once with
// NotSupportedError, never silently at send time.
import { NotSupportedError } from '../core/errors.js';

/** What a driver supports; the façades check these before sending or subscribing. */
export interface DriverCapabilities {
  /** RPC `call` (request/reply) and `cast`. */
  readonly rpc: boolean;
  /** Fanout casts to every server of a topic. */
  readonly fanout: boolean;
  /** `IncomingMessage.requeue()` redelivers notifications. */
  readonly requeue: boolean;
  /** Notification listener pools (a copy per pool, members of a pool share). */
  readonly pools: boolean;
  /** Call-monitor heartbeats (`callMonitorTimeout`). */
  readonly callMonitor: boolean;
  /** Notifications are kept by the broker until a consumer takes them. */
  readonly durableNotifications: boolean;
  /**
   * Messages sent after a listener's `stop()` go at once to the other listeners of its queue or
   * pool (true), or wait until its cleanup (false): a consumer group (Kafka) keeps a stopped
   * member's partitions until it leaves the group, since leaving earlier would fail the commits of
   * what it is still handling and run those messages twice. Either way none reaches the stopped
   * listener and none is lost. @default true
   */
  readonly stopHandsOver?: boolean;
  /**
   * After `maxDeliveries` (the driver option, `max_deliveries` in the URL) a notification is set
   * aside in the dead letters of its address, and `deadLetters()` lists, replays and purges them.
   * @default false
   */
  readonly deadLetters?: boolean;
}

/** One capability name, e.g. `requeue`. */
export type Capability = keyof DriverCapabilities;

/** Throws NotSupportedError naming the driver and the missing capability. */
export function requireCapability(driverName: string, caps: DriverCapabilities, capability: Capability, what?: string): void {
  if (!caps[capability]) {
    throw new NotSupportedError(`The ${driverName} driver does not support ${what ?? capability}`);
  }
}
