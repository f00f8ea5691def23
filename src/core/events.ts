// The typed event emitter behind every façade's `.events`: listening is optional, and a
// listener that throws is logged, never thrown into dispatch, replies or sends.
import { EventEmitter } from 'eventemitter3';
import type { Logger } from './logger.js';

/**
 * An eventemitter3 emitter whose `emit()` never throws: a listener's exception is logged at
 * warn level (the listeners after it miss that one event) and `emit()` returns true.
 * Façades type their `events` field as the plain `EventEmitter<Events>`.
 */
export class GuardedEventEmitter<Events extends EventEmitter.ValidEventTypes> extends EventEmitter<Events> {
  /** @param logger Where a throwing listener is reported. */
  constructor(private readonly logger: Logger) {
    super();
  }

  /** Calls the listeners of `event`; true when it had any. Never throws. */
  override emit<T extends EventEmitter.EventNames<Events>>(event: T, ...args: EventEmitter.EventArgs<Events, T>): boolean {
    try {
      return super.emit(event, ...args);
    } catch (err) {
      this.logger.warn('an event listener threw', { event: String(event), err });
      return true;
    }
  }
}
