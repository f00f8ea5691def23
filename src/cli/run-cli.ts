// The command table of `tidings` and its dispatcher: one command per file; failures become one
// stderr line and an exit status (see EXIT in common.ts). main.ts is the process entry.
import { readFileSync } from 'node:fs';
import { callCommand, castCommand } from './call.js';
import { consoleCommand } from './console.js';
import { EXIT, OutputClosed, describeFailure, type CliIO, type Command } from './common.js';
import { deadLettersCommand } from './dead-letters.js';
import { demoCommand } from './demo.js';
import { listenCommand } from './listen.js';
import { notifyCommand } from './notify.js';
import { processIO } from './process-io.js';
import { serveCommand } from './serve.js';

export const COMMANDS: readonly Command[] = [callCommand, castCommand, notifyCommand, listenCommand, serveCommand, deadLettersCommand, consoleCommand, demoCommand];

const TOP_HELP = `Usage: tidings <command> [options]

oslo.messaging-style RPC and notifications from the command line.

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(12)} ${c.summary}`).join('\n')}

Run \`tidings <command> --help\` for a command's options; \`tidings --version\` (-V) prints
the version.
The transport URL comes from --url, else $TIDINGS_TRANSPORT_URL, else memory://.
memory:// is in-process and no other process sees it: \`call\` refuses it; cast, notify,
listen and serve work on it but warn on stderr. Use a broker URL such as
rabbit://guest:guest@127.0.0.1:5672/ to talk to other processes.
A JSON argument given as - is read from stdin.

Exit status: 0 ok (also when the reader of stdout goes away, as with | head), 1 failure,
2 bad input (including a URL scheme no driver is registered for), 3 timeout, 4 remote error.`;

/** The package's version, from the package.json above the built tree (dist/cli/ or src/cli/). */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return String(pkg.version);
}

/** Runs the CLI with `argv` (without node and script) and resolves with the exit status. */
export async function runCli(argv: readonly string[], io: CliIO = processIO()): Promise<number> {
  const [name, ...rest] = argv;
  const command = COMMANDS.find((c) => c.name === name);
  try {
    return await (command ? runCommand(command, rest, io) : runTopLevel(name, rest, io));
  } catch (err) {
    // The reader of stdout has what it wanted; that is how `| head` says so, not a failure.
    if (err instanceof OutputClosed) return EXIT.OK;
    const { line, code } = describeFailure(err);
    io.err(`tidings${command ? ` ${command.name}` : ''}: ${line}`);
    return code;
  }
}

async function runTopLevel(name: string | undefined, rest: readonly string[], io: CliIO): Promise<number> {
  if (name === undefined) {
    io.err(TOP_HELP);
    return EXIT.USAGE;
  }
  if (name === '--version' || name === '-V') {
    await io.out(packageVersion());
    return EXIT.OK;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? COMMANDS.find((c) => c.name === rest[0]) : undefined;
    await io.out(topic ? topic.help : TOP_HELP);
    return EXIT.OK;
  }
  io.err(`tidings: unknown command ${JSON.stringify(name)}; commands: ${COMMANDS.map((c) => c.name).join(', ')} (see tidings --help)`);
  return EXIT.USAGE;
}

async function runCommand(command: Command, rest: readonly string[], io: CliIO): Promise<number> {
  // Every command's --help is answered here, before its own parsing.
  const dashDash = rest.indexOf('--');
  const flags = dashDash >= 0 ? rest.slice(0, dashDash) : rest;
  if (flags.includes('--help') || flags.includes('-h')) {
    await io.out(command.help);
    return EXIT.OK;
  }
  return command.run(rest, io);
}
