// Small parts of the driver contract: DuplicateMessageChecker, StopWatch, capabilities, BaseDriver helpers.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { InvalidState, NotSupportedError } from '../../../src/core/errors.js';
import { silentLogger } from '../../../src/core/logger.js';
import { Target } from '../../../src/core/target.js';
import { TransportURL } from '../../../src/core/transport-url.js';
import { BaseDriver } from '../../../src/contract/base-driver.js';
import { requireCapability, type DriverCapabilities } from '../../../src/contract/capabilities.js';
import { NO_INSPECTION } from '../../../src/contract/inspection.js';
import { DuplicateMessageChecker } from '../../../src/structures/dedup.js';
import { defaultRemoteErrorRegistry } from '../../../src/contract/remote-error.js';
import { StopWatch } from '../../../src/structures/stopwatch.js';
import { isPriority, PRIORITIES } from '../../../src/contract/types.js';

setFlagsFromString('--expose-gc');
/** V8's full collection, without a command-line flag (a new context sees the flag set above). */
const collectGarbage = runInNewContext('gc') as () => void;

describe('DuplicateMessageChecker', () => {
  it('reports an id seen inside the window as a duplicate', () => {
    const d = new DuplicateMessageChecker(3);
    expect(d.checkAndAdd('a')).toBe(false);
    expect(d.checkAndAdd('a')).toBe(true);
    expect(d.has('a')).toBe(true);
    expect(d.has('b')).toBe(false);
  });

  it('evicts the oldest id once the window is full', () => {
    const d = new DuplicateMessageChecker(3);
    for (const id of ['a', 'b', 'c']) d.add(id);
    d.add('d');
    expect(d.has('a')).toBe(false);
    expect(['b', 'c', 'd'].every((id) => d.has(id))).toBe(true);
    expect(d.checkAndAdd('a')).toBe(false); // 'a' fell out; now it evicts 'b'
    expect(d.has('b')).toBe(false);
    expect(d.has('c')).toBe(true);
  });

  it('re-adding an id already in the window does not evict anything', () => {
    const d = new DuplicateMessageChecker(2);
    d.add('a');
    d.add('b');
    d.add('b');
    d.add('a');
    expect(d.has('a') && d.has('b')).toBe(true);
  });

  it('an id being handled (begin) is a duplicate until dropped, and joins the window once added', () => {
    const d = new DuplicateMessageChecker(2);
    expect(d.begin('a')).toBe(true);
    expect(d.begin('a')).toBe(false); // a copy while the first is handled
    expect(d.checkAndAdd('a')).toBe(true);
    expect(d.has('a')).toBe(false); // being handled is not in the window
    d.drop('a'); // requeued: it may come again
    expect(d.begin('a')).toBe(true);
    d.add('a');
    expect(d.has('a')).toBe(true);
    expect(d.begin('a')).toBe(false);
    d.drop('a'); // dropping a handled id changes nothing
    expect(d.has('a')).toBe(true);
  });

  it('ids being handled do not take window slots, and the window evicts only handled ids', () => {
    const d = new DuplicateMessageChecker(2);
    expect(['x', 'y', 'z'].every((id) => d.begin(id))).toBe(true);
    d.add('a');
    d.add('b');
    d.add('x'); // evicts 'a'
    expect(d.has('a')).toBe(false);
    expect(d.has('b') && d.has('x')).toBe(true);
    expect(d.begin('y') || d.begin('z')).toBe(false); // still being handled
    d.add('y'); // evicts 'b'
    d.add('z'); // evicts 'x'
    expect(['b', 'x'].some((id) => d.has(id))).toBe(false);
    expect(d.has('y') && d.has('z')).toBe(true);
  });

  // oslo's ids are uuid4().hex: held as numbers. Ids one digit apart, upper-case twins (strings,
  // not numbers: a different id) and ids of other shapes share one table.
  const hexId = (n: number) => ['0123456789abcdef', n.toString(16).padStart(16, '0')].join('');
  /** A notification's message_id: str(uuid4()), the same digits with dashes. */
  const dashed = (hex: string) => [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join('-');
  const idKinds: Record<string, (n: number) => string> = {
    'other ids': (n) => ['id', n].join('-'),
    'hex ids': hexId,
    'hex, upper-case and other ids mixed': (n) => (n % 3 === 0 ? hexId(n) : n % 3 === 1 ? hexId(n - 1).toUpperCase() : `${hexId(n).slice(0, 31)}g`),
    'dashed, undashed and nearly dashed ids mixed': (n) => (n % 3 === 0 ? dashed(hexId(n >> 1)) : n % 3 === 1 ? hexId(n >> 1) : dashed(hexId(n >> 1)).replace('-', 'x')),
  };

  it.each(Object.keys(idKinds))('agrees with a plain model of the window and the ids being handled over long random runs (%s)', (kind) => {
    const makeId = idKinds[kind];
    // The model: the window as a list, oldest first, and a set of the ids being handled.
    let seed = 11;
    const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (const size of [1, 3, 16, 100]) {
      const d = new DuplicateMessageChecker(size);
      const window: string[] = [];
      const handling = new Set<string>();
      const enter = (id: string) => {
        window.push(id);
        if (window.length > size) window.shift();
      };
      for (let step = 0; step < 30_000; step++) {
        // Few distinct ids (so they come back often), built anew each time (equal strings, other objects).
        const id = makeId(random(size * 3 + 5));
        const inWindow = window.includes(id);
        switch (random(5)) {
          case 0:
            expect(d.has(id)).toBe(inWindow);
            break;
          case 1: {
            const expected = !inWindow && !handling.has(id);
            expect(d.begin(id)).toBe(expected);
            if (expected) handling.add(id);
            break;
          }
          case 2:
            d.add(id);
            handling.delete(id);
            if (!inWindow) enter(id);
            break;
          case 3: {
            const duplicate = inWindow || handling.has(id);
            expect(d.checkAndAdd(id)).toBe(duplicate);
            if (!duplicate) enter(id);
            break;
          }
          default:
            d.drop(id);
            handling.delete(id);
        }
      }
      for (let i = 0; i < size * 3 + 5; i++) expect(d.has(makeId(i))).toBe(window.includes(makeId(i)));
    }
  });

  it('tells hex ids one digit apart, and a hex id from its upper-case twin, apart', () => {
    const d = new DuplicateMessageChecker(64);
    const base = 'a'.repeat(32);
    for (let i = 0; i < 32; i++) {
      const other = `${base.slice(0, i)}b${base.slice(i + 1)}`;
      expect(d.checkAndAdd(other)).toBe(false);
    }
    expect(d.checkAndAdd(base)).toBe(false);
    expect(d.checkAndAdd(base.toUpperCase())).toBe(false);
    expect(d.checkAndAdd(base)).toBe(true);
    expect(d.checkAndAdd(base.toUpperCase())).toBe(true);
    expect(d.has(`${'a'.repeat(31)}b`) && d.has(`b${'a'.repeat(31)}`)).toBe(true);
    // The dashed form of the same digits is another id; its own digits one apart are told apart too.
    expect(d.checkAndAdd(dashed(base))).toBe(false);
    expect(d.checkAndAdd(dashed(base))).toBe(true);
    expect(d.checkAndAdd(dashed(`${'a'.repeat(31)}b`))).toBe(false);
    expect(d.checkAndAdd(dashed(base).toUpperCase())).toBe(false);
  });

  it('tells dashed ids one digit apart in every group apart, and keeps one with a non-hex digit anywhere as itself', () => {
    const d = new DuplicateMessageChecker(256);
    const base = '0123456789abcdef'.repeat(2);
    expect(d.checkAndAdd(dashed(base))).toBe(false);
    for (let i = 0; i < 32; i++) {
      const swapped = `${base.slice(0, i)}${base[i] === 'f' ? '0' : 'f'}${base.slice(i + 1)}`;
      expect(d.checkAndAdd(dashed(swapped)), `digit ${i}`).toBe(false);
      expect(d.checkAndAdd(dashed(swapped)), `digit ${i} again`).toBe(true);
      // A character that is no lowercase hex digit: the id is held as its string, still told apart.
      const odd = `${base.slice(0, i)}g${base.slice(i + 1)}`;
      expect(d.checkAndAdd(dashed(odd)), `g at ${i}`).toBe(false);
      expect(d.checkAndAdd(dashed(odd)), `g at ${i} again`).toBe(true);
      expect(d.checkAndAdd(odd), `undashed g at ${i}`).toBe(false);
    }
    expect(d.checkAndAdd(dashed(base))).toBe(true);
    expect(d.checkAndAdd(base)).toBe(false);
  });

  it('keeps no id string of a hex or dashed id: a full window of oslo ids holds no strings (issue 30)', () => {
    const d = new DuplicateMessageChecker(64);
    // A new string object per id, as JSON.parse makes one per message.
    for (let i = 0; i < 200; i++) d.add(JSON.parse(JSON.stringify(i % 2 === 0 ? hexId(i) : dashed(hexId(i)))) as string);
    expect(d.has(dashed(hexId(199))) && d.has(hexId(198)) && !d.has(hexId(0))).toBe(true);
    // The table's string slots are all empty for hex ids.
    const held = d as unknown as { strings: Array<string | undefined>; ringStrings: Array<string | undefined> };
    expect(held.strings.length).toBeGreaterThanOrEqual(128);
    expect(held.strings.every((s) => s === undefined || s === '\u0000uuid')).toBe(true);
    expect(held.ringStrings.length).toBe(64);
    expect(held.ringStrings.every((s) => s === undefined || s === '\u0000uuid')).toBe(true);
  });

  it('holds any number of ids being handled beside a full window', () => {
    const d = new DuplicateMessageChecker(8);
    for (let i = 0; i < 8; i++) d.add(`w${i}`);
    for (let i = 0; i < 10_000; i++) expect(d.begin(`f${i}`)).toBe(true);
    for (let i = 0; i < 10_000; i += 997) expect(d.begin(`f${i}`)).toBe(false);
    expect(d.has('w0') && d.has('w7')).toBe(true);
    for (let i = 0; i < 10_000; i++) d.drop(`f${i}`);
    for (let i = 0; i < 10_000; i += 997) expect(d.begin(`f${i}`)).toBe(true);
    expect(d.has('w0') && d.has('w7')).toBe(true);
  });

  it('defaults to a large window and refuses bad sizes', () => {
    const d = new DuplicateMessageChecker();
    expect(d.size).toBe(4096);
    for (let i = 0; i < 4096; i++) d.add(`id-${i}`);
    expect(d.has('id-0')).toBe(true);
    d.add('one-more');
    expect(d.has('id-0')).toBe(false);
    for (const bad of [0, -1, 1.5, NaN]) expect(() => new DuplicateMessageChecker(bad)).toThrow(RangeError);
  });

  it('holds memory for the ids it has seen, not for its whole window: a thousand idle checkers take little (issue 30)', () => {
    // Every listener and RPC server has one: a process with a thousand idle topics held a
    // thousand full default tables, 106 KB of heap each (npm run bench:scale -- --mode topics).
    const held = () => {
      collectGarbage();
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    };
    const before = held();
    const idle = Array.from({ length: 1000 }, () => new DuplicateMessageChecker());
    const perChecker = (held() - before) / idle.length;
    expect(idle.length).toBe(1000);
    expect(perChecker).toBeLessThan(4 * 1024);
    // A checker that has seen its window's worth of ids holds them all, and evicts in order as before.
    const busy = new DuplicateMessageChecker(100);
    for (let i = 0; i < 250; i++) busy.add(`id-${i}`);
    expect(busy.has('id-149')).toBe(false);
    expect(busy.has('id-150') && busy.has('id-249')).toBe(true);
  });
});

describe('StopWatch', () => {
  it('counts down a duration on the given clock', () => {
    let t = 1000;
    const w = new StopWatch(200, () => t);
    expect(w.elapsed()).toBe(0);
    expect(w.leftover()).toBe(200);
    t += 150;
    expect(w.elapsed()).toBe(150);
    expect(w.leftover()).toBe(50);
    t += 100;
    expect(w.leftover()).toBe(0);
  });

  it('has no limit without a duration', () => {
    let t = 0;
    const w = new StopWatch(undefined, () => t);
    t += 1e9;
    expect(w.leftover()).toBeUndefined();
    expect(w.elapsed()).toBe(1e9);
  });

  it('a zero duration has nothing left at once', () => {
    const w = new StopWatch(0);
    expect(w.leftover()).toBe(0);
  });

  it('uses a monotonic real clock by default', async () => {
    const w = new StopWatch(10_000);
    await new Promise((r) => setTimeout(r, 20));
    expect(w.elapsed()).toBeGreaterThan(5);
    expect(w.leftover()!).toBeLessThan(10_000);
  });
});

const ALL: DriverCapabilities = { rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true };
const NONE: DriverCapabilities = { rpc: false, fanout: false, requeue: false, pools: false, callMonitor: false, durableNotifications: false };

describe('capabilities', () => {
  it('requireCapability passes when present and names driver and capability when missing', () => {
    expect(() => requireCapability('x', ALL, 'requeue')).not.toThrow();
    expect(() => requireCapability('kafka', NONE, 'requeue')).toThrow(new NotSupportedError('The kafka driver does not support requeue'));
    expect(() => requireCapability('kafka', NONE, 'pools', 'listener pools')).toThrow('The kafka driver does not support listener pools');
  });
});

class TestDriver extends BaseDriver {
  readonly name = 'test';
  constructor(readonly capabilities: DriverCapabilities) {
    super({
      url: TransportURL.parse('rabbit://user:hunter2@h:5672/'),
      defaultExchange: 'openstack',
      allowedRemoteExmods: ['a.b'],
      remoteErrors: defaultRemoteErrorRegistry,
      logger: silentLogger,
      options: {},
    });
  }
  protected doSend(): Promise<unknown> {
    return Promise.resolve(undefined);
  }
  protected doSendNotification(): Promise<void> {
    return Promise.resolve();
  }
  protected doListen(): Promise<never> {
    return Promise.reject(new Error('unused'));
  }
  protected doListenForNotifications(): Promise<never> {
    return Promise.reject(new Error('unused'));
  }
  closes = 0;
  protected close(): Promise<void> {
    this.closes++;
    return Promise.resolve();
  }
  /** For the test: the protected open check. */
  check(): void {
    this.assertOpen();
  }
}

describe('BaseDriver helpers', () => {
  it('keeps the init fields', () => {
    const d = new TestDriver(ALL);
    expect(d.defaultExchange).toBe('openstack');
    expect(d.allowedRemoteExmods).toEqual(['a.b']);
    expect(d.remoteErrors).toBe(defaultRemoteErrorRegistry);
  });

  it('cleanup() runs the driver close once; afterwards the driver refuses work with InvalidState, without the password', async () => {
    const d = new TestDriver(ALL);
    expect(() => d.check()).not.toThrow();
    await Promise.all([d.cleanup(), d.cleanup()]);
    await d.cleanup();
    expect(d.closes).toBe(1);
    expect(() => d.check()).toThrow(InvalidState);
    expect(() => d.check()).toThrow(/test transport rabbit:\/\/user:\*\*\*@h:5672\/ was cleaned up/);
  });

  it('requireFeatures fails at once for each missing capability and passes for present ones', () => {
    expect(() => new TestDriver(ALL).requireFeatures({ requeue: true, pools: true, fanout: true, callMonitor: true })).not.toThrow();
    const d = new TestDriver(NONE);
    expect(() => d.requireFeatures({})).not.toThrow();
    expect(() => d.requireFeatures({ requeue: false })).not.toThrow();
    expect(() => d.requireFeatures({ requeue: true })).toThrow(/requeueing/);
    expect(() => d.requireFeatures({ pools: true })).toThrow(/pools/);
    expect(() => d.requireFeatures({ fanout: true })).toThrow(/fanout/);
    expect(() => d.requireFeatures({ callMonitor: true })).toThrow(NotSupportedError);
  });

  it('exchangeFor uses the target exchange or the default', () => {
    const d = new TestDriver(ALL);
    expect(d.exchangeFor(new Target({ topic: 't' }))).toBe('openstack');
    expect(d.exchangeFor(new Target({ topic: 't', exchange: 'nova' }))).toBe('nova');
  });

  it('toString shows the redacted URL', () => {
    const s = String(new TestDriver(ALL));
    expect(s).toBe('TestDriver<rabbit://user:***@h:5672/>');
    expect(s).not.toContain('hunter2');
  });
});

describe('priorities', () => {
  it('lists oslo priorities lower-case and recognises them', () => {
    expect(PRIORITIES).toEqual(['audit', 'debug', 'info', 'warn', 'error', 'critical', 'sample']);
    expect(isPriority('info')).toBe(true);
    expect(isPriority('INFO')).toBe(false);
    expect(isPriority(3)).toBe(false);
  });
});

describe('BaseDriver inspection defaults', () => {
  it('tells nothing: inspection() all false, inspectPools rejects with NotSupportedError naming the driver, listRpcTopics resolves undefined', async () => {
    const d = new TestDriver(ALL);
    expect(d.inspection()).toEqual({ listsTopics: false, listsPools: false, consumers: false, backlog: false });
    expect(d.inspection()).toBe(NO_INSPECTION);
    await expect(d.inspectPools({ topic: 't' })).rejects.toThrow(NotSupportedError);
    await expect(d.inspectPools({ topic: 't' })).rejects.toThrow(/test driver/);
    await expect(d.listRpcTopics()).resolves.toBeUndefined();
  });
});
