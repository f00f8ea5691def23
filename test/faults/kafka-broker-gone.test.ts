// Stopping on Kafka when the broker is gone: `tidings serve` told SIGTERM as its broker dies
// exits within a bound without spinning, and an in-process server whose broker died earlier
// backs off while it waits and stops within its deadline. Uses only this file's own mock cluster
// (killed and restarted here); no other broker is touched.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRpcClient, getRpcServer, getRpcTransport, Target, type Context } from '../../src/index.js';
import { startKafkaMock, type KafkaTestBroker } from '../support/kafka-broker.js';
import { uniqueName } from '../../src/testing/wait.js';
import { requireBuiltBinary } from '../unit/cli/bin.js';
import { idleWithBrokerGone, measured, serveThenBrokerGone } from '../support/broker-gone.js';

/** How long stopping may take with the broker gone (kafkajs 2.2.4 before the fix: never, at ~95% of a core). */
const EXIT_BOUND_MS = 15_000;
/** CPU seconds stopping may burn; the spin burnt about one per wall-clock second. */
const CPU_BOUND_S = 2;

let broker: KafkaTestBroker;

beforeAll(async () => {
  requireBuiltBinary();
  broker = await startKafkaMock({ brokers: 3, alwaysMock: true });
}, 30_000);

afterAll(async () => {
  await broker?.stop();
});

describe('Kafka with the broker gone', () => {
  it('tidings serve: SIGTERM as the broker dies; exits within the bound, CPU stays small', async () => {
    // The default URL options, as the operator ran it.
    await serveThenBrokerGone('kafka', { TIDINGS_TRANSPORT_URL: broker.url }, () => broker.kill(), { exitBoundMs: EXIT_BOUND_MS, cpuBoundS: CPU_BOUND_S });
  }, 90_000);

  it('in process: the broker died earlier; waiting backs off, stop/wait/cleanup finish within the deadline', async () => {
    await broker.restart();
    const url = `${broker.url}/?shutdown_timeout_ms=3000&rpc_max_wait_ms=20`;
    const topic = uniqueName('gone');
    const st = await getRpcTransport(url);
    const ct = await getRpcTransport(url);
    const server = getRpcServer(st, new Target({ topic, server: 's1' }), [{ echo: (_c: Context, a: unknown) => a }]);
    try {
      await server.start();
      expect(await getRpcClient(ct, new Target({ topic }), { timeout: 20_000 }).call({}, 'echo', { a: 1 })).toEqual({ a: 1 });
      await broker.kill();
      // Reconnect attempts with the broker gone: they back off, so an idle wait costs little CPU.
      await idleWithBrokerGone();
      const stop = await measured(async () => {
        await server.stop();
        await server.wait();
        await Promise.all([st.cleanup(), ct.cleanup()]);
      }, EXIT_BOUND_MS);
      expect(stop.cpuMs).toBeLessThan(CPU_BOUND_S * 1000);
    } finally {
      await Promise.allSettled([st.cleanup(), ct.cleanup()]);
    }
  }, 90_000);
});
