// The command table of `tidings` and its dispatcher: one command per file; failures become one
// stderr line and an exit status (see EXIT in common.ts). main.ts is the process entry.
import { callCommand, castCommand } from './call.js';
import { EXIT, describeFailure, processIO, type CliIO, type Command } from './common.js';
import { demoCommand } from './demo.js';
import { listenCommand } from './listen.js';
import { notifyCommand } from './notify.js';
import { serveCommand } from './serve.js';

export const COMMANDS: readonly Command[] = [callCommand, castCommand, notifyCommand, listenCommand, serveCommand, demoCommand];

export const TOP_HELP = `Usage: tidings <command> [options]

oslo.messaging-style RPC and notifications from the command line.

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(8)} ${c.summary}`).join('\n')}

Run \`tidings <command> --help\` for a command's options.
The transport URL comes from --url, else $TIDINGS_TRANSPORT_URL, else memory://
(memory:// is in-process: use a broker URL such as rabbit://guest:guest@127.0.0.1:5672/
for commands that talk to other processes).

Exit status: 0 ok, 1 failure, 2 bad input, 3 timeout, 4 remote error.`;

/** Runs the CLI with `argv` (without node and script) and resolves with the exit status. */
export async function runCli(argv: readonly string[], io: CliIO = processIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    if (name === undefined) {
      io.err(TOP_HELP);
      return EXIT.USAGE;
    }
    const topic = name === 'help' ? COMMANDS.find((c) => c.name === rest[0]) : undefined;
    io.out(topic ? topic.help : TOP_HELP);
    return EXIT.OK;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    io.err(`tidings: unknown command ${JSON.stringify(name)}; commands: ${COMMANDS.map((c) => c.name).join(', ')} (see tidings --help)`);
    return EXIT.USAGE;
  }
  // Every command's --help is answered here, before its own parsing.
  const dashDash = rest.indexOf('--');
  const flags = dashDash >= 0 ? rest.slice(0, dashDash) : rest;
  if (flags.includes('--help') || flags.includes('-h')) {
    io.out(command.help);
    return EXIT.OK;
  }
  try {
    return await command.run(rest, io);
  } catch (err) {
    const { line, code } = describeFailure(err);
    io.err(`tidings ${command.name}: ${line}`);
    return code;
  }
}
