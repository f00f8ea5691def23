// Runs the BUILT `tidings` binary (dist/cli/main.js) as a child process, as a user would.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../../dist/cli/main.js', import.meta.url));

export interface BinResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Fails with the fix when the binary has not been built (`npm test` builds first). */
export function requireBuiltBinary(): void {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`npm run build\` first (\`npm test\` builds before testing)`);
}

export interface StartOptions {
  /** Written to stdin, which is then closed; without it stdin is /dev/null. */
  input?: string;
  /** Leave stdout unread (paused) until the test reads it, for back-pressure tests. */
  pausedStdout?: boolean;
}

export interface RunningBin {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Starts reading (and collecting) a stdout started with `pausedStdout`. */
  resumeStdout: () => void;
  done: Promise<BinResult>;
}

/** Starts the binary; stdout/stderr are collected on the returned handle. */
export function startBin(args: readonly string[], env: NodeJS.ProcessEnv = {}, options: StartOptions = {}): RunningBin {
  return startProcess(process.execPath, [BIN, ...args], env, options);
}

/**
 * Runs `script` with sh, where the shell function `tidings` runs the built binary: for
 * pipelines such as `tidings listen | head -1`.
 */
export function startShell(script: string, env: NodeJS.ProcessEnv = {}): RunningBin {
  const prelude = 'tidings() { "$TIDINGS_NODE" "$TIDINGS_BIN" "$@"; }\n';
  return startProcess('sh', ['-c', prelude + script], { ...env, TIDINGS_NODE: process.execPath, TIDINGS_BIN: BIN }, {});
}

function startProcess(command: string, args: readonly string[], env: NodeJS.ProcessEnv, options: StartOptions): RunningBin {
  const child = spawn(command, args, {
    // A clean environment: no TIDINGS_TRANSPORT_URL from the caller unless given.
    env: { PATH: process.env.PATH, ...env },
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (options.input !== undefined) child.stdin!.end(options.input);
  let stdout = '';
  let stderr = '';
  const resumeStdout = () => {
    if (child.stdout!.listenerCount('data') === 0) child.stdout!.on('data', (d: string) => (stdout += d));
  };
  child.stdout!.setEncoding('utf8');
  if (!options.pausedStdout) resumeStdout();
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<BinResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, stdout: () => stdout, stderr: () => stderr, resumeStdout, done };
}

/** Runs the binary to completion; kills it (and fails) after `timeoutMs`. */
export async function runBin(args: readonly string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; input?: string } = {}): Promise<BinResult> {
  return finished(startBin(args, options.env, { input: options.input }), options.timeoutMs ?? 20_000, `tidings ${args.join(' ')}`);
}

/** Resolves with the result once `run` exits; kills it (and fails) after `timeoutMs`. */
export async function finished(run: RunningBin, timeoutMs: number, what: string): Promise<BinResult> {
  let timer: NodeJS.Timeout | undefined;
  const killed = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      run.child.kill('SIGKILL');
      reject(new Error(`${what} did not exit within ${timeoutMs} ms; stderr: ${run.stderr()}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([run.done, killed]);
  } finally {
    clearTimeout(timer);
  }
}

/** The non-empty lines of a stream's text. */
export function lines(text: string): string[] {
  return text.split('\n').filter((l) => l.trim() !== '');
}
