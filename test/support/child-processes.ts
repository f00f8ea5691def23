// Throwaway broker processes for tests (redis-server, RabbitMQ nodes): free loopback ports, a
// spawned child whose exit is awaited, and leftovers (children, temp dirs) cleaned up however the
// test process goes. Shared by redis-servers.ts and rabbit-node.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const HOST = '127.0.0.1';
/** Ports of the shared brokers (Redis, RabbitMQ AMQP and distribution, epmd): never handed out. */
const SHARED_PORTS = new Set([6379, 5672, 25672, 4369]);

// --- leftovers: every live child is killed when this process goes, however it goes -----------

const live = new Set<ChildProcess>();
const liveDirs = new Set<string>();
let hooksInstalled = false;
let watchdogFile: string | undefined;

function killLeftovers(): void {
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true });
  liveDirs.clear();
  syncWatchdog();
}

/** Writes the pids and dirs the watchdog must clean up if this process dies without its hooks (SIGKILL). */
function syncWatchdog(): void {
  if (!watchdogFile) return;
  const pids = [...live].map((c) => c.pid).filter((p): p is number => p !== undefined);
  try {
    writeFileSync(watchdogFile, `${pids.join('\n')}\n`);
    writeFileSync(`${watchdogFile}.dirs`, `${[...liveDirs].join('\n')}\n`);
  } catch {
    // the watchdog dir went away: nothing left to tell it
  }
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', killLeftovers);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      killLeftovers();
      // Alone on this signal we replaced Node's default (exit): restore it and re-raise.
      if (process.listenerCount(signal) === 1) {
        process.removeListener(signal, onSignal);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, onSignal);
  }
  // A SIGKILLed test worker runs no hook: one detached shell per process outlives it, and once
  // this pid is gone kills the servers listed in the file and removes their dirs.
  const dir = mkdtempSync(join(tmpdir(), 'tidings-watch-'));
  watchdogFile = join(dir, 'pids');
  writeFileSync(watchdogFile, '');
  writeFileSync(`${watchdogFile}.dirs`, '');
  const script = 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; xargs -r kill -9 < "$2" 2>/dev/null; xargs -r rm -rf < "$2.dirs"; rm -rf "$3"';
  const watchdog = spawn('sh', ['-c', script, 'tidings-watchdog', String(process.pid), watchdogFile, dir], { detached: true, stdio: 'ignore' });
  watchdog.on('error', () => {});
  watchdog.unref();
}

/** A temp dir `tidings-<prefix>-XXXX` removed with the leftovers unless {@link removeTempDir} came first. */
export function makeTempDir(prefix: string): string {
  installHooks();
  const dir = mkdtempSync(join(tmpdir(), `tidings-${prefix}-`));
  liveDirs.add(dir);
  syncWatchdog();
  return dir;
}

/** Removes a dir from {@link makeTempDir} (or one handed to {@link trackTempDir}). */
export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  liveDirs.delete(dir);
  syncWatchdog();
}

/** Registers a dir made elsewhere for removal with the leftovers. */
export function trackTempDir(dir: string): void {
  installHooks();
  liveDirs.add(dir);
  syncWatchdog();
}

// --- one child process --------------------------------------------------------------------------

/** Options of {@link spawnTracked}. */
export interface SpawnTrackedOptions {
  cwd: string;
  /** stdout and stderr are appended to this file. */
  stdioFile: string;
  /** @default process.env */
  env?: NodeJS.ProcessEnv;
}

/** A child started by {@link spawnTracked}: killed with the leftovers, its exit awaitable. */
export interface TrackedChild {
  readonly pid: number | undefined;
  /** Settles once the child exited (or could not start). */
  readonly exited: Promise<void>;
  /** Why it could not start (the binary is missing...), once known. */
  readonly spawnError: Error | undefined;
  /** `code N` or `signal S` once it exited. */
  readonly exitInfo: string | undefined;
  readonly running: boolean;
  /** Sends `signal` and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGTERM, SIGKILL after `graceMs`, and waits for the exit. */
  terminate(graceMs?: number): Promise<void>;
}

/** Spawns `command args` with its output in a file; a forgotten child never keeps the test worker alive. */
export function spawnTracked(command: string, args: readonly string[], options: SpawnTrackedOptions): TrackedChild {
  installHooks();
  const out = openSync(options.stdioFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', out, out] });
  } finally {
    closeSync(out);
  }
  child.unref();
  live.add(child);
  syncWatchdog();
  let spawnError: Error | undefined;
  let exitInfo: string | undefined;
  const exited = new Promise<void>((resolve) => {
    child.on('error', (err) => {
      spawnError = err;
      resolve();
    });
    child.once('exit', (code, signal) => {
      exitInfo = signal ? `signal ${signal}` : `code ${code}`;
      resolve();
    });
  }).then(() => {
    live.delete(child);
    syncWatchdog();
  });
  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    if (spawnError || exitInfo) return;
    child.kill(signal);
    await exited;
  };
  return {
    get pid() {
      return child.pid;
    },
    exited,
    get spawnError() {
      return spawnError;
    },
    get exitInfo() {
      return exitInfo;
    },
    get running() {
      return !spawnError && !exitInfo;
    },
    kill,
    async terminate(graceMs = 5000) {
      if (spawnError || exitInfo) return;
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const graceful = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), graceMs)))]);
      clearTimeout(timer);
      if (!graceful) await kill('SIGKILL');
    },
  };
}

// --- ports, polling, logs -----------------------------------------------------------------------

const handedOut = new Set<number>();

/** `n` distinct free loopback ports (bound together on port 0, so the kernel picks distinct ones), never a shared broker's. */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n + 2 }, () => new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
      const s = createServer();
      s.once('error', reject);
      s.listen(0, HOST, () => resolve(s));
    })),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  // Two spares so that ports this process already gave out (and the shared ones) can be skipped.
  const chosen = ports.filter((p) => !SHARED_PORTS.has(p) && !handedOut.has(p)).slice(0, n);
  if (chosen.length < n) return freePorts(n);
  for (const p of chosen) handedOut.add(p);
  return chosen;
}

/** Polls `cond` until truthy or the deadline; the error names `what` and the last failure. */
export async function pollUntil<T>(what: string, timeoutMs: number, cond: () => Promise<T | undefined | false>, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await cond();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) throw new Error(`${what}: not within ${timeoutMs} ms${last ? ` (last error: ${String((last as Error).message ?? last)})` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** The last `lines` lines of `file`, or '' when it does not exist. */
export function fileTail(file: string, lines: number): string {
  if (!existsSync(file)) return '';
  return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}
