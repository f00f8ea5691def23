// registerDriver: scheme validation, refusing a second registration without { replace: true },
// lazy loading, planned schemes becoming registrable, and modules that are not drivers.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { DriverModule } from '../../src/contract/base-driver.js';
import { DriverLoadFailure, InvalidArgument, InvalidTransportURL } from '../../src/core/errors.js';
import { getRpcTransport, registerDriver, TRANSPORT_SCHEMES, type DriverLoader } from '../../src/transport.js';
import { expectFailure } from '../../src/testing/harness.js';

const SECRET = 'hunter2-secret';
const loadMemory: DriverLoader = () => import('../../src/drivers/memory/index.js');

/** A scheme no other test registers (a letter first, as URL schemes require). */
function freshScheme(): string {
  return `x${randomUUID().slice(0, 8)}`;
}

/** A loader that counts its calls and hands out the memory driver. */
function countingLoader(): DriverLoader & { calls: number } {
  const load = Object.assign(async () => {
    load.calls++;
    return loadMemory();
  }, { calls: 0 });
  return load;
}

describe('registerDriver: input', () => {
  it.each(['Memtest', 'MEMORY', '1abc', 'my_q', 'a+b', 'my q', '', 'memtest://'])('refuses the scheme %j with InvalidArgument naming the field, the expectation and the value', async (scheme) => {
    const err = await expectFailure(() => registerDriver(scheme, loadMemory), InvalidArgument);
    expect(err.field).toBe('scheme');
    expect(err.expected).toMatch(/lower-case URL scheme/);
    expect(err.received).toBe(scheme);
    expect(err.message).toContain(JSON.stringify(scheme));
  });

  it.each([undefined, 42, {}])('refuses a scheme that is not a string (%j)', async (scheme) => {
    const err = await expectFailure(() => registerDriver(scheme as never, loadMemory), InvalidArgument);
    expect(err.field).toBe('scheme');
  });

  it.each([undefined, 'tidings-my-driver', { createDriver: () => undefined }])('refuses a load that is not a function (%j)', async (load) => {
    const err = await expectFailure(() => registerDriver(freshScheme(), load as never), InvalidArgument);
    expect(err.field).toBe('load');
    expect(err.message).toMatch(/expected a function/);
  });

  it.each(TRANSPORT_SCHEMES)('refuses to re-register the built-in scheme %s without { replace: true }', async (scheme) => {
    const err = await expectFailure(() => registerDriver(scheme, loadMemory), InvalidArgument);
    expect(err.field).toBe('scheme');
    expect(err.message).toContain('replace: true');
  });
});

describe('registerDriver: loading', () => {
  it('loads the driver lazily, on the first transport of the scheme, and uses it for rpc and notifications', async () => {
    const scheme = freshScheme();
    const load = countingLoader();
    registerDriver(scheme, load);
    expect(load.calls).toBe(0);
    const t = await getRpcTransport(`${scheme}:///${randomUUID()}`);
    try {
      expect(load.calls).toBe(1);
      expect(t.driver.name).toBe('memory');
      expect(t.url).toMatch(new RegExp(`^${scheme}:///`));
    } finally {
      await t.cleanup();
    }
  });

  it('selects the driver by the part before "+", as for kombu+memory', async () => {
    const scheme = freshScheme();
    const load = countingLoader();
    registerDriver(scheme, load);
    const t = await getRpcTransport(`${scheme}+sub:///${randomUUID()}`);
    await t.cleanup();
    expect(load.calls).toBe(1);
  });

  it('refuses a second registration of a user scheme, and replaces it with { replace: true }', async () => {
    const scheme = freshScheme();
    const first = countingLoader();
    const second = countingLoader();
    registerDriver(scheme, first);
    const err = await expectFailure(() => registerDriver(scheme, second), InvalidArgument);
    expect(err.message).toContain(JSON.stringify(scheme));

    registerDriver(scheme, second, { replace: true });
    const t = await getRpcTransport(`${scheme}:///${randomUUID()}`);
    await t.cleanup();
    expect([first.calls, second.calls]).toEqual([0, 1]);
  });

  it('lists user schemes next to the built-in ones when a scheme is unknown, and TRANSPORT_SCHEMES stays the shipped ones', async () => {
    const scheme = freshScheme();
    registerDriver(scheme, loadMemory);
    const err = await expectFailure(() => getRpcTransport(`nosuch://u:${SECRET}@h/`), InvalidTransportURL);
    expect(err.message).toMatch(new RegExp(`known schemes: memory, .*${scheme}`));
    expect(err.message).not.toContain(SECRET);
    expect(TRANSPORT_SCHEMES).toEqual(['memory', 'rabbit', 'kombu', 'amqp', 'amqps', 'redis', 'rediss', 'kafka']);
  });

});

describe('registerDriver: a module that is not a driver fails with DriverLoadFailure naming the scheme', () => {
  it.each<[string, DriverModule | undefined]>([
    ['a module without createDriver', {} as DriverModule],
    ['a createDriver that is not a function', { createDriver: 'yes' } as unknown as DriverModule],
    ['a loader resolving to undefined', undefined],
  ])('%s', async (_what, mod) => {
    const scheme = freshScheme();
    registerDriver(scheme, async () => mod as DriverModule);
    const err = await expectFailure(() => getRpcTransport(`${scheme}://u:${SECRET}@h/`), DriverLoadFailure);
    expect(err.message).toContain(`"${scheme}"`);
    expect(err.message).toMatch(/no createDriver\(\) function/);
    expect(err.message).not.toContain(SECRET);
  });

  it.each([
    ['a plain object', () => ({ name: 'fake', send: () => undefined })],
    ['undefined', () => undefined],
  ])('createDriver returning %s', async (_what, createDriver) => {
    const scheme = freshScheme();
    registerDriver(scheme, async () => ({ createDriver }) as unknown as DriverModule);
    const err = await expectFailure(() => getRpcTransport(`${scheme}://u:${SECRET}@h/`), DriverLoadFailure);
    expect(err.message).toContain(`"${scheme}"`);
    expect(err.message).toMatch(/not a BaseDriver/);
    expect(err.message).not.toContain(SECRET);
  });

  it('a loader that throws fails with DriverLoadFailure carrying the cause', async () => {
    const scheme = freshScheme();
    const boom = new Error('module evaluation failed');
    registerDriver(scheme, async () => {
      throw boom;
    });
    const err = await expectFailure(() => getRpcTransport(`${scheme}:///`), DriverLoadFailure);
    expect(err.message).toContain(`the ${scheme} driver`);
    expect(err.cause).toBe(boom);
  });
});
