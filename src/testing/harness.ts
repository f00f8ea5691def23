// Per-test environment of the conformance suite: one isolated URL per test, unique names
// under a run prefix, and every transport/server/listener torn down in afterEach.
import { afterEach, beforeEach, expect } from 'vitest';
import {
  getNotificationTransport,
  getRpcTransport,
  MessagingError,
  NotSupportedError,
  type Transport,
  type TransportOptions,
} from '../index.js';
import type { DriverCapabilities } from '../contract/capabilities.js';
import { deferred, uniqueName, waitFor, type Deferred } from './wait.js';

/** What a driver hands to `runConformanceSuite`. */
export interface ConformanceSubject {
  /** Suite title, e.g. `memory` or `amqp (RabbitMQ)`. */
  name: string;
  /**
   * A URL for one test. Each call MAY return a new isolated broker space (memory: a fresh
   * vhost); the suite calls it once per test and shares the result between that test's
   * transports. Brokers without per-test spaces rely on the unique names the suite uses.
   */
  url: () => string;
  /** The capabilities the driver MUST declare; the suite checks the driver agrees. */
  capabilities: DriverCapabilities;
  /** Merged into every transport the suite opens. */
  transportOptions?: TransportOptions;
  /** Called with every transport the suite opens (e.g. to remember its reply queue for a sweep). */
  onTransport?: (transport: Transport) => void;
  /** Runs once before the suite, e.g. `requireRabbitMQ` (fails, never skips). */
  before?: () => Promise<void>;
  /**
   * Runs once after the suite with the prefix every queue/exchange/pool name of this run
   * starts with, so that a broker with persistent queues can remove what the run left.
   */
  after?: (namePrefix: string) => Promise<unknown>;
  /**
   * Publishes `body` as-is, bypassing tidings, to `exchange` with `routingKey` on the broker
   * of `url` (the test's URL). The suite calls it in exactly two ways, and both MUST arrive:
   *
   * - exchange `''` with a caller's reply address (`reply_<hex>`, the `_reply_q` of a call) as
   *   `routingKey`: a reply in oslo's 2.0 envelope, as a server outside tidings would send it. It
   *   MUST land where the driver's reply consumer of that address reads (RabbitMQ's default
   *   exchange routes it to the queue of that name); mapped elsewhere, the call times out.
   * - exchange `'openstack'` (always: oslo's default control exchange, whatever the subject's
   *   transport options) with `<topic>` or `<topic>.info` as `routingKey`: malformed bodies for
   *   an RPC server of `<topic>` or a notification listener of `<topic>` on that exchange.
   *
   * Drivers without exchanges map the pair onto their own addressing (e.g. the routing key as
   * the stream, `''` as the reply list).
   */
  publishRaw: (url: string, exchange: string, routingKey: string, body: string) => Promise<void>;
  /** Multiplies waits and time bounds for slow brokers. @default 1 */
  timeScale?: number;
  /**
   * Time limit of each test in ms, whatever the vitest config says: some tests start several
   * servers or wait out a collection window, and on a broker whose group joins take seconds
   * they need more than vitest's defaults. @default `CONFORMANCE_TEST_TIMEOUT_MS * timeScale`
   */
  testTimeout?: number;
  /**
   * The parts of the suite to register, in the suite's order; all unless given. A broker whose
   * suite takes minutes can run it as several files, each with some parts and a broker of its
   * own, side by side.
   */
  parts?: readonly ConformancePart[];
}

/** The parts of the conformance suite, in the order they run. */
export const CONFORMANCE_PARTS = ['rpc', 'notify', 'batch', 'lifecycle', 'malformed', 'reply-address', 'contract', 'health', 'wire', 'delivery', 'handler-timeout', 'dead-letters'] as const;
/** One part of the conformance suite (`ConformanceSubject.parts`). */
export type ConformancePart = (typeof CONFORMANCE_PARTS)[number];

/** A test's time limit on a broker of `timeScale` 1 (see `ConformanceSubject.testTimeout`). */
export const CONFORMANCE_TEST_TIMEOUT_MS = 30_000;

/** The time limit of each of the subject's tests. */
export function testTimeoutOf(subject: ConformanceSubject): number {
  const { testTimeout } = subject;
  if (testTimeout !== undefined && !(Number.isFinite(testTimeout) && testTimeout > 0)) throw new RangeError(`ConformanceSubject.testTimeout must be a positive number of ms, received ${testTimeout}`);
  return testTimeout ?? Math.round(CONFORMANCE_TEST_TIMEOUT_MS * (subject.timeScale ?? 1));
}

type Closer = () => Promise<unknown>;

/** What a test uses: transports, names and scaled durations, all cleaned up afterwards. */
export interface ConformanceEnv {
  readonly subject: ConformanceSubject;
  readonly caps: DriverCapabilities;
  /** The URL of the current test (memoised per test). */
  url: () => string;
  /** A name unique to this test, under the run prefix. */
  name(kind?: string): string;
  /** `ms * timeScale`. */
  ms(ms: number): number;
  rpcTransport(options?: TransportOptions): Promise<Transport>;
  notificationTransport(options?: TransportOptions): Promise<Transport>;
  /** Registers a teardown step; steps run in reverse order after the test. */
  defer(close: Closer): void;
  /**
   * A promise a handler can block on. Teardown resolves every gate before stopping anything,
   * so a failed test never leaves a server's wait() draining a handler that never ends.
   */
  gate(): Deferred<void>;
}

/**
 * Registers beforeEach/afterEach hooks in the calling `describe` and returns the env the
 * tests of that block use. Teardown failures fail the test: a driver that cannot stop
 * cleanly does not conform.
 */
export function useConformanceEnv(subject: ConformanceSubject, runPrefix: string): ConformanceEnv {
  let closers: Closer[] = [];
  let gates: Deferred<void>[] = [];
  let url: string | undefined;
  const scale = subject.timeScale ?? 1;

  beforeEach(() => {
    closers = [];
    gates = [];
    url = undefined;
  });

  afterEach(async () => {
    for (const g of gates.splice(0)) g.resolve();
    const steps = closers.reverse();
    closers = [];
    const failures: unknown[] = [];
    for (const step of steps) {
      try {
        await step();
      } catch (err) {
        failures.push(err);
      }
    }
    if (failures.length) throw new AggregateError(failures, `conformance teardown failed: ${failures.map(String).join('; ')}`);
  });

  const env: ConformanceEnv = {
    subject,
    caps: subject.capabilities,
    url() {
      url ??= subject.url();
      return url;
    },
    name(kind = 'n') {
      return uniqueName(`${runPrefix}-${kind}`);
    },
    ms(ms: number) {
      return Math.round(ms * scale);
    },
    async rpcTransport(options?: TransportOptions) {
      const transport = await getRpcTransport(env.url(), { ...subject.transportOptions, ...options });
      subject.onTransport?.(transport);
      env.defer(() => transport.cleanup());
      return transport;
    },
    async notificationTransport(options?: TransportOptions) {
      const transport = await getNotificationTransport(env.url(), { ...subject.transportOptions, ...options });
      subject.onTransport?.(transport);
      env.defer(() => transport.cleanup());
      return transport;
    },
    defer(close: Closer) {
      closers.push(close);
    },
    gate() {
      const g = deferred<void>();
      gates.push(g);
      return g;
    },
  };
  return env;
}

/** Something with start/stop/wait: an RPC server or a notification listener. */
export interface Startable {
  start(): Promise<void>;
  stop(): Promise<void>;
  wait(): Promise<void>;
}

/** Starts `s` and registers stop()+wait() for teardown. */
export async function started<S extends Startable>(env: ConformanceEnv, s: S): Promise<S> {
  await s.start();
  env.defer(() => stopAndWait(s));
  return s;
}

const stopping = new WeakMap<Startable, Promise<void>>();

/** stop() then wait(), once per object: teardown reuses a stop the test already did. */
function stopAndWait(s: Startable): Promise<void> {
  let done = stopping.get(s);
  if (!done) {
    done = (async () => {
      await s.stop();
      await s.wait();
    })();
    stopping.set(s, done);
  }
  return done;
}

/** Tells teardown that the test stopped and waited for `s` itself. */
export function markStopped(s: Startable): void {
  if (!stopping.has(s)) stopping.set(s, Promise.resolve());
}

/**
 * Asserts that `action` fails promptly with `errorClass`, whether it throws synchronously or
 * returns a rejected promise. Returns the error for further assertions.
 */
export async function expectFailure<E extends Error>(
  action: () => unknown,
  errorClass: abstract new (...args: any[]) => E,
  options: { withinMs?: number } = {},
): Promise<E> {
  const started = Date.now();
  let error: unknown;
  try {
    await action();
  } catch (err) {
    error = err;
  }
  expect(error, `expected ${errorClass.name} but the action succeeded`).toBeDefined();
  if (!(error instanceof errorClass)) {
    throw new Error(`expected ${errorClass.name}, got ${describeError(error)}`, { cause: error });
  }
  if (options.withinMs !== undefined) expect(Date.now() - started).toBeLessThan(options.withinMs);
  return error;
}

/** A missing capability: asking for it fails at once (well under a second) with NotSupportedError. */
export function expectNotSupported(action: () => unknown): Promise<NotSupportedError> {
  return expectFailure(action, NotSupportedError, { withinMs: 2000 });
}

function describeError(error: unknown): string {
  if (error instanceof MessagingError) return `${error.name} (${error.code}): ${error.message}`;
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/** Time since `t0` in ms. */
export function since(t0: number): number {
  return Date.now() - t0;
}

/** What {@link sendInRounds} sends, how it sees progress, and when the work counts as shared. */
export interface Rounds {
  /** Sends message number `id` (0, 1, 2, … over every round). */
  send(id: number): Promise<unknown>;
  /** How many of the sent messages every receiver that must get all of them has got. */
  delivered(): number;
  /** True once each competing member has taken some. */
  shared(): boolean;
  /** Each round's wait for all of it to be delivered, in ms. */
  timeoutMs: number;
  /** Names what was sent, in a timeout error. */
  what: string;
}

/**
 * Sends rounds of 20, one at a time, each delivered in full before the next, until the members
 * competing for them have each taken some (at most 10 rounds); returns how many were sent. On a
 * loaded machine one member can take a whole round before another is back in its read (or, just
 * started, has made its first one): the work is still shared, later. The caller then asserts
 * each member's share, the union and the absence of duplicates over every round.
 */
export async function sendInRounds(rounds: Rounds): Promise<number> {
  let sent = 0;
  for (let round = 0; round < 10; round++) {
    for (let i = 0; i < 20; i++) await rounds.send(sent++);
    await waitFor(() => rounds.delivered() >= sent, { timeoutMs: rounds.timeoutMs, message: `${sent} ${rounds.what}` });
    if (rounds.shared()) break;
  }
  return sent;
}
