// Type-level checks of the public notification API: endpoint shapes users write compile.
import { describe, expectTypeOf, it } from 'vitest';
import type { Context } from '../../../src/driver/types.js';
import type { Transport } from '../../../src/transport.js';
import {
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
});
