// Endpoints without a priority method fail at construction with InvalidArgument naming the
// endpoint's index, the priorities it could have and, for a near-miss name, a suggestion.
import { describe, expect, it } from 'vitest';
import { InvalidArgument } from '../../../src/core/errors.js';
import { NotificationFilter } from '../../../src/notify/filter.js';
import { getBatchNotificationListener, getNotificationListener } from '../../../src/notify/listener.js';
import { useNotifyHarness } from './harness.js';

const { transport } = useNotifyHarness();
const LIST = 'a method named audit, debug, info, warn, error, critical, sample';

/** The InvalidArgument both listener kinds throw for `endpoints` (typed loosely on purpose). */
async function failures(endpoints: unknown): Promise<InvalidArgument[]> {
  const t = await transport();
  const errors: InvalidArgument[] = [];
  for (const make of [getNotificationListener, getBatchNotificationListener] as Array<(...args: unknown[]) => unknown>) {
    try {
      make(t, [{ topic: 'a' }], endpoints);
    } catch (err) {
      expect(err).toBeInstanceOf(InvalidArgument);
      errors.push(err as InvalidArgument);
      continue;
    }
    throw new Error(`${make.name} accepted ${JSON.stringify(endpoints)}`);
  }
  return errors;
}

describe('notification endpoint checks', () => {
  it('names the endpoint index, lists the priorities and suggests the near-miss method', async () => {
    for (const err of await failures([{ infoo() {} }])) {
      expect(err.field).toBe('endpoints[0]');
      expect(err.message).toBe(`Invalid endpoints[0]: expected ${LIST} (did you mean "info" instead of "infoo"?), received an object`);
    }
    for (const err of await failures([{ info() {} }, { warning() {}, helper() {} }])) {
      expect(err.field).toBe('endpoints[1]');
      expect(err.message).toContain('did you mean "warn" instead of "warning"?');
    }
  });

  it('suggests from class methods too: other case, a priority inside the name, one typo', async () => {
    class Handlers {
      INFO() {}
      onError() {}
      criticl() {}
      helper() {}
    }
    const [err] = await failures([new Handlers()]);
    expect(err.message).toContain('did you mean "info" instead of "INFO", "error" instead of "onError", "critical" instead of "criticl"?');
  });

  it('without a near miss, says what the endpoint has; a priority that is no function is named', async () => {
    expect((await failures([{ helper() {}, counter: 0 }]))[0].message).toBe(`Invalid endpoints[0]: expected ${LIST} (it has only helper), received an object`);
    expect((await failures([{}]))[0].message).toContain('(it has no methods)');
    expect((await failures([{ filterRule: new NotificationFilter({ eventType: 'x' }) }]))[0].message).toContain('(it has no methods)');
    expect((await failures([{ info: 'yes' }]))[0].message).toContain('(its "info" is not a function but a string)');
  });

  it('an empty list (without on() handlers, at start) or a non-array says so', async () => {
    const t = await transport();
    for (const listener of [getNotificationListener(t, [{ topic: 'a' }], []), getBatchNotificationListener(t, [{ topic: 'a' }], [])]) {
      const err = await listener.start().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidArgument);
      expect((err as Error).message).toBe('Invalid endpoints: expected a non-empty array of endpoint objects, or handlers added with on(), received an empty array');
    }
    for (const err of await failures({ info() {} })) {
      expect(err.message).toBe('Invalid endpoints: expected a non-empty array of endpoint objects, received an object');
    }
  });

  it('endpoints with extra members and at least one priority method are accepted', async () => {
    const t = await transport();
    class Billing {
      total = 0;
      info() {}
      helper() {}
    }
    expect(getNotificationListener(t, [{ topic: 'a' }], [new Billing(), { counter: 1, warn() {}, filterRule: new NotificationFilter({ eventType: 'x' }) }]).priorities).toEqual(['info', 'warn']);
    expect(getBatchNotificationListener(t, [{ topic: 'a' }], [{ sample() {} }]).priorities).toEqual(['sample']);
  });
});
