// Runs a child process to completion for tests that drive a program as a user would (examples,
// the packed package), collecting its output and killing it past a deadline.
import { spawn } from 'node:child_process';

export interface ProcessResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunProcessOptions {
  cwd?: string;
  /** The whole environment of the child (not merged with the caller's). @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Kill the child and reject after this many ms. @default 25000 */
  timeoutMs?: number;
}

/** Runs `command args`; resolves with its exit and output, rejects if it cannot start or overruns. */
export function runProcess(command: string, args: readonly string[], options: RunProcessOptions = {}): Promise<ProcessResult> {
  const timeoutMs = options.timeoutMs ?? 25_000;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} did not exit within ${timeoutMs} ms; stderr: ${stderr}`));
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
