// Instructions over a child process's measured window, counted by valgrind's callgrind: repeatable
// for the same code and inputs where wall-clock rates on this 2-core machine move by ±10% or more.
// The parent runs the child under callgrind; the child says "warm" as its window opens and "done"
// as it closes, each time waiting for a line on stdin, while the parent zeroes the counters
// (`callgrind_control -z`) and reads them (`-e Ir`, every thread). Start-up, module loading,
// connecting and the warm-up are left out. Used by `npm run bench -- --instructions`,
// `npm run bench:cost -- --instructions` and the contract ladders' `--instructions` (ladder.ts).
import { execFileSync, spawn } from 'node:child_process';
import { readSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** The repository's root: where the counted children run. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** tsx's loader, for `node --import` in a child that runs TypeScript. */
export const TSX = fileURLToPath(new URL('../node_modules/tsx/dist/esm/index.mjs', import.meta.url));

/** The words of the handshake, in the order a child says them. */
export type Mark = 'warm' | 'done';

/** What one child run under callgrind gave. */
export interface CountedRun {
  /** Instructions of every thread between "warm" and "done". */
  instructions: number;
  /** The child's last line on stdout (its measurement, as JSON). */
  lastLine: string;
}

/**
 * Runs `command` (a Node command line) under callgrind in `cwd` with `env` and counts the instructions
 * between its "warm" and "done". V8's compiler and GC threads would add their instructions
 * whenever they happen to run, so `command` should carry `--single-threaded`: everything then
 * runs on the main thread, and the same code counts the same.
 */
export async function countInstructions(command: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<CountedRun> {
  const child = spawn('valgrind', ['--tool=callgrind', '--callgrind-out-file=/dev/null', ...command], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const control = (...args: string[]) => execFileSync('callgrind_control', [...args, String(child.pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  let instructions: number | undefined;
  let lastLine = '';
  for await (const line of createInterface({ input: child.stdout })) {
    if (line === 'warm') control('-z');
    else if (line === 'done') instructions = [...control('-e', 'Ir').matchAll(/^\s*Th \d+\s+([\d,]+)/gm)].reduce((sum, m) => sum + Number(m[1].replace(/,/g, '')), 0);
    else {
      if (line.trim()) lastLine = line;
      continue;
    }
    child.stdin.write('\n');
  }
  const code = await new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', resolve)));
  if (code !== 0 || instructions === undefined) throw new Error(`callgrind run failed (${code}): ${stderr.split('\n').slice(-8).join('\n')}`);
  return { instructions, lastLine };
}

/** A Node command line running the TypeScript `script` with `args`, V8 on one thread, as countInstructions wants it. */
export function singleThreadedTsx(script: string, args: readonly string[]): string[] {
  return [process.execPath, '--single-threaded', '--import', TSX, script, ...args];
}

/**
 * Counts every side's child (`[side, command]`) `rounds` times, in the listed order in odd rounds
 * and reversed in even ones, in `env`; each child's last line is its measurement (`{ops}` at
 * least). Returns each side's instructions per operation, round by round.
 */
export async function countRounds<K>(sides: ReadonlyArray<readonly [K, readonly string[]]>, rounds: number, env: NodeJS.ProcessEnv, onRun?: (side: K, round: number, perOp: number) => void): Promise<Map<K, number[]>> {
  const counts = new Map<K, number[]>(sides.map(([side]) => [side, []]));
  for (let r = 0; r < rounds; r++) {
    for (const [side, command] of r % 2 === 0 ? sides : [...sides].reverse()) {
      const run = await countInstructions(command, ROOT, env);
      const { ops } = JSON.parse(run.lastLine) as { ops?: number };
      if (!(ops !== undefined && ops > 0)) throw new Error(`${String(side)} measured no operations (${command.slice(4).join(' ')})`);
      const perOp = Math.round(run.instructions / ops);
      counts.get(side)!.push(perOp);
      onRun?.(side, r, perOp);
    }
  }
  return counts;
}

/**
 * The child's side of the handshake: says `mark` on stdout and waits for the parent's line on
 * stdin, both by blocking system calls on the file descriptors. Through `process.stdout` and
 * `process.stdin` (pipe streams, first read here) the handshake made V8 drop the optimized code of
 * the stream functions the measured broker sockets share with them ("wrong map"), and of what had
 * inlined them, so every window began by compiling again: 16-17 functions deoptimized and 38-45
 * optimized in a window of 20,000 sequential Redis calls after 20,000, against none and 4-5 now.
 */
export function sayMark(mark: Mark): Promise<void> {
  writeSync(1, `${mark}\n`);
  const byte = Buffer.alloc(1);
  for (;;) {
    let n: number;
    try {
      n = readSync(0, byte, 0, 1, null);
    } catch (err) {
      // A non-blocking stdin (not the parent's pipe): wait a millisecond and read again.
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
      Atomics.wait(PAUSE, 0, 0, 1);
      continue;
    }
    if (n === 0) throw new Error(`the parent closed stdin before answering "${mark}"`);
    if (byte[0] === 0x0a) return Promise.resolve();
  }
}

/** What `Atomics.wait` sleeps on between reads of a non-blocking stdin. */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));
