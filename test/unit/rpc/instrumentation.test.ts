// traceRpc: one call site per traced operation; the trace context is built only while a tracer
// listens, and the traced method runs with its receiver and arguments either way.
import diagnostics from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import { RPC_CHANNELS, traceRpc, type RpcTraceContext } from '../../../src/rpc/instrumentation.js';

class Sender {
  contexts = 0;
  constructor(readonly name: string) {}
  send(a: number, b: string): Promise<string> {
    return Promise.resolve(`${this.name}:${a}:${b}`);
  }
  context(a: number, b: string): RpcTraceContext {
    this.contexts++;
    return { kind: 'cast', method: `${this.name}.${b}`, topic: String(a) };
  }
}

describe('traceRpc', () => {
  it('without a tracer runs the method on its receiver and never builds the context', async () => {
    const s = new Sender('s1');
    await expect(traceRpc('cast', s, s.send, 7, 'x', s.context)).resolves.toBe('s1:7:x');
    expect(s.contexts).toBe(0);
  });

  it('with a tracer builds the context once and traces the method around it', async () => {
    const s = new Sender('s2');
    const starts: unknown[] = [];
    const results: unknown[] = [];
    const errors: unknown[] = [];
    const handlers = {
      start: (ctx: unknown) => starts.push({ ...(ctx as object) }),
      end: () => {},
      asyncStart: () => {},
      asyncEnd: (ctx: unknown) => 'result' in (ctx as object) && results.push((ctx as { result: unknown }).result),
      error: (ctx: unknown) => errors.push((ctx as { error: unknown }).error),
    };
    const failure = new Error('send failed');
    const channel = diagnostics.tracingChannel(RPC_CHANNELS.cast);
    channel.subscribe(handlers);
    try {
      await expect(traceRpc('cast', s, s.send, 7, 'x', s.context)).resolves.toBe('s2:7:x');
      await expect(traceRpc('cast', s, () => Promise.reject(failure), 1, 'y', s.context)).rejects.toBe(failure);
    } finally {
      channel.unsubscribe(handlers);
    }
    expect(s.contexts).toBe(2);
    expect(starts).toEqual([
      { kind: 'cast', method: 's2.x', topic: '7' },
      { kind: 'cast', method: 's2.y', topic: '1' },
    ]);
    expect(results).toEqual(['s2:7:x']);
    expect(errors).toEqual([failure]);
  });
});
