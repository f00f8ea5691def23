// The CLI's I/O captured in memory, for running commands in-process with runCli.
import type { CliIO } from '../../src/cli/common.js';

/** A CliIO that collects stdout lines in `lines` and stderr lines in `errors`; stdin is empty. */
export function captureIO(): CliIO & { lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return {
    lines,
    errors,
    out: async (line) => void lines.push(line),
    err: (line) => void errors.push(line),
    readInput: async () => '',
    outputClosed: new AbortController().signal,
    env: {},
  };
}
