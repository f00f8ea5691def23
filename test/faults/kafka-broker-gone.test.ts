// Stopping on Kafka when the broker is gone: `tidings serve` told SIGTERM as its broker dies
// exits within a bound without spinning, and an in-process server whose broker died earlier
// backs off while it waits and stops within its deadline. Uses only this file's own mock cluster
// (killed and restarted here); no other broker is touched.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRpcClient, getRpcServer, getRpcTransport, Target, type Context } from '../../src/index.js';
import { startKafkaMock, type KafkaTestBroker } from '../support/kafka-broker.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { finished, requireBuiltBinary, runBin, startBin } from '../unit/cli/bin.js';

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

/** utime + stime of a process in seconds, from /proc/<pid>/stat (clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function cpuSecondsSince(start: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(start);
  return (u.user + u.system) / 1e6;
}

describe('Kafka with the broker gone', () => {
  it('tidings serve: SIGTERM as the broker dies; exits within the bound, CPU stays small', async () => {
    const topic = uniqueName('gone');
    // The default URL options, as the operator ran it.
    const env = { TIDINGS_TRANSPORT_URL: broker.url };
    const serve = startBin(['serve', '--topic', topic, '--server', 's1'], env);
    try {
      await waitFor(() => serve.stderr().includes('serving on') || serve.child.exitCode !== null, { timeoutMs: 30_000, intervalMs: 50, message: 'tidings serve started' });
      expect(serve.stderr()).toContain('serving on');
      const call = await runBin(['call', 'ping', '--topic', topic, '--timeout', '20000'], { env, timeoutMs: 30_000 });
      expect([call.code, call.stdout.trim()]).toEqual([0, '"pong"']);

      const pid = serve.child.pid!;
      const cpuBefore = cpuSeconds(pid);
      let cpuLast = cpuBefore;
      // /proc/<pid> disappears once the child is reaped: the last sample is the CPU it used.
      const sampler = setInterval(() => {
        try {
          cpuLast = cpuSeconds(pid);
        } catch {
          /* exited */
        }
      }, 100);
      const killed = broker.kill();
      serve.child.kill('SIGTERM');
      const started = Date.now();
      const result = await finished(serve, EXIT_BOUND_MS, 'tidings serve after SIGTERM with the broker gone').finally(() => clearInterval(sampler));
      await killed;
      expect(Date.now() - started).toBeLessThan(EXIT_BOUND_MS);
      expect(cpuLast - cpuBefore).toBeLessThan(CPU_BOUND_S);
      expect(result.stderr).toContain('SIGTERM: stopping (in-flight calls finish)');
      expect(result.stderr).toContain('stopped');
      expect(result.code).toBe(0);
    } finally {
      if (serve.child.exitCode === null && serve.child.signalCode === null) serve.child.kill('SIGKILL');
      await serve.done.catch(() => undefined);
    }
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
      const idleCpu = process.cpuUsage();
      const idleStart = Date.now();
      await new Promise((r) => setTimeout(r, 3000));
      // The timer fired on time: nothing starved the event loop.
      expect(Date.now() - idleStart).toBeLessThan(4000);
      expect(cpuSecondsSince(idleCpu)).toBeLessThan(1);

      const stopCpu = process.cpuUsage();
      const t0 = Date.now();
      await server.stop();
      await server.wait();
      await Promise.all([st.cleanup(), ct.cleanup()]);
      expect(Date.now() - t0).toBeLessThan(EXIT_BOUND_MS);
      expect(cpuSecondsSince(stopCpu)).toBeLessThan(CPU_BOUND_S);
    } finally {
      await Promise.allSettled([st.cleanup(), ct.cleanup()]);
    }
  }, 90_000);
});
