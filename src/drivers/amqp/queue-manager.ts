// oslo's queue manager (amqpdriver.QManager, `use_queue_manager`): reply and fanout queues named
// `<hostname>:<processname>:<n>` instead of random hex, so a restarted service reuses its queues.
import { closeSync, existsSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidState } from '../../core/errors.js';

/** Longest a name waits for another process holding the counter's lock, ms. */
const LOCK_WAIT_MS = 2000;
/** A lock older than this was left by a process that died holding it. */
const STALE_LOCK_MS = 10_000;

/**
 * Hands out `<hostname>:<processname>:<n>`. `n` lives in `/dev/shm/<hostname>_<processname>_qmanager`
 * as `<process group>:<n>:<group start time>`, oslo's format: processes of one service (one process
 * group) share the counter, so no two get the same name, and it starts over at 1 when the service
 * restarts (a new process group), which is what makes the names come back after a restart.
 * Python's lock (oslo lockutils) is not shared: a Python and a Node process MUST NOT use the same
 * hostname and process name.
 */
export class QueueManager {
  private readonly file: string;
  private readonly group: { readonly pg: number; readonly startTime: number };

  constructor(
    private readonly hostname: string,
    private readonly processname: string,
  ) {
    const dir = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
    this.file = join(dir, `${hostname}_${processname}_qmanager`.replaceAll('/', '_'));
    this.group = processGroup();
  }

  /** The next name, e.g. `node1:nova-api:3`; throws InvalidState when the counter's lock stays taken. */
  next(): string {
    return `${this.hostname}:${this.processname}:${this.withLock(() => this.bump())}`;
  }

  private bump(): number {
    const { pg, startTime } = this.group;
    let counter = 0;
    try {
      const [filePg, fileCounter, fileStart] = readFileSync(this.file, 'utf8').trim().split(':').map(Number);
      if (filePg === pg && fileStart === startTime && Number.isInteger(fileCounter)) counter = fileCounter;
    } catch {
      // no counter yet: start at 1
    }
    counter += 1;
    writeFileSync(this.file, `${pg}:${counter}:${startTime}`);
    return counter;
  }

  private withLock<T>(fn: () => T): T {
    const lock = `${this.file}.lock`;
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      try {
        closeSync(openSync(lock, 'wx'));
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        if (isStale(lock)) rmSync(lock, { force: true });
        else if (Date.now() > deadline) throw new InvalidState(`use_queue_manager: the lock ${lock} is held by another process`);
        else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
      }
    }
    try {
      return fn();
    } finally {
      rmSync(lock, { force: true });
    }
  }
}

function isStale(lock: string): boolean {
  try {
    return Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS;
  } catch {
    return false;
  }
}

/** This process's group and the group leader's start time (jiffies since boot), as oslo reads them from /proc. */
function processGroup(): { pg: number; startTime: number } {
  const fields = (pid: number | 'self') => readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ');
  try {
    const pg = Number(fields('self')[2]) || process.pid;
    return { pg, startTime: Number(fields(pg)[19]) };
  } catch {
    return { pg: process.pid, startTime: 0 };
  }
}
