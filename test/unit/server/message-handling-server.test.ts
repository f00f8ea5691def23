// The one server lifecycle (src/server) on its own, over a hand-driven fake listener: the state
// table, close() and its deadline, drain, executor back-pressure and error routing.
import { describe, expect, it } from 'vitest';
import { ConnectionError, InvalidState, InvalidTarget, MessagingTimeout, ServerListenError } from '../../../src/core/errors.js';
import { GuardedEventEmitter } from '../../../src/core/events.js';
import { createMemoryLogger, type MemoryLogger } from '../../../src/core/logger.js';
import type { Closeable } from '../../../src/core/lifecycle.js';
import type { Listener, ListenerCallback } from '../../../src/contract/listener.js';
import type { ReceivedMessage } from '../../../src/contract/incoming-message.js';
import { MessageHandlingServer, type ServerShape } from '../../../src/server/message-handling-server.js';
import { refusal, TRANSITIONS, type ServerState } from '../../../src/server/transitions.js';
import { deferred, waitFor, type Deferred } from '../../../src/testing/wait.js';

type Msg = ReceivedMessage & { n: number };
const msg = (n: number): Msg => ({ n }) as unknown as Msg;

/** A driver listener the test drives: deliver() is the driver calling back; stop() can be held. */
class FakeListener implements Listener<Msg> {
  callback?: ListenerCallback<Msg>;
  stopGate?: Deferred<void>;
  log: string[] = [];
  start(callback: ListenerCallback<Msg>): void {
    this.callback = callback;
    this.log.push('start');
  }
  async stop(): Promise<void> {
    this.log.push('stop');
    await this.stopGate?.promise;
  }
  async cleanup(): Promise<void> {
    this.log.push('cleanup');
  }
  deliver(...ns: number[]): Promise<void> | void {
    return this.callback!(ns.map(msg));
  }
}

interface Rig {
  server: MessageHandlingServer<Msg>;
  listener: FakeListener;
  open: Set<Closeable>;
  events: string[];
  logger: MemoryLogger;
  handled: Array<number | number[]>;
  /** Handlers wait for this gate when it is set. */
  gate?: Deferred<void>;
}

function rig(overrides: Partial<ServerShape<Msg>> & { batch?: boolean; listen?: () => Promise<Listener<Msg>> } = {}): Rig {
  const listener = new FakeListener();
  const open = new Set<Closeable>();
  const logger = createMemoryLogger();
  const emitter = new GuardedEventEmitter<{ started: []; stopped: [] }>(logger);
  const r = { listener, open, events: [] as string[], logger, handled: [] as Array<number | number[]> } as Rig;
  emitter.on('started', () => r.events.push('started'));
  emitter.on('stopped', () => r.events.push('stopped'));
  const run = (work: number | number[]): Promise<void> | void => {
    r.handled.push(work);
    if (r.gate) return r.gate.promise;
  };
  const base = {
    listen: async () => listener,
    executorSize: 1,
    registry: { track: (p: Closeable) => void open.add(p), untrack: (p: Closeable) => void open.delete(p) },
    events: emitter,
    logger,
    subject: 'Test server',
    unit: 'job',
    label: 'test server',
  };
  const shape = overrides.batch
    ? ({ ...base, ...overrides, batch: true, dispatch: (ms: Msg[]) => run(ms.map((m) => m.n)) } as ServerShape<Msg>)
    : ({ ...base, dispatch: (m: Msg) => run(m.n), ...overrides } as ServerShape<Msg>);
  r.server = new MessageHandlingServer<Msg>(shape);
  return r;
}

/** Lets every pending promise reaction run, without a clock. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('MessageHandlingServer states', () => {
  it('walks idle → starting → running → stopping → stopped → waiting → idle, emitting started and stopped', async () => {
    const r = rig();
    const { server, listener, open, events } = r;
    const seen: ServerState[] = [server.state];
    const starting = server.start();
    seen.push(server.state);
    expect(open.has(server)).toBe(true);
    await starting;
    seen.push(server.state);
    // A handler held until the end keeps wait() in `waiting`.
    const handler = (r.gate = deferred());
    listener.deliver(1);
    listener.stopGate = deferred();
    const stopping = server.stop();
    seen.push(server.state);
    listener.stopGate.resolve();
    await stopping;
    seen.push(server.state);
    const waiting = server.wait();
    await settle();
    seen.push(server.state);
    handler.resolve();
    await waiting;
    seen.push(server.state);
    expect(seen).toEqual(['idle', 'starting', 'running', 'stopping', 'stopped', 'waiting', 'idle']);
    expect(events).toEqual(['started', 'stopped']);
    expect(listener.log).toEqual(['start', 'stop', 'cleanup']);
    expect(open.size).toBe(0);
  });

  it('follows TRANSITIONS in every state: run, the same promise, or InvalidState with the table words', async () => {
    const r = rig();
    const { server, listener } = r;
    const gate = deferred();
    let releaseListen!: () => void;
    const listening = new Promise<void>((resolve) => (releaseListen = resolve));
    const slow = rig({ listen: async () => (await listening, r.listener) });
    // Drive one server into each state and ask every step there.
    const check = async (s: MessageHandlingServer<Msg>, state: ServerState, promises: { start?: Promise<void>; stop?: Promise<void>; wait?: Promise<void> }) => {
      expect(s.state).toBe(state);
      for (const step of ['start', 'stop', 'wait'] as const) {
        const rule = TRANSITIONS[step][state];
        if (rule === 'run') continue; // taking the step would leave this state
        const got = s[step]();
        if (rule === 'same') expect(got).toBe(promises[step]);
        else await expect(got).rejects.toThrow(refusal(step, state).message);
      }
    };
    await check(server, 'idle', {});
    const starting = slow.server.start();
    await check(slow.server, 'starting', { start: starting });
    releaseListen();
    await starting;
    await check(slow.server, 'running', { start: starting });
    const started = server.start();
    await started;
    r.gate = gate;
    void listener.deliver(1);
    listener.stopGate = deferred();
    const stopping = server.stop();
    await check(server, 'stopping', { stop: stopping });
    listener.stopGate.resolve();
    await stopping;
    await check(server, 'stopped', { stop: stopping });
    const waiting = server.wait();
    await settle();
    await check(server, 'waiting', { stop: stopping, wait: waiting });
    gate.resolve();
    await waiting;
    // A finished cycle: stop() and wait() answer with that cycle's promises; start() begins anew.
    expect(server.state).toBe('idle');
    expect(server.stop()).toBe(stopping);
    expect(server.wait()).toBe(waiting);
    await slow.server.close();
  });

  it('refuses with the same words for every server: stop() before start(), wait() before stop(), start() before wait()', () => {
    expect(refusal('stop', 'idle')).toBeInstanceOf(InvalidState);
    expect(refusal('stop', 'idle').message).toBe('stop() called while idle; call start() first');
    expect(refusal('wait', 'running').message).toBe('wait() called while running; call stop() first');
    expect(refusal('start', 'stopped').message).toBe('start() called while stopped; call wait() after stop() before starting again');
  });

  it('a failed start leaves it idle, untracked and startable; driver failures are ServerListenError, misuse is itself', async () => {
    let fail: unknown = new ConnectionError('broker went away');
    const r = rig({ listen: async () => (fail ? Promise.reject(fail) : r.listener) });
    const err = await r.server.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerListenError);
    expect((err as Error).message).toBe('Test server could not subscribe: broker went away');
    expect((err as Error).cause).toBeInstanceOf(ConnectionError);
    expect(r.server.state).toBe('idle');
    expect(r.open.size).toBe(0);
    fail = new InvalidTarget('no topic');
    await expect(r.server.start()).rejects.toBeInstanceOf(InvalidTarget);
    fail = undefined;
    await r.server.start();
    expect(r.server.state).toBe('running');
    expect(r.events).toEqual(['started']);
    await r.server.close();
  });

  it('a stop() during a start that fails resolves, and wait() ends the cycle', async () => {
    const listen = deferred<Listener<Msg>>();
    const r = rig({ listen: () => listen.promise });
    const starting = r.server.start();
    const stopping = r.server.stop();
    listen.reject(new ConnectionError('refused'));
    await expect(starting).rejects.toBeInstanceOf(ServerListenError);
    await stopping;
    expect(r.server.state).toBe('stopped');
    await r.server.wait();
    expect(r.server.state).toBe('idle');
    expect(r.open.size).toBe(0);
  });
});

describe('MessageHandlingServer executor', () => {
  it('takes messages synchronously while slots are free, then pushes back until each has one, in order', async () => {
    const r = rig({ executorSize: 2 });
    await r.server.start();
    r.gate = deferred();
    expect(r.listener.deliver(1)).toBeUndefined();
    const first = r.gate;
    const accepted = r.listener.deliver(2, 3, 4);
    expect(accepted).toBeInstanceOf(Promise);
    expect(r.handled).toEqual([1, 2]);
    expect(r.server.inFlight).toBe(2);
    let done = false;
    void accepted!.then(() => (done = true));
    r.gate = undefined;
    first.resolve();
    await accepted;
    expect(done).toBe(true);
    expect(r.handled).toEqual([1, 2, 3, 4]);
    await r.server.close();
  });

  it('a batch server runs each delivered batch as one unit of work', async () => {
    const r = rig({ batch: true });
    await r.server.start();
    r.gate = deferred();
    expect(r.listener.deliver(1, 2)).toBeUndefined();
    const held = r.listener.deliver(3, 4);
    expect(held).toBeInstanceOf(Promise);
    expect(r.handled).toEqual([[1, 2]]);
    const gate = r.gate;
    r.gate = undefined;
    gate.resolve();
    await held;
    expect(r.handled).toEqual([[1, 2], [3, 4]]);
    await r.server.close();
  });

  it('drain() resolves only once the running and the waiting handlers have finished', async () => {
    const r = rig();
    await r.server.start();
    const gate = (r.gate = deferred());
    r.listener.deliver(1);
    void r.listener.deliver(2);
    let drained = false;
    const draining = r.server.drain().then(() => (drained = true));
    await settle();
    expect(drained).toBe(false);
    r.gate = undefined;
    gate.resolve();
    await draining;
    expect(r.handled).toEqual([1, 2]);
    expect(r.server.inFlight).toBe(0);
    expect(r.server.state).toBe('running');
    await r.server.close();
  });
});

describe('MessageHandlingServer error routing', () => {
  it('a dispatch that throws or rejects is logged, frees its slot, and the server goes on', async () => {
    const handled: number[] = [];
    const r = rig({
      dispatch: (m: Msg) => {
        handled.push(m.n);
        if (m.n === 1) throw new Error('sync bug');
        if (m.n === 2) return Promise.reject(new Error('async bug'));
      },
    });
    await r.server.start();
    r.listener.deliver(1);
    await r.listener.deliver(2);
    await waitFor(() => r.server.inFlight === 0);
    expect(r.listener.deliver(3)).toBeUndefined();
    expect(handled).toEqual([1, 2, 3]);
    await waitFor(() => r.logger.records.filter((x) => x.msg === 'message handling failed unexpectedly').length === 2);
    expect(r.server.state).toBe('running');
    await r.server.close();
  });

  it('a logger that throws while reporting a failed dispatch changes nothing (no unhandled rejection)', async () => {
    const logger = createMemoryLogger();
    logger.error = () => {
      throw new Error('logger bug');
    };
    const r = rig({ logger, dispatch: (m: Msg) => (m.n === 1 ? Promise.reject(new Error('x')) : undefined) });
    await r.server.start();
    r.listener.deliver(1);
    await waitFor(() => r.server.inFlight === 0);
    expect(r.listener.deliver(2)).toBeUndefined();
    expect(r.server.state).toBe('running');
    await r.server.close();
  });

  it('a listener cleanup that fails is logged; wait() still ends the cycle', async () => {
    const r = rig();
    r.listener.cleanup = () => Promise.reject(new ConnectionError('gone'));
    await r.server.start();
    await r.server.stop();
    await r.server.wait();
    expect(r.server.state).toBe('idle');
    expect(r.logger.records.some((x) => x.level === 'error' && x.msg === 'listener cleanup failed')).toBe(true);
  });
});

describe('MessageHandlingServer close()', () => {
  it('within the deadline: stop(), drain, release, idle', async () => {
    const r = rig();
    await r.server.start();
    const gate = (r.gate = deferred());
    r.listener.deliver(1);
    const closing = r.server.close({ deadlineMs: 30_000 });
    await waitFor(() => r.events.includes('stopped'));
    expect(r.listener.log).toEqual(['start', 'stop']);
    gate.resolve();
    await closing;
    expect(r.listener.log).toEqual(['start', 'stop', 'cleanup']);
    expect(r.server.state).toBe('idle');
    expect(r.open.size).toBe(0);
  });

  it('past the deadline: releases the listener, untracks, rejects with MessagingTimeout; wait() ends later', async () => {
    const r = rig();
    await r.server.start();
    const gate = (r.gate = deferred());
    r.listener.deliver(1);
    const first = r.server.close({ deadlineMs: 10 });
    expect(r.server.close()).toBe(first);
    const err = await first.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MessagingTimeout);
    expect((err as Error).message).toBe('Test server did not drain within 10 ms: 1 job(s) still running; its subscription was released');
    expect(r.listener.log).toEqual(['start', 'stop', 'cleanup']);
    expect(r.open.size).toBe(0);
    expect(r.server.state).toBe('waiting');
    gate.resolve();
    await r.server.wait();
    expect(r.server.state).toBe('idle');
  });

  it('resolves at once on an idle server and rejects a bad deadline with InvalidArgument', async () => {
    const r = rig();
    await r.server.close();
    await expect(r.server.close({ deadlineMs: -1 })).rejects.toThrow(/deadlineMs/);
    expect(r.listener.log).toEqual([]);
  });
});
