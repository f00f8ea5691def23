// The CLI's real I/O (CliIO over process streams): stdout as a flow-controlled line sink whose
// reader may leave at any time (`| head -1`), stderr for status, stdin for `-` arguments.
import type { Readable, Writable } from 'node:stream';
import { OutputClosed, type CliIO } from './common.js';

/** The streams a CliIO works on; the process's own in `processIO()`. */
interface CliStreams {
  stdout: Writable;
  stderr: Writable;
  stdin: Readable;
}

/** A CliIO over `streams`. Installs error listeners, so call it once per stream set. */
function streamIO(streams: CliStreams, env: NodeJS.ProcessEnv): CliIO {
  const closed = new AbortController();
  // Without a listener, the EPIPE of a reader that left is an uncaught exception: a stack trace
  // and exit 1 for what is the reader's normal way of saying "enough".
  streams.stdout.on('error', () => closed.abort());
  // Nobody is left to tell about a broken stderr, and it must not end the command either.
  streams.stderr.on('error', () => {});
  return {
    out(line) {
      if (closed.signal.aborted) return Promise.reject(new OutputClosed('stdout was closed by its reader'));
      return new Promise<void>((resolve, reject) => {
        // The callback runs once the OS took the line (or refused it). Waiting for it is stricter
        // than waiting for 'drain' when write() returns false: nothing piles up in the stream's
        // buffer, so a listener does not acknowledge notifications its reader has not taken.
        streams.stdout.write(line + '\n', (err) => {
          if (!err) return resolve();
          closed.abort();
          reject(new OutputClosed('stdout was closed by its reader', { cause: err }));
        });
      });
    },
    err(line) {
      streams.stderr.write(line + '\n');
    },
    async readInput() {
      streams.stdin.setEncoding('utf8');
      let text = '';
      for await (const chunk of streams.stdin) text += chunk as string;
      return text;
    },
    outputClosed: closed.signal,
    env,
  };
}

let processStreamsIO: CliIO | undefined;

/** The process's stdout, stderr, stdin and environment (created once, on first use). */
export function processIO(): CliIO {
  processStreamsIO ??= streamIO({ stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }, process.env);
  return processStreamsIO;
}
