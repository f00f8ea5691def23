// A fault test's pool member in a child process (a fixture under test/faults/fixtures run with
// tsx): its stdout JSON lines collected as events, its state for failure messages.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

export interface MemberChild {
  readonly child: ChildProcessWithoutNullStreams;
  /** Every JSON line the child printed, in order. */
  readonly events: Array<Record<string, unknown>>;
  /** Exit status and the tail of stderr (and of non-JSON stdout), for waitFor messages. */
  state(): string;
}

/** Starts `fixture` with `config` as its one JSON argument. */
export function spawnMember(fixture: string, config: Record<string, unknown>): MemberChild {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'pipe'] });
  const events: Array<Record<string, unknown>> = [];
  let buf = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buf += chunk;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        events.push(JSON.parse(line));
      } catch {
        stderr += `[stdout] ${line}\n`;
      }
    }
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return { child, events, state: () => `child exit=${child.exitCode} signal=${child.signalCode}; stderr:\n${stderr.slice(-3000)}` };
}
