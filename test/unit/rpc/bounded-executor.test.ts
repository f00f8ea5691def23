// The RPC server's executor: tryStart runs a task at once only when a slot is free; submit
// waits for one; drain resolves only when every started and waiting task has finished.
import { describe, expect, it } from 'vitest';
import { BoundedExecutor } from '../../../src/rpc/bounded-executor.js';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

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

  it('submit waits for a slot; drain waits for the waiting task too; a rejecting or throwing task frees its slot', async () => {
    const ex = new BoundedExecutor(1);
    const gate = deferred();
    const order: string[] = [];
    expect(ex.tryStart(() => gate.promise.then(() => void order.push('a')))).toBe(true);
    const submitted = ex.submit(async () => void order.push('b'));
    let drained = false;
    const draining = ex.drain().then(() => (drained = true));
    await new Promise((r) => setTimeout(r, 10));
    expect(drained).toBe(false);
    gate.resolve();
    await submitted;
    await draining;
    expect(order).toEqual(['a', 'b']);
    expect(ex.running).toBe(0);
    expect(ex.tryStart(() => Promise.reject(new Error('task bug')))).toBe(true);
    expect(
      ex.tryStart(() => {
        throw new Error('sync bug');
      }),
    ).toBe(false);
    await ex.drain();
    expect(ex.running).toBe(0);
    expect(
      ex.tryStart(() => {
        throw new Error('sync bug');
      }),
    ).toBe(true);
    await ex.drain();
    expect(ex.running).toBe(0);
  });

  it('drain resolves at once when idle', async () => {
    await expect(new BoundedExecutor(2).drain()).resolves.toBeUndefined();
  });
});
