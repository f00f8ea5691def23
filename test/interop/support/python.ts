// Spawns and stops the Python oslo.messaging scripts of test/interop/py and speaks their
// JSON-lines protocol: events and replies on stdout, commands on stdin.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Debian's interpreter with python3-oslo.messaging; never the pyenv `python3` on PATH. */
export const PYTHON = process.env.TIDINGS_INTEROP_PYTHON ?? '/usr/bin/python3';
const PY_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'py');

/** Throws (failing the suite, never skipping) when the interpreter cannot import oslo_messaging. */
export function requireOsloMessaging(): string {
  const r = spawnSync(PYTHON, ['-c', 'import oslo_messaging, importlib.metadata as m; print(m.version("oslo.messaging"))'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (r.status !== 0) {
    const why = r.error ? r.error.message : (r.stderr || '').trim().split('\n').pop();
    throw new Error(
      `Python oslo.messaging is not importable by ${PYTHON} (${why}). ` +
        'Install it with `DEBIAN_FRONTEND=noninteractive apt-get install -y python3-oslo.messaging` (Debian 12 ships 14.0.3).',
    );
  }
  return r.stdout.trim();
}

export type PyEvent = Record<string, any>;

/** One running script. Every stdout line is parsed as JSON and kept in `events`. */
export class PyProcess {
  readonly events: PyEvent[] = [];
  readonly stderr: string[] = [];
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;
  private listeners: Array<() => void> = [];

  constructor(
    readonly script: string,
    config: Record<string, unknown>,
  ) {
    this.child = spawn(PYTHON, ['-u', join(PY_DIR, script), JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'pipe'] });
    let buf = '';
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        try {
          this.events.push(JSON.parse(line));
        } catch {
          this.stderr.push(`[non-JSON stdout] ${line}`);
        }
      }
      this.wake();
    });
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr.push(chunk);
      if (this.stderr.length > 500) this.stderr.splice(0, this.stderr.length - 500);
    });
    this.child.stdin.on('error', () => {});
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code) => {
        this.exitCode = code;
        this.wake();
        resolve(code);
      });
      this.child.once('error', (err) => {
        this.stderr.push(String(err));
        this.exitCode = -1;
        this.wake();
        resolve(-1);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Resolves with the first event (old or new) matching `pred`; rejects at the deadline or if the process exits. */
  waitForEvent(pred: (e: PyEvent) => boolean, timeoutMs = 20_000, what = 'event'): Promise<PyEvent> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        const found = this.events.find(pred);
        if (found) {
          done();
          resolve(found);
          return true;
        }
        if (this.exitCode !== undefined) {
          done();
          reject(new Error(`${this.script} exited (code ${this.exitCode}) before ${what}; stderr tail:\n${this.stderrTail()}`));
          return true;
        }
        return false;
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${this.script}: no ${what} within ${timeoutMs} ms; stderr tail:\n${this.stderrTail()}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.listeners = this.listeners.filter((l) => l !== listener);
      };
      const listener = () => void check();
      if (!check()) this.listeners.push(listener);
    });
  }

  /** Waits for the script's `{"event":"ready"}` line. */
  ready(timeoutMs = 30_000): Promise<PyEvent> {
    return this.waitForEvent((e) => e.event === 'ready', timeoutMs, 'READY line');
  }

  /** Writes one JSON command line to stdin. */
  send(command: Record<string, unknown>): void {
    this.child.stdin.write(JSON.stringify(command) + '\n');
  }

  /** Closes stdin (the script's clean exit), then SIGTERM, then SIGKILL, each with a deadline. */
  async stop(timeoutMs = 15_000): Promise<void> {
    if (this.exitCode !== undefined) return;
    this.child.stdin.end();
    if (await this.exitsWithin(timeoutMs)) return;
    this.child.kill('SIGTERM');
    if (await this.exitsWithin(5000)) return;
    this.child.kill('SIGKILL');
    await this.exitsWithin(5000);
  }

  stderrTail(lines = 30): string {
    return this.stderr.join('').split('\n').slice(-lines).join('\n');
  }

  private async exitsWithin(ms: number): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
    const ok = await Promise.race([this.exited.then(() => true as const), timeout]);
    clearTimeout(timer);
    return ok;
  }

  private wake(): void {
    for (const l of [...this.listeners]) l();
  }
}

/** What a Python exception looked like on the Python side (see harness.error_info). */
export interface PyErrorInfo {
  type: string;
  module: string;
  message: string;
  is_remote_error: boolean;
  is_messaging_timeout: boolean;
  is_no_such_method: boolean;
  is_unsupported_version: boolean;
  is_value_error: boolean;
  args: unknown[];
  exc_type?: string;
  value?: string;
  traceback?: string[];
  method?: string;
  version?: string;
}

export type PyReply = { ok: true; result: any } | { ok: false; error: PyErrorInfo };

export interface PyTarget {
  topic: string;
  server?: string;
  fanout?: boolean;
  namespace?: string;
  version?: string;
  exchange?: string;
}

/** py/client.py: RPC calls/casts and notifications issued by Python on request. */
export class PyClient extends PyProcess {
  private nextId = 1;

  /** `rabbit`: `[oslo_messaging_rabbit]` overrides, e.g. `{ kombu_compression: 'gzip' }`. */
  constructor(url: string, deadlineS = 300, rabbit?: Record<string, unknown>) {
    super('client.py', { url, deadline_s: deadlineS, rabbit });
  }

  async request(command: Record<string, unknown>, timeoutMs = 30_000): Promise<PyReply> {
    const id = this.nextId++;
    this.send({ ...command, id });
    const reply = await this.waitForEvent((e) => e.id === id, timeoutMs, `reply to ${String(command.op)} #${id}`);
    return reply as unknown as PyReply;
  }

  /** `extra.timeout` and `extra.callMonitorTimeout` are in seconds, as Python takes them. */
  call(target: PyTarget, ctx: Record<string, unknown>, method: string, args: Record<string, unknown> = {}, extra: { timeout?: number; callMonitorTimeout?: number; allowedRemoteExmods?: string[] } = {}): Promise<PyReply> {
    return this.request({
      op: 'call',
      target,
      ctx,
      method,
      args,
      timeout: extra.timeout ?? 10,
      call_monitor_timeout: extra.callMonitorTimeout,
      allowed_remote_exmods: extra.allowedRemoteExmods ?? [],
    });
  }

  cast(target: PyTarget, ctx: Record<string, unknown>, method: string, args: Record<string, unknown> = {}): Promise<PyReply> {
    return this.request({ op: 'cast', target, ctx, method, args });
  }

  notify(n: { driver: 'messaging' | 'messagingv2'; topics: string[]; publisherId: string; priority: string; eventType: string; payload: unknown; ctx: Record<string, unknown> }): Promise<PyReply> {
    return this.request({
      op: 'notify',
      driver: n.driver,
      topics: n.topics,
      publisher_id: n.publisherId,
      priority: n.priority,
      event_type: n.eventType,
      payload: n.payload,
      ctx: n.ctx,
    });
  }
}

/** Starts a Python script and waits for READY; stops it if READY never comes. */
export async function startPy<T extends PyProcess>(proc: T, timeoutMs = 30_000): Promise<T> {
  try {
    await proc.ready(timeoutMs);
    return proc;
  } catch (err) {
    await proc.stop(2000);
    throw err;
  }
}
