// The states of the one server lifecycle (oslo MessageHandlingServer) and what start(), stop()
// and wait() may do in each: one table, so the RPC server and every listener refuse alike.
import { InvalidState } from '../core/errors.js';

/**
 * Where a server or listener is in its cycle `start()` → `stop()` → `wait()`:
 * `idle` (never started, failed to start, or ended by `wait()`), `starting` (subscribing),
 * `running`, `stopping` (no longer taking messages, the driver still handing over what it
 * received), `stopped` (`stop()` done), `waiting` (`wait()` draining the handlers in flight).
 */
export type ServerState = 'idle' | 'starting' | 'running' | 'stopping' | 'stopped' | 'waiting';

/** The three steps of the cycle. */
export type ServerStep = 'start' | 'stop' | 'wait';

/**
 * What a step does in each state: `run` begins it, `same` returns the promise of the call that
 * began it (repeating a step is harmless), `refuse` rejects with InvalidState. A step already
 * taken in the current cycle (since the last `start()`) always answers with its own promise, so
 * `stop()` and `wait()` after a finished cycle resolve at once.
 */
export const TRANSITIONS: Readonly<Record<ServerStep, Readonly<Record<ServerState, 'run' | 'same' | 'refuse'>>>> = Object.freeze({
  start: Object.freeze({ idle: 'run', starting: 'same', running: 'same', stopping: 'refuse', stopped: 'refuse', waiting: 'refuse' }),
  stop: Object.freeze({ idle: 'refuse', starting: 'run', running: 'run', stopping: 'same', stopped: 'same', waiting: 'same' }),
  wait: Object.freeze({ idle: 'refuse', starting: 'refuse', running: 'refuse', stopping: 'run', stopped: 'run', waiting: 'same' }),
} as const);

/** What to do instead, per refused step. */
const REMEDY: Readonly<Record<ServerStep, string>> = Object.freeze({
  start: 'call wait() after stop() before starting again',
  stop: 'call start() first',
  wait: 'call stop() first',
});

/**
 * The InvalidState a refused step rejects with; the same words for the RPC server and every
 * notification listener (`stop() called while idle; call start() first`).
 */
export function refusal(step: ServerStep, state: ServerState): InvalidState {
  return new InvalidState(`${step}() called while ${state}; ${REMEDY[step]}`);
}
