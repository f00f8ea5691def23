// Stopping with the broker gone, as an operator meets it: `tidings serve` serves one call, then its
// broker goes away as it is told SIGTERM; it must exit within a bound without spinning. One
// procedure for every driver's fault test, with the CPU the orphaned process burnt measured.
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { getNotificationListener, getNotificationTransport, getRpcClient, getRpcServer, getRpcTransport, Notifier, Target, type Context } from '../../src/index.js';
import { deferred, uniqueName, waitFor } from '../../src/testing/wait.js';
import { finished, runBin, startBin } from '../unit/cli/bin.js';

/** utime + stime of a process in seconds, from /proc/<pid>/stat (clock ticks of 1/100 s). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds (user + system) this process used since `start`. */
export function cpuSecondsSince(start: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(start);
  return (u.user + u.system) / 1e6;
}

/** What {@link serveThenBrokerGone} measured. */
export interface GoneFigures {
  /** From SIGTERM to the process' exit. */
  exitMs: number;
  /** CPU the process used from SIGTERM to its exit. */
  cpuMs: number;
}

/** Bounds of {@link serveThenBrokerGone}. */
export interface GoneBounds {
  /** From SIGTERM to the exit. */
  exitBoundMs: number;
  /** CPU seconds from the broker's going to the exit. */
  cpuBoundS: number;
  /** SIGTERM this long after the broker has gone (reconnecting meanwhile), not at the same moment. @default 0 */
  sigtermAfterMs?: number;
  /** The topic served (a prefix the test cleans up after). @default a unique `gone-…` name */
  topic?: string;
}

/**
 * Starts `tidings serve` with `env`, calls `ping` on it once, then runs `goneAway()` (the broker
 * disappears) and sends SIGTERM at the same moment, or `sigtermAfterMs` after it has gone.
 * Asserts that it says it stops, exits 0 within `exitBoundMs` of the SIGTERM and burns less than
 * `cpuBoundS` CPU seconds from the broker's going to its exit; logs and returns the figures.
 */
export async function serveThenBrokerGone(what: string, env: NodeJS.ProcessEnv, goneAway: () => Promise<unknown>, bounds: GoneBounds): Promise<GoneFigures> {
  const topic = bounds.topic ?? uniqueName('gone');
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
    const gone = goneAway();
    if (bounds.sigtermAfterMs) {
      await gone;
      await new Promise((r) => setTimeout(r, bounds.sigtermAfterMs));
    }
    serve.child.kill('SIGTERM');
    const started = Date.now();
    const result = await finished(serve, bounds.exitBoundMs, `tidings serve after SIGTERM with the broker gone (${what})`).finally(() => clearInterval(sampler));
    const figures = { exitMs: Date.now() - started, cpuMs: Math.round((cpuLast - cpuBefore) * 1000) };
    await gone;
    const when = bounds.sigtermAfterMs ? `${bounds.sigtermAfterMs} ms after the broker went` : 'as the broker went';
    console.log(`broker gone (${what}): tidings serve got SIGTERM ${when} and exited ${figures.exitMs} ms later, using ${figures.cpuMs} ms of CPU since the broker went`);
    expect(figures.exitMs).toBeLessThan(bounds.exitBoundMs);
    expect(figures.cpuMs).toBeLessThan(bounds.cpuBoundS * 1000);
    expect(result.stderr).toContain('SIGTERM: stopping (in-flight calls finish)');
    expect(result.stderr).toContain('stopped');
    expect(result.code).toBe(0);
    return figures;
  } finally {
    if (serve.child.exitCode === null && serve.child.signalCode === null) serve.child.kill('SIGKILL');
    await serve.done.catch(() => undefined);
  }
}

/**
 * Waits `ms` with the broker gone and asserts that the process backs off meanwhile: the timer
 * fires on time (nothing starves the event loop) and less than `cpuBoundS` CPU seconds are used.
 * Returns the CPU used, in ms.
 */
export async function idleWithBrokerGone(ms = 3000, cpuBoundS = 1): Promise<number> {
  const idleCpu = process.cpuUsage();
  const idleStart = Date.now();
  await new Promise((r) => setTimeout(r, ms));
  expect(Date.now() - idleStart).toBeLessThan(ms + 1000);
  const used = cpuSecondsSince(idleCpu);
  expect(used).toBeLessThan(cpuBoundS);
  return Math.round(used * 1000);
}

/**
 * Runs `stop` and returns how long it took and the CPU it used, both in ms; fails once it has
 * run `boundMs` (a hang fails the test instead of stalling it).
 */
export async function measured(stop: () => Promise<unknown>, boundMs: number): Promise<GoneFigures> {
  const cpu = process.cpuUsage();
  const t0 = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const overrun = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`stopping with the broker gone did not finish within ${boundMs} ms`)), boundMs)));
  try {
    await Promise.race([stop(), overrun]);
  } finally {
    clearTimeout(timer);
  }
  return { exitMs: Date.now() - t0, cpuMs: Math.round(cpuSecondsSince(cpu) * 1000) };
}

/**
 * An RPC server, a notification listener and a caller on `url`, each shown working; then
 * `breakBroker()` (which returns a figure to report, such as idle CPU ms), then the three
 * transports closed with `deadlineMs`. A close may reject (a drain past its deadline) but all must
 * end within `boundMs` using less than `cpuBoundS` CPU seconds.
 */
export async function serveAndListenThen(
  url: string,
  topic: string,
  breakBroker: () => Promise<number>,
  bounds: { deadlineMs: number; boundMs: number; cpuBoundS: number },
): Promise<{ idleCpuMs: number; close: GoneFigures }> {
  const st = await getRpcTransport(url);
  const ct = await getRpcTransport(url);
  const nt = await getNotificationTransport(url);
  const transports = [st, ct, nt];
  try {
    const server = getRpcServer(st, new Target({ topic, server: 's1' }), [{ echo: (_c: Context, a: unknown) => a }]);
    await server.start();
    const got = deferred<unknown>();
    const listener = getNotificationListener(nt, [new Target({ topic })], [{ info: (_c: Context, _p: unknown, _e: string, payload: unknown) => got.resolve(payload) }]);
    await listener.start();
    expect(await getRpcClient(ct, new Target({ topic }), { timeout: 20_000 }).call({}, 'echo', { a: 1 })).toEqual({ a: 1 });
    await new Notifier(nt, { topics: [topic] }).info({}, 'gone.test', { n: 1 });
    expect(await got.promise).toEqual({ n: 1 });

    const idleCpuMs = await breakBroker();
    const close = await measured(() => Promise.allSettled(transports.map((t) => t.close({ deadlineMs: bounds.deadlineMs }))), bounds.boundMs);
    expect(close.cpuMs).toBeLessThan(bounds.cpuBoundS * 1000);
    return { idleCpuMs, close };
  } finally {
    // Not awaited: on a transport that cannot close, this would hang the file instead of failing the test.
    void Promise.allSettled(transports.map((t) => t.cleanup()));
  }
}
