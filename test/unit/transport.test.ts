// transport.ts: scheme -> driver, option validation, default URL, redaction.
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidArgument, InvalidTransportURL } from '../../src/core/errors.js';
import { createMemoryLogger } from '../../src/core/logger.js';
import { DEFAULT_TRANSPORT_URL, getNotificationTransport, getRpcTransport, Transport } from '../../src/transport.js';
import { TransportURL } from '../../src/core/transport-url.js';

const SECRET = 'hunter2-secret';
const savedEnv = process.env.TIDINGS_TRANSPORT_URL;

afterEach(() => {
  if (savedEnv === undefined) delete process.env.TIDINGS_TRANSPORT_URL;
  else process.env.TIDINGS_TRANSPORT_URL = savedEnv;
});

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('getRpcTransport / getNotificationTransport', () => {
  it('refuses an unknown scheme with InvalidTransportURL listing the known schemes, password redacted', async () => {
    const err = await rejection(getRpcTransport(`bogus://user:${SECRET}@h:1/`));
    expect(err).toBeInstanceOf(InvalidTransportURL);
    expect(err.message).toContain('"bogus"');
    expect(err.message).toMatch(/known schemes: .*memory.*rabbit/);
    expect(err.message).toContain('user:***@h:1');
    expect(err.message).not.toContain(SECRET);
  });

  it('refuses a URL that does not parse, password redacted', async () => {
    const err = await rejection(getNotificationTransport(`rabbit://user:${SECRET}@h:port/`));
    expect(err).toBeInstanceOf(InvalidTransportURL);
    expect(err.message).not.toContain(SECRET);
  });

  it('refuses bad allowedRemoteExmods with InvalidArgument naming the field', async () => {
    for (const bad of ['myapp.errors', [1], [null], { 0: 'a' }]) {
      const err = await rejection(getRpcTransport('memory://', { allowedRemoteExmods: bad as never }));
      expect(err).toBeInstanceOf(InvalidArgument);
      expect((err as InvalidArgument).field).toBe('allowedRemoteExmods');
    }
  });

  it('refuses a bad controlExchange', async () => {
    for (const bad of ['', 5]) {
      const err = await rejection(getRpcTransport('memory://', { controlExchange: bad as never }));
      expect(err).toBeInstanceOf(InvalidArgument);
      expect((err as InvalidArgument).field).toBe('controlExchange');
    }
  });

  it('uses $TIDINGS_TRANSPORT_URL when no URL is given', async () => {
    process.env.TIDINGS_TRANSPORT_URL = `nosuch://u:${SECRET}@h/`;
    const err = await rejection(getRpcTransport());
    expect(err).toBeInstanceOf(InvalidTransportURL);
    expect(err.message).toContain('"nosuch"');
    expect(err.message).not.toContain(SECRET);
    // An explicit URL wins over the variable.
    const t = await getRpcTransport('memory:///explicit');
    try {
      expect(t.url).toBe('memory:///explicit');
    } finally {
      await t.cleanup();
    }
  });

  it('logs at info which URL was chosen and why: argument, $TIDINGS_TRANSPORT_URL or the default', async () => {
    process.env.TIDINGS_TRANSPORT_URL = `memory://user:${SECRET}@h/t-env`;
    const opened: Array<[Promise<Transport>, Record<string, unknown>]> = [];
    const loggers = [createMemoryLogger(), createMemoryLogger(), createMemoryLogger()];
    opened.push([getRpcTransport(`memory://user:${SECRET}@h/t-arg`, { logger: loggers[0] }), { source: 'argument', url: 'memory://user:***@h/t-arg', transport: 'rpc' }]);
    opened.push([getNotificationTransport(undefined, { logger: loggers[1] }), { source: 'env', envVar: 'TIDINGS_TRANSPORT_URL', url: 'memory://user:***@h/t-env', transport: 'notification' }]);
    const fromEnv = await opened[1][0];
    delete process.env.TIDINGS_TRANSPORT_URL;
    opened.push([getRpcTransport(undefined, { logger: loggers[2] }), { source: 'default', url: 'memory://' }]);
    for (const [i, [promise, expected]] of opened.entries()) {
      const t = await promise;
      try {
        const chosen = loggers[i].records.filter((r) => r.msg === 'transport URL chosen');
        expect(chosen).toHaveLength(1);
        expect(chosen[0].level).toBe('info');
        expect(chosen[0].fields).toMatchObject({ driver: 'memory', ...expected });
        if (expected.source !== 'env') expect(chosen[0].fields).not.toHaveProperty('envVar');
        expect(JSON.stringify(loggers[i].records)).not.toContain(SECRET);
      } finally {
        await t.cleanup();
      }
    }
    expect(fromEnv.url).toBe('memory://user:***@h/t-env');
  });

  it('says that a bad URL came from $TIDINGS_TRANSPORT_URL, password redacted', async () => {
    for (const bad of [`rabbit://user:${SECRET}@h:port/`, `rabbit://user:${SECRET}@`, `nosuch://user:${SECRET}@h/`]) {
      process.env.TIDINGS_TRANSPORT_URL = bad;
      const err = await rejection(getRpcTransport());
      expect(err).toBeInstanceOf(InvalidTransportURL);
      expect(err.message).toContain('(from $TIDINGS_TRANSPORT_URL)');
      expect(err.message).toContain('user:***@');
      expect(inspect(err)).not.toContain(SECRET);
    }
    // An explicit bad URL is not blamed on the variable.
    const err = await rejection(getRpcTransport(`rabbit://user:${SECRET}@`));
    expect(err.message).not.toContain('TIDINGS_TRANSPORT_URL');
  });

  it('JSON.stringify of a transport shows its kind and redacted URL only', async () => {
    const t = await getRpcTransport(`memory://user:${SECRET}@localhost/t-json`, { logger: createMemoryLogger() });
    try {
      expect(JSON.parse(JSON.stringify(t))).toEqual({ kind: 'rpc', url: 'memory://user:***@localhost/t-json' });
    } finally {
      await t.cleanup();
    }
  });

  it('falls back to memory:// without a URL or variable', async () => {
    delete process.env.TIDINGS_TRANSPORT_URL;
    expect(DEFAULT_TRANSPORT_URL).toBe('memory://');
    const t = await getNotificationTransport();
    try {
      expect(t).toBeInstanceOf(Transport);
      expect(t.kind).toBe('notification');
      expect(t.url).toBe('memory://');
      expect(t.driver.name).toBe('memory');
      expect(t.driver.defaultExchange).toBe('openstack');
    } finally {
      await t.cleanup();
    }
  });

  it('hands options to the driver: control exchange, allowed modules, a logger bound to the redacted URL', async () => {
    const logger = createMemoryLogger();
    const t = await getRpcTransport(TransportURL.parse('memory:///t-opts'), { controlExchange: 'nova', allowedRemoteExmods: ['nova.exception'], logger });
    try {
      expect(t.kind).toBe('rpc');
      expect(t.driver.defaultExchange).toBe('nova');
      expect(t.driver.allowedRemoteExmods).toEqual(['nova.exception']);
      // The driver's logger is a child with {driver, transport, url}.
      (t.driver as unknown as { logger: { info(m: string): void } }).logger.info('probe');
      expect(logger.records.at(-1)?.fields).toMatchObject({ driver: 'memory', transport: 'rpc', url: 'memory:///t-opts' });
    } finally {
      await t.cleanup();
    }
  });

  it('cleanup() is idempotent and shares one promise', async () => {
    const t = await getRpcTransport('memory:///t-cleanup');
    const a = t.cleanup();
    expect(t.cleanup()).toBe(a);
    await a;
    await t.cleanup();
  });

  it('never shows a password in url, toString or inspect', async () => {
    // memory:// ignores credentials, which makes it a safe subject for the redaction check.
    const t = await getRpcTransport(`memory://user:${SECRET}@localhost/t-redact`);
    try {
      for (const s of [t.url, t.toString(), String(t), inspect(t), t.driver.toString()]) expect(s).not.toContain(SECRET);
      expect(t.toString()).toBe('Transport<rpc memory://user:***@localhost/t-redact>');
    } finally {
      await t.cleanup();
    }
  });
});
