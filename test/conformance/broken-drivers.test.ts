// Self-test of the suite's delivery-contract cases: the memory driver broken in five ways, one
// per rule the contract states, each registered as a scheme of its own. The case that checks
// the rule MUST fail on its broken copy and pass on the real driver, or the suite lets it through.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { registerDriver, Target, type Context } from 'tidings';
import type { DriverInit, DriverMessage, ListenOptions, PushSource, ReceivedMessage, SendOptions } from 'tidings/driver';
import { memoryConformanceSubject } from 'tidings/testing';
// The built modules tidings/testing runs: the memory driver its broker hooks talk to, and the cases.
import { MemoryDriver } from '../../dist/drivers/memory/index.js';
import { DELIVERY_CASES, type ConformanceCase } from '../../dist/testing/delivery.js';
import { useConformanceEnv } from '../../dist/testing/harness.js';

type Source = PushSource<ReceivedMessage> & { deliveries?: unknown };

/** A memory driver whose listeners' sources are changed by `breakSource` before they open. */
function withBrokenSources(breakSource: (source: Source) => void): typeof MemoryDriver {
  return class extends MemoryDriver {
    protected override openListener<M extends ReceivedMessage>(source: PushSource<M>, subscribe: () => Promise<void> | void, options: ListenOptions & { prefetchSize?: number }) {
      breakSource(source as unknown as Source);
      return super.openListener(source, subscribe, options);
    }
  };
}

/** a: cleanup() only cancels the consumers: unacknowledged messages stay with them for ever. */
const KeepsUnacked = withBrokenSources((source) => {
  source.cleanup = () => source.stop();
});

/** b: every delivery counts as a first one (no redelivery flag, deliveryCount 1). */
const NeverRedelivered = withBrokenSources((source) => {
  source.deliveries = () => 1;
});

/** e: stop() does nothing: the consumers keep taking messages until cleanup. */
const StopIgnored = withBrokenSources((source) => {
  source.stop = () => Promise.resolve();
});

/** c: a cast goes through the default exchange whatever its target says. */
class CastIgnoresExchange extends MemoryDriver {
  protected override doSend(target: Target, ctx: Context, message: DriverMessage, options: SendOptions): Promise<unknown> {
    if (options.waitForReply) return super.doSend(target, ctx, message, options);
    return super.doSend(new Target({ topic: target.topic, server: target.server, fanout: target.fanout }), ctx, message, options);
  }
}

/** d: a cast resolves at once and is published by a later flush, which cleanup drops (a producer not flushed on close). */
class CastResolvesEarly extends MemoryDriver {
  private readonly unflushed = new Set<ReturnType<typeof setTimeout>>();
  protected override doSend(target: Target, ctx: Context, message: DriverMessage, options: SendOptions): Promise<unknown> {
    if (options.waitForReply) return super.doSend(target, ctx, message, options);
    const timer = setTimeout(() => {
      this.unflushed.delete(timer);
      void super.doSend(target, ctx, message, options);
    }, 50);
    this.unflushed.add(timer);
    return Promise.resolve(undefined);
  }
  protected override close(): Promise<void> {
    for (const timer of this.unflushed) clearTimeout(timer);
    this.unflushed.clear();
    return super.close();
  }
}

const caseNamed = (prefix: string): ConformanceCase => {
  const found = DELIVERY_CASES.find((c: ConformanceCase) => c.name.startsWith(prefix));
  if (!found) throw new Error(`no delivery case starts with "${prefix}"`);
  return found;
};

const VARIANTS = [
  { scheme: 'brokena', driver: KeepsUnacked, bug: "cleanup() keeps unacknowledged messages", case: caseNamed('a listener cleaned up with unacknowledged'), fails: /reached the next listener after its cleanup/ },
  { scheme: 'brokenb', driver: NeverRedelivered, bug: 'redelivered/deliveryCount stuck at false/1', case: caseNamed('a requeued notification comes back'), fails: /to deeply equal/ },
  { scheme: 'brokenc', driver: CastIgnoresExchange, bug: "a cast ignores its target's exchange", case: caseNamed("a cast goes through its target's exchange"), fails: /exchange/ },
  { scheme: 'brokend', driver: CastResolvesEarly, bug: 'a cast resolves before it is published', case: caseNamed('a cast resolves only once the broker has it'), fails: /cleaning up its sender lost it/ },
  { scheme: 'brokene', driver: StopIgnored, bug: 'a stopped consumer still takes messages', case: caseNamed('a stopped listener'), fails: /after the first listener's stop\(\) reached the second before the first was cleaned up/ },
] as const;

for (const variant of VARIANTS) {
  const Driver = variant.driver;
  registerDriver(variant.scheme, () => Promise.resolve({ createDriver: (init: DriverInit) => new Driver(init) }));
}

describe('the delivery-contract cases catch a broken driver', () => {
  it('there is one case per broken rule, and one broken copy per case', () => {
    expect(new Set(VARIANTS.map((v) => v.case)).size).toBe(DELIVERY_CASES.length);
  });

  for (const variant of VARIANTS) {
    describe(`${variant.scheme}://: ${variant.bug}`, () => {
      // Short waits: the case fails by running out of them on the broken copy.
      const env = useConformanceEnv(memoryConformanceSubject({ scheme: variant.scheme, timeScale: 0.3 }), `tbroken${randomUUID().slice(0, 8)}`);
      it(`fails "${variant.case.name}"`, async () => {
        const outcome = await variant.case.run(env).then(
          () => 'passed',
          (err: unknown) => err,
        );
        expect(outcome, `the case let "${variant.bug}" through`).toBeInstanceOf(Error);
        expect((outcome as Error).message, 'the case failed, but not on the rule it checks').toMatch(variant.fails);
      });
    });
  }

  describe('memory://, not broken', () => {
    const env = useConformanceEnv(memoryConformanceSubject(), `tbroken${randomUUID().slice(0, 8)}`);
    for (const c of DELIVERY_CASES) it(`passes "${c.name}"`, () => c.run(env));
  });
});
