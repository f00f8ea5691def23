// kafkajs 2.2.x can spin a core forever when a consumer stops while its fetchers are being
// rebuilt (a broker vanished, so the leaders changed): the runner is already stopped, the new
// fetchers were created after its stop() stopped the old ones, and each loops on a fetch that
// returns [] at once, in microtasks only, so not even a timer of the process runs again. tidings'
// consumers get a fetch that throws instead once their runner stopped: the fetcher ends, and
// kafkajs's retrier, seeing the runner stopped, ends the consumer as it ends a stopped one.
import { createRequire } from 'node:module';
import type { Logger } from '../../../core/logger.js';

/** The part of kafkajs's (internal) consumer Runner the fix relies on. */
interface RunnerPrototype {
  fetch(this: Runner, nodeId: number): Promise<unknown[]>;
  [PATCHED]?: true;
}
interface Runner {
  running: boolean;
  consumerGroup?: { groupId?: string };
}

const PATCHED = Symbol('tidings.kafkajsStopFix');

/** Groups whose runners the fix covers: those of tidings' consumers (an application's own kafkajs consumers are left as shipped). */
const covered = new Set<string>();

/** Thrown by the fetch of a stopped runner; kafkajs's retrier sees the runner stopped and ends. */
export class ConsumerStoppedSignal extends Error {
  override readonly name = 'TidingsConsumerStopped';
}

let applied: boolean | undefined;

/**
 * Installs the fix once per process (kafkajs 2.2.x only; other versions are left alone) and
 * covers the runners of `groupId`. A group stays covered: a stopped runner of it, whoever's,
 * ends instead of spinning, which no caller can tell from kafkajs's intended behaviour.
 */
export function coverConsumerStop(groupId: string, logger: Logger): void {
  applied ??= install(logger);
  if (applied) covered.add(groupId);
}

function install(logger: Logger): boolean {
  let runner: { prototype?: RunnerPrototype } | undefined;
  try {
    const require = createRequire(import.meta.url);
    const version = (require('kafkajs/package.json') as { version: string }).version;
    if (!/^2\.2\./.test(version)) {
      logger.debug('kafkajs is not 2.2.x: its consumer stop is left as it is', { version });
      return false;
    }
    runner = require('kafkajs/src/consumer/runner.js') as { prototype?: RunnerPrototype };
  } catch (err) {
    logger.debug('kafkajs consumer runner not found: its stop is left as it is', { err });
    return false;
  }
  const proto = runner?.prototype;
  if (!proto || typeof proto.fetch !== 'function') return false;
  if (proto[PATCHED]) return true;
  const fetch = proto.fetch;
  proto.fetch = function fetchUnlessStopped(this: Runner, nodeId: number): Promise<unknown[]> {
    if (!this.running && covered.has(this.consumerGroup?.groupId ?? '')) return Promise.reject(new ConsumerStoppedSignal('The consumer stopped'));
    return fetch.call(this, nodeId);
  };
  Object.defineProperty(proto, PATCHED, { value: true });
  return true;
}
