// Conformance: what happens to a message between the broker and a handler, as the contract states
// it: given back by a listener's cleanup, flagged when redelivered, routed by the cast's exchange,
// on the broker once a cast resolves, and never taken by a stopped consumer.
import { describe, expect, it } from 'vitest';
import { getRpcClient, getRpcServer, NotificationResult, Target, type Context, type Transport } from '../index.js';
import type { DriverCapabilities } from '../contract/capabilities.js';
import type { IncomingMessage } from '../contract/incoming-message.js';
import type { Listener } from '../contract/listener.js';
import type { TargetAndPriority } from '../contract/base-driver.js';
import type { NotificationMetadata } from '../contract/handlers.js';
import { waitFor } from './wait.js';
import { markStopped, started, type ConformanceEnv } from './harness.js';
import { notifier, startListener } from './notify.js';

/**
 * One case of this file: registered by `deliveryTests`, and run on its own by the suite's
 * self-test, which shows each case fails on a driver broken in the way the case names.
 */
export interface ConformanceCase {
  readonly name: string;
  /** Whether the case applies to a driver with these capabilities. */
  readonly applies: (caps: DriverCapabilities) => boolean;
  run(env: ConformanceEnv): Promise<void>;
}

/** Opens a driver-level notification listener on `pair` that records and never settles what it gets (unless `settle`). */
async function rawListener(env: ConformanceEnv, t: Transport, pair: TargetAndPriority, got: IncomingMessage[], settle: boolean): Promise<Listener<IncomingMessage>> {
  const listener = await t.driver.listenForNotifications([pair]);
  env.defer(async () => {
    await listener.stop();
    await listener.cleanup();
  });
  listener.start(async (messages) => {
    got.push(...messages);
    if (settle) for (const m of messages) await m.acknowledge();
  });
  return listener;
}

/** a: cleanup() gives unacknowledged messages back; the next listener of the queue gets them. */
const cleanupGivesBack: ConformanceCase = {
  name: 'a listener cleaned up with unacknowledged notifications gives them back: the next listener of the queue gets them',
  applies: () => true,
  async run(env) {
    const t1 = await env.notificationTransport();
    const t2 = await env.notificationTransport();
    const topic = env.name('topic');
    const pair: TargetAndPriority = [new Target({ topic }), 'info'];
    const held: IncomingMessage[] = [];
    const l1 = await rawListener(env, t1, pair, held, false);
    await notifier(t1, topic).info({}, 'ev', { id: 1 });
    await waitFor(() => held.length === 1, { timeoutMs: env.ms(10_000), message: 'the first listener got the notification' });
    const got: IncomingMessage[] = [];
    await rawListener(env, t2, pair, got, true);
    await l1.stop();
    await l1.cleanup();
    // A consumer group hands the partition over only after a rebalance (two here: a join, then a leave).
    await waitFor(() => got.length >= 1, { timeoutMs: env.ms(20_000), message: 'the notification the first listener left unacknowledged reached the next listener after its cleanup()' });
    expect(got.map((m) => m.notification.payload)).toEqual([{ id: 1 }]);
  },
};

/** b: a requeued notification comes back flagged: redelivered, deliveryCount 2. */
const requeueFlagsRedelivery: ConformanceCase = {
  name: 'a requeued notification comes back with redelivered true and deliveryCount 2 (1 and false the first time)',
  applies: (caps) => caps.requeue,
  async run(env) {
    const nt = await env.notificationTransport();
    const topic = env.name('topic');
    const seen: Array<{ redelivered: boolean; deliveryCount: number }> = [];
    await startListener(
      env,
      nt,
      [topic],
      [
        {
          info(_ctx: Context, _pub: unknown, _ev: string, _payload: unknown, metadata: NotificationMetadata) {
            seen.push({ redelivered: metadata.redelivered, deliveryCount: metadata.deliveryCount });
            return seen.length === 1 ? NotificationResult.REQUEUE : NotificationResult.HANDLED;
          },
        },
      ],
      { allowRequeue: true },
    );
    await notifier(nt, topic).info({}, 'ev', { id: 1 });
    await waitFor(() => seen.length >= 2, { timeoutMs: env.ms(10_000), message: 'the requeued notification came back' });
    expect(seen.slice(0, 2)).toEqual([
      { redelivered: false, deliveryCount: 1 },
      { redelivered: true, deliveryCount: 2 },
    ]);
  },
};

/** c: a cast goes through its target's exchange, not the default one. */
const castHonoursExchange: ConformanceCase = {
  name: "a cast goes through its target's exchange: a server on another exchange of the topic never gets it",
  applies: (caps) => caps.rpc,
  async run(env) {
    const t = await env.rpcTransport();
    const named = env.name('topic');
    const plain = env.name('topic');
    const exchangeA = env.name('exa');
    const exchangeB = env.name('exb');
    const onA: unknown[] = [];
    const onDefault: unknown[] = [];
    const record = (log: unknown[]) => ({ hit: (_ctx: Context, args: { id: number }) => void log.push(args.id) });
    await started(env, getRpcServer(t, new Target({ topic: named, server: 's', exchange: exchangeA }), [record(onA)]));
    await started(env, getRpcServer(t, new Target({ topic: plain, server: 's' }), [record(onDefault)]));
    await getRpcClient(t, { topic: named, exchange: exchangeB }).cast({}, 'hit', { id: 1 });
    await getRpcClient(t, { topic: named, exchange: exchangeA }).cast({}, 'hit', { id: 2 });
    await getRpcClient(t, { topic: plain, exchange: exchangeB }).cast({}, 'hit', { id: 3 });
    await getRpcClient(t, { topic: plain }).cast({}, 'hit', { id: 4 });
    await waitFor(() => onA.includes(2), { timeoutMs: env.ms(10_000), message: 'a cast through the exchange of the server reaches it' });
    await waitFor(() => onDefault.includes(4), { timeoutMs: env.ms(10_000), message: 'a cast through the default exchange reaches the server on it' });
    expect(onA, 'a server on exchange A got a cast sent through exchange B').toEqual([2]);
    expect(onDefault, 'a server on the default exchange got a cast sent through another exchange').toEqual([4]);
  },
};

/** d: a resolved cast is on the broker: cleaning up the sender right after loses nothing. */
const castResolvesOncePublished: ConformanceCase = {
  name: 'a cast resolves only once the broker has it: the sender cleaned up right after, the server still gets it',
  applies: (caps) => caps.rpc,
  async run(env) {
    const serverSide = await env.rpcTransport();
    const sender = await env.rpcTransport();
    const topic = env.name('topic');
    const got: unknown[] = [];
    await started(env, getRpcServer(serverSide, new Target({ topic, server: 's' }), [{ hit: (_ctx: Context, args: { id: number }) => void got.push(args.id) }]));
    await getRpcClient(sender, { topic }).cast({}, 'hit', { id: 1 });
    await sender.cleanup();
    await waitFor(() => got.length >= 1, { timeoutMs: env.ms(10_000), message: 'the cast resolved before the broker had it: cleaning up its sender lost it' });
    expect(got).toEqual([1]);
  },
};

/**
 * e: after stop() (before wait() cleans it up) the listener takes no new message: those sent then
 * go to the other listener of the queue at once, not to the stopped one, which would hold them
 * until its cleanup (or hand them to handlers it no longer runs). A driver declaring
 * `stopHandsOver: false` (Kafka's consumer groups) hands them over at cleanup instead: still none
 * to the stopped listener, none lost, none redelivered.
 */
const stoppedTakesNothing: ConformanceCase = {
  name: 'a stopped listener (not cleaned up yet) takes no new messages: the other listener of the queue gets them all',
  applies: () => true,
  async run(env) {
    const nt = await env.notificationTransport();
    const topic = env.name('topic');
    const first: number[] = [];
    const second: Array<{ id: number; redelivered: boolean }> = [];
    const l1 = await startListener(env, nt, [topic], [{ info: (_ctx: Context, _pub: unknown, _ev: string, payload: { id: number }) => void first.push(payload.id) }]);
    await startListener(env, nt, [topic], [
      {
        info(_ctx: Context, _pub: unknown, _ev: string, payload: { id: number }, metadata: NotificationMetadata) {
          second.push({ id: payload.id, redelivered: metadata.redelivered });
        },
      },
    ]);
    await l1.stop();
    const N = 10;
    const n = notifier(nt, topic);
    for (let id = 0; id < N; id++) await n.info({}, 'ev', { id });
    if (env.caps.stopHandsOver === false) {
      // The stopped member keeps its partitions until it leaves the group at cleanup: they wait for that.
      await l1.wait();
      markStopped(l1);
      await waitFor(() => second.length >= N, { timeoutMs: env.ms(30_000), message: `all ${N} notifications sent after the first listener's stop() reached the second once the first was cleaned up (the first handled ${first.length})` });
      expect(first, 'the stopped listener handled messages sent after its stop()').toEqual([]);
      expect(second.map((s) => s.id).sort((x, y) => x - y)).toEqual([...Array(N).keys()]);
      expect(second.filter((s) => s.redelivered).map((s) => s.id), 'messages sent after stop() came back redelivered: the stopped listener took them first').toEqual([]);
      return;
    }
    await waitFor(() => second.length >= N, { timeoutMs: env.ms(10_000), message: `all ${N} notifications sent after the first listener's stop() reached the second before the first was cleaned up (the first handled ${first.length})` });
    expect(first, 'the stopped listener handled messages sent after its stop()').toEqual([]);
    expect(second.map((s) => s.id).sort((x, y) => x - y)).toEqual([...Array(N).keys()]);
    expect(second.filter((s) => s.redelivered).map((s) => s.id), 'messages sent after stop() came back redelivered: the stopped listener took them first').toEqual([]);
    await l1.wait();
    markStopped(l1);
  },
};

/** The cases, in the order of the contract's rules they check (a to e). */
export const DELIVERY_CASES: readonly ConformanceCase[] = Object.freeze([cleanupGivesBack, requeueFlagsRedelivery, castHonoursExchange, castResolvesOncePublished, stoppedTakesNothing]);

export function deliveryTests(env: ConformanceEnv): void {
  describe('delivery contract', () => {
    for (const c of DELIVERY_CASES) if (c.applies(env.caps)) it(c.name, () => c.run(env));
  });
}
