// The shared reply registry: oslo's reply rules, deadlines, call-monitor windows, late replies.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AbortError, MessageDeliveryFailure, MessagingTimeout, RemoteError } from '../../../src/core/errors.js';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { PendingReplies } from '../../../src/contract/pending-replies.js';
import { defaultRemoteErrorRegistry, serializeFailure } from '../../../src/contract/remote-error.js';

const registry = () => {
  const logger = createMemoryLogger();
  return { logger, replies: new PendingReplies([], defaultRemoteErrorRegistry, logger) };
};

describe('PendingReplies', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('resolves a call with the result of its final reply and forgets it', async () => {
    const { replies } = registry();
    const call = replies.register('m1', { topic: 't' });
    expect(replies.size).toBe(1);
    replies.accept({ _msg_id: 'm1', result: { sum: 3 }, failure: null, ending: true });
    await expect(call.promise).resolves.toEqual({ sum: 3 });
    expect(call.isOver).toBe(true);
    expect(replies.size).toBe(0);
  });

  it('rejects with the rebuilt remote error of a failure reply', async () => {
    const { replies } = registry();
    const call = replies.register('m1', { topic: 't' });
    replies.accept({ _msg_id: 'm1', result: null, failure: serializeFailure(new TypeError('bad')), ending: true });
    const err = await call.promise.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).message).toContain('bad');
  });

  it.each([[''], [false], [0], [null]])('treats a falsy failure (%j) as none, as oslo does', async (failure) => {
    const { replies } = registry();
    const call = replies.register('m1', { topic: 't' });
    replies.accept({ _msg_id: 'm1', result: 7, failure, ending: true });
    await expect(call.promise).resolves.toBe(7);
  });

  it('keeps a result or failure of a non-final reply as the final value (oslo 2-message replies)', async () => {
    const { replies } = registry();
    const a = replies.register('a', { topic: 't' });
    replies.accept({ _msg_id: 'a', result: 'early', failure: null, ending: false });
    replies.accept({ _msg_id: 'a', result: null, failure: null, ending: true });
    await expect(a.promise).resolves.toBe('early');
    const b = replies.register('b', { topic: 't' });
    replies.accept({ _msg_id: 'b', result: null, failure: serializeFailure(new RemoteError('X', 'boom')), ending: false });
    replies.accept({ _msg_id: 'b', result: null, failure: null, ending: true });
    await expect(b.promise).rejects.toThrow(/boom/);
  });

  it('drops replies for unknown or finished calls with a debug log, never another call', async () => {
    const { replies, logger } = registry();
    const call = replies.register('m1', { topic: 't' });
    replies.accept({ _msg_id: 'other', result: 1, failure: null, ending: true });
    replies.accept({ result: 1, ending: true });
    replies.accept({ _msg_id: 'm1', result: 2, failure: null, ending: true });
    replies.accept({ _msg_id: 'm1', result: 3, failure: null, ending: true });
    await expect(call.promise).resolves.toBe(2);
    expect(logger.records.filter((r) => r.level === 'debug' && /reply dropped/.test(r.msg))).toHaveLength(3);
  });

  it('times out after the deadline, and a late reply is then dropped', async () => {
    const { replies } = registry();
    const call = replies.register('m1', { topic: 'calc', timeout: 100 });
    const outcome = call.promise.catch((e: unknown) => e);
    vi.advanceTimersByTime(100);
    const err = await outcome;
    expect(err).toBeInstanceOf(MessagingTimeout);
    expect((err as Error).message).toMatch(/m1.*calc.*100 ms/);
    expect(replies.size).toBe(0);
    replies.accept({ _msg_id: 'm1', result: 1, failure: null, ending: true });
  });

  it('a timeout says why the request never reached the broker, with the cause', async () => {
    const { replies } = registry();
    const call = replies.register('m1', { topic: 't', timeout: 50 });
    const cause = new MessageDeliveryFailure('connection refused');
    call.setUndelivered(cause);
    vi.advanceTimersByTime(50);
    const err = (await call.promise.catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/never reached the broker: connection refused/);
    expect(err.cause).toBe(cause);
  });

  it('a heartbeat restarts the call-monitor window; silence past it fails the call', async () => {
    const { replies } = registry();
    const call = replies.register('m1', { topic: 't', callMonitorTimeout: 100 });
    const outcome = call.promise.catch((e: unknown) => e);
    vi.advanceTimersByTime(80);
    replies.accept({ _msg_id: 'm1', result: null, failure: null, ending: false });
    vi.advanceTimersByTime(80);
    expect(call.isOver).toBe(false);
    vi.advanceTimersByTime(30);
    expect(call.isOver).toBe(true);
    expect(await outcome).toBeInstanceOf(MessagingTimeout);
  });

  it('an abort rejects with AbortError; an already aborted signal rejects at once', async () => {
    const { replies } = registry();
    const controller = new AbortController();
    const call = replies.register('m1', { topic: 't', signal: controller.signal });
    controller.abort(new Error('user'));
    await expect(call.promise).rejects.toBeInstanceOf(AbortError);
    const early = replies.register('m2', { topic: 't', signal: controller.signal });
    await expect(early.promise).rejects.toBeInstanceOf(AbortError);
    expect(replies.size).toBe(0);
  });

  it('failAll ends every waiting call; fail() after the outcome changes nothing', async () => {
    const { replies } = registry();
    const a = replies.register('a', { topic: 't', timeout: 1000 });
    const b = replies.register('b', { topic: 't' });
    replies.accept({ _msg_id: 'a', result: 1, failure: null, ending: true });
    const gone = new MessageDeliveryFailure('cleaned up');
    replies.failAll(gone);
    a.fail(new Error('late'));
    await expect(a.promise).resolves.toBe(1);
    await expect(b.promise).rejects.toBe(gone);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('acceptBody decodes a raw reply for its call, and drops a malformed one with a warning naming where it came from, not the body', async () => {
    const { replies, logger } = registry();
    const call = replies.register('m1', { topic: 't' });
    replies.acceptBody('{"broken SECRET', { queue: 'reply_1' });
    replies.acceptBody(new TextEncoder().encode(JSON.stringify({ _msg_id: 'm1', result: 7, failure: null, ending: true })), { queue: 'reply_1' });
    await expect(call.promise).resolves.toBe(7);
    const warnings = logger.records.filter((r) => r.level === 'warn');
    expect(warnings).toMatchObject([{ msg: 'Dropping a malformed reply', fields: { queue: 'reply_1', bytes: 15 } }]);
    expect(JSON.stringify(logger.records)).not.toContain('SECRET');
  });

  it('collectReplies gathers every final reply until the deadline, then resolves with them', async () => {
    const { replies } = registry();
    const call = replies.register('m1', { topic: 't', timeout: 1000, callMonitorTimeout: 10, collectReplies: true });
    replies.accept({ _msg_id: 'm1', result: 'a', failure: null, ending: true });
    replies.accept({ _msg_id: 'm1', result: null, failure: null, ending: false }); // a heartbeat: not a reply
    replies.accept({ _msg_id: 'm1', result: null, failure: serializeFailure(new TypeError('no')), ending: true });
    replies.accept({ _msg_id: 'm1', result: null, failure: null, ending: true });
    await vi.advanceTimersByTimeAsync(999);
    expect(call.isOver).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const got = (await call.promise) as Array<{ ok: boolean; result?: unknown; error?: Error }>;
    expect(got.map((r) => (r.ok ? r.result : r.error))).toEqual(['a', expect.any(TypeError), null]);
    expect(replies.size).toBe(0);
    // Replies after the window are dropped.
    replies.accept({ _msg_id: 'm1', result: 'late', failure: null, ending: true });
    expect(got).toHaveLength(3);
  });
});
