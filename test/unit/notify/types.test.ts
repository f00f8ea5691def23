// Type-level checks of the public notification API: endpoint shapes users write compile.
import { describe, expectTypeOf, it } from 'vitest';
import type { Context } from '../../../src/contract/types.js';
import type { Transport } from '../../../src/transport.js';
import {
  NotificationFilter,
  NotificationResult,
  getBatchNotificationListener,
  getNotificationListener,
  type NotificationBatchItem,
  type NotificationEndpoint,
  type NotificationMetadata,
} from '../../../src/notify/index.js';
import { Notifier } from '../../../src/notify/notifier.js';

declare const transport: Transport;

describe('notification API types', () => {
  it('accepts class instances with extra members and inline literals with contextual types', () => {
    class Billing {
      total = 0;
      info(_ctx: Context, _publisherId: string | null, _eventType: string, payload: { amount: number }) {
        this.total += payload.amount;
        return NotificationResult.HANDLED;
      }
      helper() {}
    }
    const build = () =>
      getNotificationListener(transport, [{ topic: 'notifications' }], [
        new Billing(),
        {
          counter: 0,
          error(ctx, publisherId, eventType, payload, metadata) {
            expectTypeOf(ctx).toEqualTypeOf<Context>();
            expectTypeOf(publisherId).toEqualTypeOf<string | null>();
            expectTypeOf(eventType).toEqualTypeOf<string>();
            expectTypeOf(metadata).toEqualTypeOf<NotificationMetadata>();
            return payload ? undefined : NotificationResult.REQUEUE;
          },
        },
      ]);
    expectTypeOf(build).returns.toHaveProperty('start');
    const batch = () =>
      getBatchNotificationListener(transport, [{ topic: 'n' }], [{ async sample(items) { expectTypeOf(items).toEqualTypeOf<NotificationBatchItem<Context>[]>(); } }], { batchSize: 10 });
    expectTypeOf(batch).returns.toHaveProperty('wait');
    expectTypeOf<NotificationEndpoint>().toHaveProperty('filterRule');
  });

  it('types a custom context through the serializer', () => {
    interface MyCtx {
      user: string;
    }
    const make = () => new Notifier<MyCtx>(transport, { serializer: { serializeEntity: (_c, e) => e, deserializeEntity: (_c, e) => e, serializeContext: (c) => ({ user: c.user }), deserializeContext: (c) => ({ user: String(c.user) }) } });
    expectTypeOf(make).returns.toHaveProperty('info').parameter(0).toEqualTypeOf<MyCtx>();
  });

  it('rejects at compile time an endpoint that certainly has no priority method', () => {
    const filterRule = new NotificationFilter({ eventType: 'compute\\..*' });
    const plain = () => [
      // @ts-expect-error `infoo` is no priority
      getNotificationListener(transport, [{ topic: 'n' }], [{ infoo() {} }]),
      // @ts-expect-error the second endpoint has only `warning` (the priority is `warn`)
      getNotificationListener(transport, [{ topic: 'n' }], [{ info() {} }, { warning() {} }]),
      // @ts-expect-error a priority key that is not a function
      getNotificationListener(transport, [{ topic: 'n' }], [{ info: 42 }]),
      // @ts-expect-error a filter alone handles nothing
      getNotificationListener(transport, [{ topic: 'n' }], [{ filterRule }]),
      // @ts-expect-error batch listeners too
      getBatchNotificationListener(transport, [{ topic: 'n' }], [{ infoo() {} }]),
    ];
    expectTypeOf(plain).returns.items.toHaveProperty('start');
  });

  it('keeps accepting class instances, helpers, filterRule and endpoints built at run time', () => {
    class Audit implements NotificationEndpoint {
      audit() {}
    }
    class Mixed {
      count = 0;
      filterRule = new NotificationFilter({ publisherId: 'compute.*' });
      critical(_ctx: unknown, _publisherId: string, _eventType: string, payload: { id: number }) {
        this.count += payload.id;
      }
      private helper() {}
    }
    const built: Record<string, unknown> = Object.fromEntries([['info', () => undefined]]);
    const some: object[] = [new Audit()];
    const ok = () => [
      getNotificationListener(transport, [{ topic: 'n' }], [new Audit(), new Mixed(), { filterRule: new NotificationFilter({ eventType: 'x' }), warn() {}, extra: 1 }]),
      getNotificationListener(transport, [{ topic: 'n' }], [built]),
      getNotificationListener(transport, [{ topic: 'n' }], some),
      getBatchNotificationListener(transport, [{ topic: 'n' }], [{ debug(items) { expectTypeOf(items).toEqualTypeOf<NotificationBatchItem<Context>[]>(); }, helper() {} }]),
    ];
    expectTypeOf(ok).returns.items.toHaveProperty('stop');
  });
});
