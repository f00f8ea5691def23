// The core executor shared by the RPC server and the notification listeners: tryStart runs a
// task at once only when a slot is free; submit waits for one, in order; drain resolves only
// when every started and waiting task has finished.
import { describe, expect, it } from 'vitest';
import { BoundedExecutor } from '../../src/core/executor.js';
import { deferred } from '../../src/testing/wait.js';

/** Lets every pending promise reaction run (a macrotask turn), without waiting on a clock. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('BoundedExecutor', () => {
  it('tryStart starts the task synchronously while a slot is free and refuses when full', () => {
    const ex = new BoundedExecutor(1);
    const gate = deferred();
    let started = 0;
    expect(ex.tryStart(() => (started++, gate.promise))).toBe(true);
    expect(started).toBe(1);
    expect(ex.running).toBe(1);
    expect(ex.tryStart(() => (started++, gate.promise))).toBe(false);
    expect(started).toBe(1);
    gate.resolve();
  });

  it('submit resolves only once its task has started; drain waits for the waiting task too', async () => {
    const ex = new BoundedExecutor(1);
    const gate = deferred();
    const order: string[] = [];
    expect(ex.tryStart(() => gate.promise.then(() => void order.push('a')))).toBe(true);
    let submitted = false;
    const submitting = ex.submit(async () => void order.push('b')).then(() => (submitted = true));
    let drained = false;
    const draining = ex.drain().then(() => (drained = true));
    await settle();
    expect({ submitted, drained, order }).toEqual({ submitted: false, drained: false, order: [] });
    gate.resolve();
    await submitting;
    await draining;
    expect(order).toEqual(['a', 'b']);
    expect(ex.running).toBe(0);
  });

  it('waiting submits start in order, and tryStart does not overtake them', async () => {
    const ex = new BoundedExecutor(1);
    const gates = [deferred(), deferred(), deferred()];
    const order: number[] = [];
    const task = (i: number) => () => (order.push(i), gates[i].promise);
    expect(ex.tryStart(task(0))).toBe(true);
    const second = ex.submit(task(1));
    const third = ex.submit(task(2));
    // Runs right after the executor saw task 0 finish, before the first waiter has resumed:
    // the freed slot already belongs to that waiter.
    const overtook = gates[0].promise.then(() => ex.tryStart(() => Promise.resolve(void order.push(99))));
    gates[0].resolve();
    expect(await overtook).toBe(false);
    await second;
    expect(order).toEqual([0, 1]);
    gates[1].resolve();
    await third;
    gates[2].resolve();
    await ex.drain();
    expect(order).toEqual([0, 1, 2]);
  });

  it('a rejecting or synchronously throwing task only frees its slot', async () => {
    const ex = new BoundedExecutor(1);
    expect(ex.tryStart(() => Promise.reject(new Error('task bug')))).toBe(true);
    const thrower = () => {
      throw new Error('sync bug');
    };
    expect(ex.tryStart(thrower)).toBe(false);
    await ex.drain();
    expect(ex.running).toBe(0);
    expect(ex.tryStart(thrower)).toBe(true);
    await ex.drain();
    await ex.submit(thrower);
    await ex.drain();
    expect(ex.running).toBe(0);
    expect(ex.tryStart(() => Promise.resolve())).toBe(true);
    await ex.drain();
  });

  it('keeps at most size tasks running and drains after a burst of submits', async () => {
    const ex = new BoundedExecutor(3);
    const gate = deferred();
    let peak = 0;
    let done = 0;
    const task = async () => {
      peak = Math.max(peak, ex.running);
      await gate.promise;
      done++;
    };
    const submits = Array.from({ length: 10 }, () => ex.submit(task));
    await settle();
    expect(ex.running).toBe(3);
    gate.resolve();
    await Promise.all(submits);
    await ex.drain();
    expect({ peak, done, running: ex.running }).toEqual({ peak: 3, done: 10, running: 0 });
  });

  it('drain resolves at once when idle', async () => {
    await expect(new BoundedExecutor(2).drain()).resolves.toBeUndefined();
  });

  it('a task that finishes synchronously frees its slot at once, and one that throws does too', async () => {
    const ex = new BoundedExecutor(1);
    let ran = 0;
    expect(ex.tryStart(() => void ran++)).toBe(true);
    expect(ex.running).toBe(0);
    expect(ex.tryStart(() => { ran++; throw new Error('a task bug'); })).toBe(true);
    expect(ex.running).toBe(0);
    expect(ex.tryStart(() => void ran++)).toBe(true);
    expect(ran).toBe(3);
    let drained = false;
    await ex.drain().then(() => (drained = true));
    expect(drained).toBe(true);
  });

  it('a synchronous task hands its slot to the oldest waiting submit', async () => {
    const ex = new BoundedExecutor(1);
    const gate = deferred();
    const order: string[] = [];
    expect(ex.tryStart(() => gate.promise.then(() => void order.push('a')))).toBe(true);
    const first = ex.submit(() => void order.push('b'));
    const second = ex.submit(() => void order.push('c'));
    gate.resolve();
    await Promise.all([first, second]);
    expect(order).toEqual(['a', 'b', 'c']);
    expect(ex.running).toBe(0);
  });
});
