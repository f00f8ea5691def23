// memory:// options: DEFAULTS, URL query mapping, validation messages, and loading the driver
// through getRpcTransport.
import { describe, expect, it } from 'vitest';
import { MEMORY_DEFAULTS, MemoryDriver, getMemoryBroker, resolveMemoryOptions } from '../../../../src/drivers/memory/index.js';
import { InvalidArgument, InvalidTransportURL } from '../../../../src/core/errors.js';
import { Target } from '../../../../src/core/target.js';
import { getRpcTransport } from '../../../../src/transport.js';
import { TransportURL } from '../../../../src/core/transport-url.js';
import { uniqueName } from '../../../../src/testing/wait.js';

const url = (s: string) => TransportURL.parse(s);

describe('memory driver options', () => {
  it('has frozen defaults', () => {
    expect(MEMORY_DEFAULTS).toEqual({ prefetchCount: 0, maxDeliveries: 10, maxMessageBytes: 16 * 1024 * 1024, dedupWindow: 4096 });
    expect(Object.isFrozen(MEMORY_DEFAULTS)).toBe(true);
    expect(resolveMemoryOptions(url('memory://'))).toEqual(MEMORY_DEFAULTS);
  });

  it('maps URL query keys onto options; caller options win', () => {
    expect(resolveMemoryOptions(url('memory:///x?prefetch_count=10&dedup_window=16'))).toEqual({ prefetchCount: 10, maxDeliveries: 10, maxMessageBytes: 16 * 1024 * 1024, dedupWindow: 16 });
    expect(resolveMemoryOptions(url('memory:///x?prefetch_count=10'), { prefetchCount: 2 })).toMatchObject({ prefetchCount: 2 });
  });

  it('refuses an unknown URL key with InvalidTransportURL naming it', () => {
    expect(() => resolveMemoryOptions(url('memory:///x?prefech_count=1'))).toThrow(InvalidTransportURL);
    expect(() => resolveMemoryOptions(url('memory:///x?prefech_count=1'))).toThrow(/prefech_count/);
  });

  it('refuses bad values naming the field, the expected and the received value', () => {
    expect(() => resolveMemoryOptions(url('memory:///x?prefetch_count=-1'))).toThrow(/prefetch_count: expected a non-negative integer, received number -1/);
    expect(() => resolveMemoryOptions(url('memory:///x?dedup_window=abc'))).toThrow(InvalidArgument);
    const err = (() => {
      try {
        resolveMemoryOptions(url('memory://'), { dedupWindow: 0 });
      } catch (e) {
        return e as InvalidArgument;
      }
    })();
    expect(err).toBeInstanceOf(InvalidArgument);
    expect(err?.field).toBe('driverOptions.dedupWindow');
    expect(err?.message).toBe('Invalid driverOptions.dedupWindow: expected a positive integer, received number 0');
    expect(() => resolveMemoryOptions(url('memory://'), { heartbeat: 1 })).toThrow(InvalidArgument);
  });

  it('is what getRpcTransport loads for memory:// URLs, on the broker of the URL virtual host', async () => {
    const vhost = uniqueName('iso');
    const transport = await getRpcTransport(`memory:///${vhost}?prefetch_count=5`);
    try {
      expect(transport.driver).toBeInstanceOf(MemoryDriver);
      expect((transport.driver as MemoryDriver).options.prefetchCount).toBe(5);
      expect(transport.driver.capabilities).toEqual({ rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true, deadLetters: true });
      expect((transport.driver as MemoryDriver).broker).toBe(getMemoryBroker(vhost));
      transport.driver.requireFeatures({ requeue: true, pools: true, fanout: true, callMonitor: true });
      await transport.driver.sendNotification(new Target({ topic: 'n.info' }), {}, { event_type: 'e' });
      expect(getMemoryBroker(vhost).queueDepth('n.info')).toBe(1);
    } finally {
      await transport.cleanup();
    }
    await expect(getRpcTransport('memory:///x?bogus=1')).rejects.toBeInstanceOf(InvalidTransportURL);
  });
});
