import { afterEach, describe, expect, expectTypeOf, it, vi } from 'vitest';
import * as tidings from '../../../src/index.js';
import { AbortError, BulkheadFullError, CircuitOpenError, InvalidArgument, MessagingTimeout, RemoteError } from '../../../src/core/errors.js';
import { rpcRetryDelay, resolveRpcRetryPolicy } from '../../../src/core/retry.js';
import { getRpcClient, waitForServers, type RpcClient } from '../../../src/rpc/client.js';
import type { RpcMeta } from '../../../src/rpc/endpoint.js';
import type { RpcClientMiddleware } from '../../../src/middleware/middleware.js';
import type { Transport } from '../../../src/transport.js';
import { deferred, waitFor } from '../../../src/testing/wait.js';
import { createHarness, type Harness } from './harness.js';

let h: Harness;
const releases: Array<() => void> = [];
afterEach(async () => {
  for (const release of releases.splice(0)) release();
  await h?.cleanup();
});

/** An endpoint whose `get` hangs (past any client timeout) on the calls listed in `hangOn`, 1-based; every run is recorded. */
function flaky(hangOn: number[] = []) {
  const runs: Array<{ n: number; messageId: string | undefined }> = [];
  const gate = deferred();
  releases.push(() => gate.resolve());
  return {
    runs,
    endpoint: {
      async get(_ctx: unknown, args: { id: number }, meta: RpcMeta) {
        const n = runs.length + 1;
        runs.push({ n, messageId: meta.messageId });
        if (hangOn.includes(n)) await gate.promise;
        return { id: args.id, run: n };
      },
      async boom() {
        runs.push({ n: runs.length + 1, messageId: undefined });
        throw new Error('out of stock');
      },
    },
  };
}

const FAST = { delayMs: 10, jitter: 0 };

describe('retry policy', () => {
  it('is off by default: a timeout is not retried and the client builds nothing for it', async () => {
    h = createHarness();
    const t = await h.transport();
    const f = flaky([1]);
    await h.server([f.endpoint]);
    const client = getRpcClient(t, { topic: h.topic }, { timeout: 300 });
    await expect(client.call({}, 'get', { id: 1 })).rejects.toBeInstanceOf(MessagingTimeout);
    expect(f.runs).toHaveLength(1);
    expect((client as unknown as { resilience?: unknown }).resilience).toBeUndefined();
    expect(client.prepare({ timeout: 500 }) as unknown as { resilience?: unknown }).toMatchObject({ resilience: undefined });
  });

  it('retries an idempotent call after a timeout as a NEW request, so a server that ran the first one runs the retry too', async () => {
    h = createHarness();
    const t = await h.transport();
    const f = flaky([1]);
    await h.server([f.endpoint]);
    const client = getRpcClient(t, { topic: h.topic }, { timeout: 300, retryPolicy: { ...FAST, idempotentMethods: ['get'] } });
    const retries: unknown[] = [];
    client.events.on('retry', (info) => retries.push(info));
    // The first request arrived and ran, but its reply never came (the handler hangs): had the
    // retry kept its `_unique_id`, the server would drop it as a duplicate and it would time out too.
    await expect(client.call({}, 'get', { id: 7 })).resolves.toEqual({ id: 7, run: 2 });
    expect(f.runs).toHaveLength(2);
    expect(f.runs[0].messageId).toBeDefined();
    expect(f.runs[1].messageId).not.toBe(f.runs[0].messageId);
    expect(retries).toEqual([{ destination: h.topic, method: 'get', attempt: 2, delayMs: 10, error: expect.any(MessagingTimeout) }]);
    expect(t.resilienceStats.snapshot()).toEqual([{ destination: h.topic, retries: 1, circuitRejections: 0, bulkheadRejections: 0 }]);
  });

  it('retries a call whose first request never reached a server; that request expires unrun', async () => {
    h = createHarness();
    const t = await h.transport();
    const client = getRpcClient(t, { topic: h.topic }, { timeout: 300, retryPolicy: { attempts: 10, delayMs: 50, jitter: 0 } });
    const f = flaky();
    client.events.once('retry', () => void h.server([f.endpoint]));
    await expect(client.call({}, 'get', { id: 1 }, { idempotent: true })).resolves.toEqual({ id: 1, run: 1 });
    expect(f.runs).toHaveLength(1);
  });

  it('never retries a call not declared idempotent, nor an error the server replied with', async () => {
    h = createHarness();
    const t = await h.transport();
    const f = flaky([1]);
    await h.server([f.endpoint]);
    const client = getRpcClient(t, { topic: h.topic }, { timeout: 300, retryPolicy: { ...FAST, attempts: 5, idempotentMethods: ['boom'], retryOn: () => true } });
    await expect(client.call({}, 'get', { id: 1 })).rejects.toBeInstanceOf(MessagingTimeout);
    expect(f.runs).toHaveLength(1);
    const err = await client.call({}, 'boom', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/out of stock/);
    expect(f.runs).toHaveLength(2);
    await expect(client.call({}, 'boom', {}, { retryPolicy: { attempts: 3 }, idempotent: true })).rejects.toThrow(/out of stock/);
    expect(f.runs).toHaveLength(3);
  });

  it('per call: idempotent false, retryPolicy false, a call policy; a middleware may declare the call idempotent', async () => {
    h = createHarness();
    const t = await h.transport();
    const f = flaky([1, 2, 3, 5]);
    await h.server([f.endpoint]);
    const client = getRpcClient(t, { topic: h.topic }, { timeout: 250, retryPolicy: { ...FAST, idempotentMethods: ['get'] } });
    await expect(client.call({}, 'get', { id: 1 }, { idempotent: false })).rejects.toBeInstanceOf(MessagingTimeout); // run 1
    await expect(client.call({}, 'get', { id: 1 }, { retryPolicy: false })).rejects.toBeInstanceOf(MessagingTimeout); // run 2
    // A call's own policy still needs the call declared idempotent.
    await expect(client.call({}, 'get', { id: 1 }, { retryPolicy: { ...FAST, attempts: 2 }, idempotent: true })).resolves.toEqual({ id: 1, run: 4 }); // runs 3, 4
    const declares: RpcClientMiddleware = {
      before(inv) {
        if (inv.method === 'get') inv.idempotent = true;
      },
    };
    const viaMiddleware = getRpcClient(t, { topic: h.topic }, { timeout: 250, retryPolicy: FAST, middleware: [declares] });
    await expect(viaMiddleware.call({}, 'get', { id: 2 })).resolves.toEqual({ id: 2, run: 6 }); // runs 5, 6
  });

  it('gives up after `attempts` with the last error as it is, and stops at once when aborted', async () => {
    h = createHarness();
    const t = await h.transport();
    const client = getRpcClient(t, { topic: h.topic }, { timeout: 100, retryPolicy: { ...FAST, attempts: 3, idempotentMethods: ['get'] } });
    const seen: number[] = [];
    client.events.on('retry', (i) => seen.push(i.attempt));
    await expect(client.call({}, 'get', {})).rejects.toBeInstanceOf(MessagingTimeout);
    expect(seen).toEqual([2, 3]);
    const ac = new AbortController();
    const slow = client.prepare({ retryPolicy: { delayMs: 60_000, jitter: 0, idempotentMethods: ['get'] } });
    slow.events.once('retry', () => ac.abort());
    await expect(slow.call({}, 'get', {}, { signal: ac.signal })).rejects.toBeInstanceOf(AbortError);
  });

  it('backs off exponentially up to maxDelayMs, with jitter taking up to its share off', () => {
    const p = resolveRpcRetryPolicy('retryPolicy', { delayMs: 100, backoffFactor: 2, maxDelayMs: 300, jitter: 0.5 });
    expect([1, 2, 3, 4].map((n) => rpcRetryDelay(n, p, () => 0))).toEqual([100, 200, 300, 300]);
    expect(rpcRetryDelay(2, p, () => 1)).toBe(100);
    expect(rpcRetryDelay(2, p, () => 0.5)).toBe(150);
  });
});

describe('circuit breaker', () => {
  it('opens after failures, refuses at once without sending, probes once half-open and closes on an answer', async () => {
    h = createHarness();
    const t = await h.transport();
    const client = getRpcClient(t, { topic: h.topic }, { timeout: 150, circuitBreaker: { maxFailures: 2, halfOpenAfterMs: 300 } });
    const states: string[] = [];
    client.events.on('circuitOpened', (i) => states.push(`open ${i.failures}`));
    client.events.on('circuitHalfOpened', () => states.push('half-open'));
    client.events.on('circuitClosed', () => states.push('closed'));
    expect(client.circuitState).toBe('closed');
    await expect(client.call({}, 'get', {})).rejects.toBeInstanceOf(MessagingTimeout);
    await expect(client.call({}, 'get', {})).rejects.toBeInstanceOf(MessagingTimeout);
    expect(client.circuitState).toBe('open');
    const send = vi.spyOn(t.driver, 'send');
    const err = await client.call({}, 'get', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CircuitOpenError);
    expect(err).toMatchObject({ code: 'CIRCUIT_OPEN', destination: h.topic, retriable: true });
    expect((err as CircuitOpenError).retryAfterMs).toBeGreaterThan(0);
    expect(send).not.toHaveBeenCalled();
    // A prepare()d client shares the breaker.
    await expect(client.prepare({ timeout: 1000 }).call({}, 'get', {})).rejects.toBeInstanceOf(CircuitOpenError);
    const f = flaky();
    await h.server([f.endpoint]);
    await waitFor(() => client.circuitState === 'half-open', { timeoutMs: 5000 });
    await expect(client.call({}, 'get', { id: 3 })).resolves.toEqual({ id: 3, run: 1 });
    expect(client.circuitState).toBe('closed');
    expect(states).toEqual(['open 2', 'half-open', 'closed']);
    expect(t.resilienceStats.snapshot()[0]).toMatchObject({ circuitRejections: 2 });
    expect(t.resilienceStats.circuitStates()).toEqual([{ destination: h.topic, state: 'closed' }]);
  });

  it('lets one probe through while half-open, re-opens when it fails, and never counts errors the server replied with', async () => {
    h = createHarness();
    const t = await h.transport();
    const f = flaky([1, 2]);
    await h.server([f.endpoint]);
    const client = getRpcClient(t, { topic: h.topic }, { timeout: 200, circuitBreaker: { threshold: 0.5, minRequests: 2, halfOpenAfterMs: 200 } });
    // Remote errors are answers: the circuit stays closed.
    for (let i = 0; i < 4; i++) await expect(client.call({}, 'boom', {})).rejects.toThrow(/out of stock/);
    expect(client.circuitState).toBe('closed');
    const c2 = getRpcClient(t, { topic: h.topic }, { timeout: 200, circuitBreaker: { minRequests: 1, halfOpenAfterMs: 200 } });
    // Runs 5 and 6 hang (flaky counts every run, boom included): make them the first two `get`s.
    const g = flaky([1, 2]);
    await h.server([g.endpoint], { server: 'other' });
    const c3 = c2.prepare({ server: 'other' });
    await expect(c3.call({}, 'get', {})).rejects.toBeInstanceOf(MessagingTimeout);
    expect(c3.circuitState).toBe('open');
    expect(c2.circuitState).toBe('closed'); // another target, another breaker
    await waitFor(() => c3.circuitState === 'half-open', { timeoutMs: 5000 });
    const probe = c3.call({}, 'get', {});
    await expect(c3.call({}, 'get', {})).rejects.toBeInstanceOf(CircuitOpenError);
    await expect(probe).rejects.toBeInstanceOf(MessagingTimeout);
    expect(c3.circuitState).toBe('open');
    await waitFor(() => c3.circuitState === 'half-open', { timeoutMs: 5000 });
    await expect(c3.call({}, 'get', { id: 9 })).resolves.toEqual({ id: 9, run: 3 });
    expect(c3.circuitState).toBe('closed');
  });

  it('with a retry policy: an open circuit ends the retries at once with CircuitOpenError', async () => {
    h = createHarness();
    const t = await h.transport();
    const client = getRpcClient(t, { topic: h.topic }, { timeout: 100, retryPolicy: { ...FAST, attempts: 10, idempotentMethods: ['get'] }, circuitBreaker: { maxFailures: 2, halfOpenAfterMs: 60_000 } });
    const retries: number[] = [];
    client.events.on('retry', (i) => retries.push(i.attempt));
    await expect(client.call({}, 'get', {})).rejects.toBeInstanceOf(CircuitOpenError);
    expect(retries).toEqual([2, 3]);
  });
});

describe('bulkhead', () => {
  it('keeps at most maxConcurrent calls in flight, queues maxQueue more in order, refuses the next at once', async () => {
    h = createHarness();
    const t = await h.transport();
    const gates = [deferred(), deferred(), deferred()];
    releases.push(() => gates.forEach((g) => g.resolve()));
    let running = 0;
    let most = 0;
    await h.server(
      [
        {
          async hold(_ctx: unknown, args: { i: number }) {
            most = Math.max(most, ++running);
            await gates[args.i].promise;
            running--;
            return args.i;
          },
        },
      ],
      { executorSize: 10 },
    );
    const client = getRpcClient(t, { topic: h.topic }, { timeout: 10_000, bulkhead: { maxConcurrent: 1, maxQueue: 1 } });
    const full: unknown[] = [];
    client.events.on('bulkheadFull', (i) => full.push(i));
    const first = client.call({}, 'hold', { i: 0 });
    const second = client.call({}, 'hold', { i: 1 });
    await waitFor(() => running === 1 && client.bulkhead!.queued === 1);
    const send = vi.spyOn(t.driver, 'send');
    const err = await client.prepare({ timeout: 5000 }).call({}, 'hold', { i: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BulkheadFullError);
    expect(err).toMatchObject({ code: 'BULKHEAD_FULL', maxConcurrent: 1, maxQueue: 1 });
    expect(send).not.toHaveBeenCalled();
    expect(full).toEqual([{ destination: h.topic, method: 'hold', inFlight: 1, queued: 1 }]);
    gates[0].resolve();
    gates[1].resolve();
    await expect(Promise.all([first, second])).resolves.toEqual([0, 1]);
    expect(most).toBe(1);
    expect(client.bulkhead).toMatchObject({ inFlight: 0, queued: 0 });
  });

  it('a queued call aborted by its caller leaves the queue without taking a slot', async () => {
    h = createHarness();
    const t = await h.transport();
    const gate = deferred();
    releases.push(() => gate.resolve());
    await h.server([{ hold: () => gate.promise.then(() => 'done') }]);
    const client = getRpcClient(t, { topic: h.topic }, { timeout: 10_000, bulkhead: { maxConcurrent: 1, maxQueue: 5 } });
    const first = client.call({}, 'hold', {});
    const ac = new AbortController();
    const queued = client.call({}, 'hold', {}, { signal: ac.signal });
    await waitFor(() => client.bulkhead!.queued === 1);
    ac.abort();
    await expect(queued).rejects.toBeInstanceOf(AbortError);
    expect(client.bulkhead).toMatchObject({ inFlight: 1, queued: 0 });
    gate.resolve();
    await expect(first).resolves.toBe('done');
    expect(client.bulkhead).toMatchObject({ inFlight: 0, queued: 0 });
  });
});

describe('fallback through middleware (the README recipe)', () => {
  it('answers from a cache when the circuit is open or the call timed out; other errors go through', async () => {
    h = createHarness();
    const t = await h.transport();
    const f = flaky();
    await h.server([f.endpoint]);
    const lastGood = new Map<string, unknown>();
    const fallback: RpcClientMiddleware = {
      name: 'fallback',
      after(inv, result) {
        lastGood.set(`${inv.method} ${JSON.stringify(inv.args)}`, result);
      },
      onError(inv, error) {
        if (!(error instanceof CircuitOpenError) && !(error instanceof MessagingTimeout)) return undefined;
        return lastGood.get(`${inv.method} ${JSON.stringify(inv.args)}`);
      },
    };
    const client = getRpcClient(t, { topic: h.topic }, { timeout: 200, middleware: [fallback], circuitBreaker: { maxFailures: 1, halfOpenAfterMs: 60_000 } });
    await expect(client.call({}, 'get', { id: 1 })).resolves.toEqual({ id: 1, run: 1 });
    await h.cleanup(); // the server goes away
    const t2 = await h.transport();
    const again = getRpcClient(t2, { topic: h.topic }, { timeout: 200, middleware: [fallback], circuitBreaker: { maxFailures: 1, halfOpenAfterMs: 60_000 } });
    await expect(again.call({}, 'get', { id: 1 })).resolves.toEqual({ id: 1, run: 1 }); // timed out: cached
    expect(again.circuitState).toBe('open');
    await expect(again.call({}, 'get', { id: 1 })).resolves.toEqual({ id: 1, run: 1 }); // refused: cached
    await expect(again.call({}, 'get', { id: 2 })).rejects.toBeInstanceOf(CircuitOpenError); // nothing cached
  });
});

describe('waiting for and watching servers', () => {
  it('waitForServers resolves once `count` servers answer; MessagingTimeout saying how many did otherwise', async () => {
    h = createHarness();
    const t = await h.transport();
    const waiting = waitForServers(t, { topic: h.topic }, { count: 2, timeoutMs: 10_000, windowMs: 100, intervalMs: 20 });
    await h.server([{}], { server: 'a' });
    await h.server([{}], { server: 'b' });
    expect((await waiting).map((s) => s.server)).toEqual(['a', 'b']);
    const err = await getRpcClient(t, { topic: h.topic }).waitForServers({ count: 3, timeoutMs: 400, windowMs: 100, intervalMs: 20 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MessagingTimeout);
    expect((err as Error).message).toMatch(/3 servers of topic .*; 2 answered/);
    await expect(getRpcClient(t, { topic: h.topic, server: 'b' }).waitForServers({ timeoutMs: 5000, windowMs: 100 })).resolves.toEqual([expect.objectContaining({ server: 'b' })]);
  });

  it('watchServers reports servers joining and leaving', async () => {
    h = createHarness();
    const t = await h.transport();
    const a = await h.server([{}], { server: 'a' });
    const watch = getRpcClient(t, { topic: h.topic }).watchServers({ intervalMs: 20, windowMs: 100, missedRounds: 2 });
    const log: string[] = [];
    watch.events.on('joined', (s) => log.push(`+${s.server}`));
    watch.events.on('left', (s) => log.push(`-${s.server}`));
    await watch.ready;
    await waitFor(() => log.includes('+a'));
    await h.server([{}], { server: 'b' });
    await waitFor(() => log.includes('+b'));
    expect(watch.servers.map((s) => s.server)).toEqual(['a', 'b']);
    await a.stop();
    await a.wait();
    await waitFor(() => log.includes('-a'), { timeoutMs: 5000 });
    expect(watch.servers.map((s) => s.server)).toEqual(['b']);
    await watch.stop();
    expect(log).toEqual(['+a', '+b', '-a']);
  });
});

describe('bad options: InvalidArgument naming the field, nothing sent', () => {
  it('checks retryPolicy, circuitBreaker, bulkhead and the call options', async () => {
    h = createHarness();
    const t: Transport = await h.transport();
    const make = (o: object) => () => getRpcClient(t, { topic: h.topic }, o as never);
    const cases: Array<[() => unknown, string]> = [
      [make({ retryPolicy: { attempts: 0 } }), 'retryPolicy.attempts'],
      [make({ retryPolicy: { jitter: 2 } }), 'retryPolicy.jitter'],
      [make({ retryPolicy: { idempotentMethods: 'get' } }), 'retryPolicy.idempotentMethods'],
      [make({ retryPolicy: { tries: 3 } }), 'retryPolicy.tries'],
      [make({ circuitBreaker: { threshold: 0 } }), 'circuitBreaker.threshold'],
      [make({ circuitBreaker: { windowMs: -1 } }), 'circuitBreaker.windowMs'],
      [make({ circuitBreaker: 'yes' }), 'circuitBreaker'],
      [make({ bulkhead: { maxConcurrent: 0 } }), 'bulkhead.maxConcurrent'],
      [make({ bulkhead: { maxQueue: -1 } }), 'bulkhead.maxQueue'],
    ];
    for (const [fn, field] of cases) {
      expect(fn).toThrow(InvalidArgument);
      try {
        fn();
      } catch (err) {
        expect((err as InvalidArgument).field).toBe(field);
      }
    }
    const client: RpcClient = getRpcClient(t, { topic: h.topic });
    await expect(client.call({}, 'm', {}, { idempotent: 'yes' as never })).rejects.toMatchObject({ field: 'idempotent' });
    await expect(client.call({}, 'm', {}, { retryPolicy: { attempts: -1 } })).rejects.toMatchObject({ field: 'retryPolicy.attempts' });
    await expect(client.waitForServers({ count: 0 })).rejects.toMatchObject({ field: 'count' });
    expect(() => client.watchServers({ intervalMs: 0 })).toThrow(InvalidArgument);
  });
});

describe('the package entry', () => {
  it('exports the errors, defaults, helpers and types', async () => {
    expect(tidings.CircuitOpenError).toBe(CircuitOpenError);
    expect(new tidings.BulkheadFullError('m', 1, 2)).toBeInstanceOf(tidings.MessagingError);
    expect(tidings.RPC_RETRY_DEFAULTS).toEqual({ attempts: 3, delayMs: 100, backoffFactor: 2, maxDelayMs: 5000, jitter: 0.5 });
    expect(tidings.RPC_CIRCUIT_BREAKER_DEFAULTS).toMatchObject({ threshold: 0.5, minRequests: 20, windowMs: 60_000, halfOpenAfterMs: 10_000 });
    expect(tidings.RPC_BULKHEAD_DEFAULTS).toEqual({ maxConcurrent: 10, maxQueue: 100 });
    expect(tidings.isUnansweredCall(new MessagingTimeout('t'))).toBe(true);
    expect(tidings.isUnansweredCall(new tidings.HandlerTimeout('t'))).toBe(false);
    expect(tidings.isUnansweredCall(new RemoteError('ValueError', 'v'))).toBe(false);
    expect(tidings.waitForServers).toBe(waitForServers);
    h = createHarness();
    const client = tidings.getRpcClient(await h.transport(), { topic: h.topic });
    expectTypeOf(client.events.on).toBeFunction();
    client.events.on('retry', (info) => expectTypeOf(info).toEqualTypeOf<tidings.RpcRetryInfo>());
    client.events.on('circuitOpened', (t) => expectTypeOf(t.state).toEqualTypeOf<tidings.CircuitState>());
    expectTypeOf<tidings.RpcClientOptions['retryPolicy']>().toEqualTypeOf<tidings.RpcRetryPolicy | undefined>();
    expectTypeOf<tidings.RpcClientOptions['circuitBreaker']>().toEqualTypeOf<boolean | tidings.RpcCircuitBreakerOptions | undefined>();
    expectTypeOf<tidings.RpcClientOptions['bulkhead']>().toEqualTypeOf<boolean | tidings.RpcBulkheadOptions | undefined>();
    expectTypeOf(client.watchServers).returns.toEqualTypeOf<tidings.ServerWatch>();
    expectTypeOf(client.waitForServers).parameter(0).toEqualTypeOf<tidings.RpcWaitForServersOptions | undefined>();
  });
});
