// `tidings dead-letters`: usage errors, drivers without dead letters (exit 2 naming the driver), memory://'s,
// and the list/replay/purge plumbing against a registered driver that keeps dead letters.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../../src/cli/run-cli.js';
import { BaseDriver, type DriverInit } from '../../../src/contract/base-driver.js';
import type { DeadLetter, DeadLetterQuery, DeadLetterStore } from '../../../src/contract/dead-letters.js';
import { MemoryDriver } from '../../../src/drivers/memory/index.js';
import { registerDriver } from '../../../src/transport.js';
import { captureIO } from '../../support/cli-io.js';


const LETTER: DeadLetter = { id: '1-0', address: 'notifications.info', pool: 'billing', body: '{"x":1}', error: 'boom', consumer: 'c1', deadAt: '2026-11-23T00:00:00.000Z', deliveries: 5 };

/** A store that records the queries it was given. */
class RecordingStore implements DeadLetterStore {
  readonly queries: Array<[string, DeadLetterQuery]> = [];
  async list(query: DeadLetterQuery): Promise<DeadLetter[]> {
    this.queries.push(['list', query]);
    return [LETTER, { ...LETTER, id: '2-0' }];
  }
  async replay(query: DeadLetterQuery): Promise<number> {
    this.queries.push(['replay', query]);
    return query.ids?.length ?? 2;
  }
  async purge(query: DeadLetterQuery): Promise<number> {
    this.queries.push(['purge', query]);
    return 2;
  }
}

const store = new RecordingStore();
const scheme = `dl${randomUUID().slice(0, 8)}`;
registerDriver(scheme, async () => ({
  createDriver: (init: DriverInit) =>
    new (class extends MemoryDriver {
      override deadLetters(): DeadLetterStore {
        return store;
      }
    })(init),
}));

describe('tidings dead-letters', () => {
  it.each([
    [[], /expected one of list, replay, purge/],
    [['peek', '--address', 'a.info'], /received "peek"/],
    [['list'], /missing --address/],
    [['purge', '--address', 'a.info'], /--id, or pass --all/],
    [['list', '--address', 'a.info', '--limit', '0'], /--limit must be a positive integer/],
  ])('%j is bad input: exit 2 with one line saying why', async (args, why) => {
    const io = captureIO();
    expect(await runCli(['dead-letters', ...args, '--url', `${scheme}://`], io)).toBe(2);
    expect(io.errors.join('\n')).toMatch(why);
    expect(store.queries).toEqual([]);
  });

  it('a driver without dead letters exits 2 naming the driver', async () => {
    const plain = `plain${randomUUID().slice(0, 8)}`;
    registerDriver(plain, async () => ({
      createDriver: (init: DriverInit) =>
        new (class extends MemoryDriver {
          override deadLetters(): DeadLetterStore {
            return BaseDriver.prototype.deadLetters.call(this);
          }
        })(init),
    }));
    const io = captureIO();
    expect(await runCli(['dead-letters', 'list', '--address', 'notifications.info', '--url', `${plain}://`], io)).toBe(2);
    expect(io.errors.join('\n')).toMatch(/memory driver keeps no dead letters/);
  });

  it('memory:// keeps dead letters: an address with none lists nothing', async () => {
    const io = captureIO();
    expect(await runCli(['dead-letters', 'list', '--address', 'notifications.info', '--url', 'memory://'], io)).toBe(0);
    expect(io.lines).toEqual([]);
  });

  it('list prints one JSON line per dead letter, with the default limit of 100', async () => {
    const io = captureIO();
    expect(await runCli(['dead-letters', 'list', '-a', 'notifications.info', '--url', `${scheme}://`], io)).toBe(0);
    expect(io.lines.map((l) => JSON.parse(l))).toEqual([LETTER, { ...LETTER, id: '2-0' }]);
    expect(store.queries.at(-1)).toEqual(['list', { address: 'notifications.info', exchange: undefined, ids: undefined, limit: 100 }]);
  });

  it('replay passes the ids and exchange and prints how many were replayed', async () => {
    const io = captureIO();
    expect(await runCli(['dead-letters', 'replay', '-a', 'n.error', '--exchange', 'nova', '--id', '1-0', '--id', '3-0', '--url', `${scheme}://`], io)).toBe(0);
    expect(io.lines).toEqual(['{"replayed":2}']);
    expect(store.queries.at(-1)).toEqual(['replay', { address: 'n.error', exchange: 'nova', ids: ['1-0', '3-0'], limit: undefined }]);
  });

  it('purge --all removes every dead letter of the address', async () => {
    const io = captureIO();
    expect(await runCli(['dead-letters', 'purge', '-a', 'n.error', '--all', '--url', `${scheme}://`], io)).toBe(0);
    expect(io.lines).toEqual(['{"purged":2}']);
    expect(store.queries.at(-1)).toEqual(['purge', { address: 'n.error', exchange: undefined, ids: undefined, limit: undefined }]);
  });
});
