// Dispatcher logic without a broker: endpoint order, results, exceptions, filters, batch grouping.
import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '../../../src/core/errors.js';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { IncomingMessage } from '../../../src/contract/incoming-message.js';
import type { Context, DriverMessage, ReceivedNotification } from '../../../src/contract/types.js';
import {
  BatchNotificationDispatcher,
  NotificationDispatcher,
  NotificationResult,
  type HandlerFailure,
  type NotificationBatchItem,
  type NotificationMetadata,
} from '../../../src/notify/dispatcher.js';
import { NotificationFilter } from '../../../src/notify/filter.js';
import { requeueReason } from '../../../src/contract/dead-letters.js';
import { deferred } from '../../../src/testing/wait.js';

/** Our own contract class, settled in memory: enough to drive the dispatcher. */
class FakeMessage extends IncomingMessage {
  settled?: 'ack' | 'requeue';
  readonly notification: ReceivedNotification;
  constructor(ctx: Context, message: DriverMessage) {
    super(ctx, String(message.message_id));
    this.notification = message as ReceivedNotification;
  }
  async acknowledge(): Promise<void> {
    this.settled ??= 'ack';
  }
  async requeue(): Promise<void> {
    this.settled ??= 'requeue';
  }
  override unwrap(): unknown {
    return { raw: this.msgId };
  }
}

let seq = 0;
function msg(priority: string, eventType = 'compute.instance.create.end', payload: unknown = { id: ++seq }, ctx: Context = { user: 'u1' }) {
  return new FakeMessage(ctx, {
    message_id: `00000000-0000-4000-8000-${String(++seq).padStart(12, '0')}`,
    publisher_id: 'compute.host1',
    event_type: eventType,
    priority,
    payload,
    timestamp: '2024-05-01 10:00:00.123000',
  });
}

type Call = { who: string; args: unknown[] };

describe('NotificationDispatcher', () => {
  it('passes (ctx, publisherId, eventType, payload, metadata) with oslo metadata keys', async () => {
    const calls: Call[] = [];
    const d = new NotificationDispatcher([{ info: (...args: unknown[]) => void calls.push({ who: 'a', args }) }]);
    const m = msg('INFO', 'ev', { id: 7 });
    expect(await d.dispatch(m)).toBe(NotificationResult.HANDLED);
    const [ctx, publisherId, eventType, payload, metadata] = calls[0].args as [Context, string, string, unknown, NotificationMetadata];
    expect(ctx).toEqual({ user: 'u1' });
    expect(publisherId).toBe('compute.host1');
    expect(eventType).toBe('ev');
    expect(payload).toEqual({ id: 7 });
    expect(metadata).toEqual({ message_id: m.notification.message_id, timestamp: '2024-05-01 10:00:00.123000' });
    expect(JSON.parse(JSON.stringify(metadata))).toEqual({ message_id: m.notification.message_id, timestamp: '2024-05-01 10:00:00.123000' });
    expect(metadata.messageId).toBe(m.notification.message_id);
    expect(metadata.priority).toBe('info');
    expect(metadata.unwrap()).toEqual({ raw: m.msgId });
  });

  it('subscribes only to priorities some endpoint has a method for, and refuses endpoints without any', () => {
    class Billing {
      info() {}
      error() {}
      warning() {}
      other() {}
    }
    expect(new NotificationDispatcher([new Billing(), { sample() {} }]).supportedPriorities).toEqual(['info', 'error', 'sample']);
    expect(() => new NotificationDispatcher([{ warning() {} }])).toThrow(InvalidArgument);
    expect(() => new NotificationDispatcher([])).toThrow(/endpoints/);
    expect(() => new NotificationDispatcher([null as never])).toThrow(/endpoints\[0\]/);
    expect(() => new NotificationDispatcher([{ info() {}, filterRule: 'x' }])).toThrow(/filterRule/);
  });

  it('runs endpoints in order; HANDLED and undefined continue, REQUEUE stops', async () => {
    const order: string[] = [];
    const d = new NotificationDispatcher([
      { info: () => void order.push('a') },
      { info: () => (order.push('b'), NotificationResult.HANDLED) },
      { info: async () => (order.push('c'), NotificationResult.REQUEUE) },
      { info: () => void order.push('d') },
    ]);
    expect(await d.dispatch(msg('info'))).toBe(NotificationResult.REQUEUE);
    expect(order).toEqual(['a', 'b', 'c']);
  });

  it('a throwing endpoint is logged, reported and means REQUEUE; the payload is not logged', async () => {
    const logger = createMemoryLogger();
    const failures: HandlerFailure[] = [];
    const d = new NotificationDispatcher(
      [
        {
          error: () => {
            throw new Error('boom');
          },
        },
      ],
      { logger, onHandlerError: (f) => failures.push(f) },
    );
    expect(await d.dispatch(msg('ERROR', 'ev', { password: 'hunter2' }))).toBe(NotificationResult.REQUEUE);
    expect(failures).toHaveLength(1);
    expect((failures[0].error as Error).message).toBe('boom');
    expect(failures[0]).toMatchObject({ priority: 'error', eventTypes: ['ev'] });
    expect(logger.records.some((r) => r.level === 'error')).toBe(true);
    expect(JSON.stringify(logger.records.map((r) => r.fields), (_k, v) => (v instanceof Error ? v.message : v))).not.toContain('hunter2');
  });

  it('an unknown priority is warned about and counts as handled (acknowledged)', async () => {
    const logger = createMemoryLogger();
    const d = new NotificationDispatcher([{ info: () => NotificationResult.REQUEUE }], { logger });
    expect(await d.dispatch(msg('LOUD'))).toBe(NotificationResult.HANDLED);
    expect(logger.records.find((r) => r.level === 'warn')?.fields).toMatchObject({ priority: 'loud' });
  });

  it('matches a priority in any case, and acknowledges a known priority no endpoint handles without a warning', async () => {
    const logger = createMemoryLogger();
    const seen: string[] = [];
    const d = new NotificationDispatcher([{ warn: (_c: unknown, _p: unknown, _e: unknown, _b: unknown, meta: NotificationMetadata) => void seen.push(meta.priority) }], { logger });
    for (const p of ['warn', 'Warn', 'WARN']) expect(await d.dispatch(msg(p))).toBe(NotificationResult.HANDLED);
    expect(seen).toEqual(['warn', 'warn', 'warn']);
    expect(await d.dispatch(msg('ERROR'))).toBe(NotificationResult.HANDLED);
    expect(seen).toHaveLength(3);
    expect(logger.records.filter((r) => r.level === 'warn')).toEqual([]);
  });

  it('a filtered-out notification counts as handled for that endpoint', async () => {
    const seen: string[] = [];
    const d = new NotificationDispatcher([
      { filterRule: new NotificationFilter({ eventType: 'compute\\.' }), info: (_c: unknown, _p: unknown, e: string) => (seen.push(`compute:${e}`), NotificationResult.REQUEUE) },
      { filterRule: new NotificationFilter({ publisherId: '^compute', payload: { state: 'active' } }), info: (_c: unknown, _p: unknown, e: string) => void seen.push(`active:${e}`) },
    ]);
    expect(await d.dispatch(msg('info', 'network.create', { state: 'active' }))).toBe(NotificationResult.HANDLED);
    expect(await d.dispatch(msg('info', 'network.create', { state: 'error' }))).toBe(NotificationResult.HANDLED);
    expect(await d.dispatch(msg('info', 'compute.create', { state: 'active' }))).toBe(NotificationResult.REQUEUE);
    expect(seen).toEqual(['active:network.create', 'compute:compute.create']);
  });

  it('goes through the serializer for context and payload', async () => {
    const got: unknown[] = [];
    const serializer = {
      serializeEntity: (_c: unknown, e: unknown) => e,
      deserializeEntity: (ctx: { tenant: string }, e: unknown) => ({ wrapped: e, tenant: ctx.tenant }),
      serializeContext: (c: { tenant: string }) => ({ tenant_id: c.tenant }),
      deserializeContext: (c: Context) => ({ tenant: String(c.tenant_id) }),
    };
    const d = new NotificationDispatcher([{ info: (ctx: unknown, _p: unknown, _e: unknown, payload: unknown) => void got.push(ctx, payload) }], { serializer });
    await d.dispatch(msg('info', 'ev', 5, { tenant_id: 't1' }));
    expect(got).toEqual([{ tenant: 't1' }, { wrapped: 5, tenant: 't1' }]);
  });

  it('a serializer failure while decoding means REQUEUE, never a rejection', async () => {
    const serializer = {
      serializeEntity: (_c: unknown, e: unknown) => e,
      deserializeEntity: () => {
        throw new Error('bad payload');
      },
      serializeContext: (c: Context) => c,
      deserializeContext: (c: Context) => c,
    };
    const d = new NotificationDispatcher([{ info() {} }], { serializer });
    expect(await d.dispatch(msg('info'))).toBe(NotificationResult.REQUEUE);
  });

  it('decides synchronously while handlers return plain values, and goes on after one that returns a promise', async () => {
    const order: string[] = [];
    const sync = new NotificationDispatcher([{ info: () => void order.push('a') }, { info: () => (order.push('b'), NotificationResult.HANDLED) }]);
    const outcome = sync.dispatchWithReason(msg('info'));
    // No promise: the outcome is there before any microtask ran.
    expect(outcome).toEqual({ result: NotificationResult.HANDLED });
    expect(order).toEqual(['a', 'b']);

    order.length = 0;
    const later = deferred<NotificationResult>();
    const mixed = new NotificationDispatcher([
      { info: () => void order.push('a') },
      { info: () => (order.push('b'), later.promise) },
      { info: () => void order.push('c') },
      { info: () => (order.push('d'), NotificationResult.REQUEUE) },
      { info: () => void order.push('e') },
    ]);
    const pending = mixed.dispatchWithReason(msg('info'));
    expect(pending).toBeInstanceOf(Promise);
    expect(order).toEqual(['a', 'b']);
    later.resolve(NotificationResult.HANDLED);
    expect(await pending).toEqual({ result: NotificationResult.REQUEUE });
    expect(order).toEqual(['a', 'b', 'c', 'd']);
  });

  it('a thenable that rejects, or a handler that throws synchronously, is REQUEUE with its error', async () => {
    const logger = createMemoryLogger();
    const boom = new Error('sync boom');
    const thrown = new NotificationDispatcher([{ info: () => { throw boom; } }], { logger });
    expect(thrown.dispatchWithReason(msg('info'))).toEqual({ result: NotificationResult.REQUEUE, reason: boom });
    const late = new Error('late boom');
    const thenable = { then: (_ok: unknown, fail: (e: unknown) => void) => fail(late) };
    const rejected = new NotificationDispatcher([{ info: () => thenable as unknown as NotificationResult }], { logger });
    expect(await rejected.dispatchWithReason(msg('info'))).toEqual({ result: NotificationResult.REQUEUE, reason: late });
    expect(logger.records.filter((r) => r.msg === 'notification endpoint failed')).toHaveLength(2);
  });
});

describe('requeue reasons (for dead letters)', () => {
  it('a throw yields REQUEUE with the error; a returned REQUEUE with none', async () => {
    const error = new TypeError('no tax rate');
    const thrower = new NotificationDispatcher([
      {
        info: () => {
          throw error;
        },
      },
    ]);
    expect(await thrower.dispatchWithReason(msg('info'))).toEqual({ result: NotificationResult.REQUEUE, reason: error });
    const asker = new NotificationDispatcher([{ info: () => NotificationResult.REQUEUE }]);
    expect(await asker.dispatchWithReason(msg('info'))).toEqual({ result: NotificationResult.REQUEUE });
    expect(await new NotificationDispatcher([{ info: () => undefined }]).dispatchWithReason(msg('info'))).toEqual({ result: NotificationResult.HANDLED });
  });

  it('a batch maps each requeued message to the error of its group', async () => {
    const error = new Error('ledger locked');
    const d = new BatchNotificationDispatcher([
      {
        info: () => {
          throw error;
        },
        error: () => NotificationResult.REQUEUE,
        warn: () => undefined,
      },
    ]);
    const batch = [msg('info', 'a'), msg('error', 'b'), msg('warn', 'c')];
    const reasons = await d.dispatchBatchWithReasons(batch);
    expect([...reasons]).toEqual([
      [batch[0], error],
      [batch[1], undefined],
    ]);
  });

  it('requeueReason keeps the message (with a non-plain class), falls back without one, and is bounded', () => {
    expect(requeueReason(new Error('boom'), 'requeued 5 times')).toBe('boom');
    expect(requeueReason(new TypeError('bad'), 'x')).toBe('TypeError: bad');
    expect(requeueReason(undefined, 'requeued 5 times')).toBe('requeued 5 times');
    expect(requeueReason({ code: 7 }, 'x')).toBe('{"code":7}');
    expect(requeueReason('x'.repeat(5000), 'y')).toHaveLength(1000);
  });
});

describe('BatchNotificationDispatcher', () => {
  it('gives each endpoint one array per priority group and requeues a whole group on REQUEUE', async () => {
    const infos: NotificationBatchItem[][] = [];
    const errors: NotificationBatchItem[][] = [];
    const d = new BatchNotificationDispatcher([
      { info: (items: NotificationBatchItem[]) => void infos.push(items), error: (items: NotificationBatchItem[]) => (errors.push(items), NotificationResult.REQUEUE) },
    ]);
    const batch = [msg('INFO', 'a'), msg('ERROR', 'b'), msg('INFO', 'c'), msg('ERROR', 'd'), msg('WHAT', 'e')];
    const requeues = await d.dispatchBatch(batch);
    expect(infos.map((g) => g.map((i) => i.eventType))).toEqual([['a', 'c']]);
    expect(errors.map((g) => g.map((i) => i.eventType))).toEqual([['b', 'd']]);
    expect([...requeues]).toEqual([batch[1], batch[3]]);
    const item = infos[0][0];
    expect(item).toMatchObject({ ctx: { user: 'u1' }, publisherId: 'compute.host1', eventType: 'a' });
    expect(item.metadata).toEqual({ message_id: batch[0].notification.message_id, timestamp: '2024-05-01 10:00:00.123000' });
  });

  it('a throw requeues the group and skips later endpoints; filters narrow the array', async () => {
    const later: string[][] = [];
    const d = new BatchNotificationDispatcher([
      { filterRule: new NotificationFilter({ eventType: 'x' }), info: () => NotificationResult.HANDLED },
      {
        filterRule: new NotificationFilter({ eventType: 'boom' }),
        info: () => {
          throw new Error('boom');
        },
      },
      { info: (items: NotificationBatchItem[]) => void later.push(items.map((i) => i.eventType)) },
    ]);
    const ok = [msg('info', 'x1'), msg('info', 'y1')];
    expect((await d.dispatchBatch(ok)).size).toBe(0);
    expect(later).toEqual([['x1', 'y1']]);
    const bad = [msg('info', 'boom1'), msg('info', 'z')];
    expect([...(await d.dispatchBatch(bad))]).toEqual(bad);
    expect(later).toHaveLength(1);
  });
});
