// `tidings console`: the web console (src/console) over a transport opened from --url, until
// SIGINT/SIGTERM; then the server and the transport are closed.
import { randomBytes } from 'node:crypto';
import { TransportURL, type Transport } from '../index.js';
import { startConsole, type ConsoleOptions } from '../console/index.js';
import { COMMON_HELP, EXIT, EXIT_HELP, openTransport, parseCommandLine, parsePositiveInt, resolveUrl, shutdownRequested, UsageError, warnIfInProcess, type CliIO, type Command } from './common.js';

const OPTIONS = {
  port: { type: 'string', short: 'p' },
  host: { type: 'string' },
  topic: { type: 'string', short: 't', multiple: true },
  'notification-topic': { type: 'string', short: 'n', multiple: true },
  pool: { type: 'string', multiple: true },
  expect: { type: 'string', multiple: true },
  'allow-write': { type: 'boolean' },
  'refresh-ms': { type: 'string' },
} as const;

const HELP = `Usage: tidings console [--url <url>] [options]

Serves a web console and its JSON API (docs/console.md) until SIGINT/SIGTERM: RPC topics and
their live servers, notification pools and their backlog, dead letters, traffic and health.
Prints its address (and, with --allow-write, the token) on stderr.

Options:
  -p, --port <port>               TCP port (default 8640; 0 = any free port)
  --host <address>                interface to bind (default 127.0.0.1, loopback only)
  -t, --topic <topic>             an RPC topic for the servers page (repeatable)
  -n, --notification-topic <t>    a notification topic for the pools page and lag chart (repeatable)
  --pool <name>                   a named pool to show where the broker cannot list pools, as on
                                  RabbitMQ (repeatable)
  --expect <topic>=<n>            servers expected on a topic: the page shows "expected n, see m"
                                  (repeatable)
  --allow-write                   allow replay and purge of dead letters; each request needs the
                                  token ($TIDINGS_CONSOLE_TOKEN, else a random one printed here)
  --refresh-ms <ms>               how often pages refresh and pools are sampled (default 2000)

${COMMON_HELP}

Example:
  tidings console --url rabbit://guest:guest@127.0.0.1:5672/ --topic compute \\
    --notification-topic notifications --pool billing --expect compute=3

The console is read-only unless --allow-write. Binding --host to anything but loopback
exposes it to the network. Its traffic page sees only this process's traffic.

${EXIT_HELP}`;

/** The console options of a command line (without url, verbose, help). */
export function consoleOptionsFrom(values: {
  port?: string;
  host?: string;
  topic?: string[];
  'notification-topic'?: string[];
  pool?: string[];
  expect?: string[];
  'allow-write'?: boolean;
  'refresh-ms'?: string;
}): ConsoleOptions {
  const options: ConsoleOptions = {};
  if (values.port !== undefined) {
    const port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65535) throw new UsageError(`--port must be an integer from 0 to 65535, received ${JSON.stringify(values.port)}`);
    options.port = port;
  }
  if (values.host !== undefined) {
    if (values.host === '') throw new UsageError('--host must not be empty');
    options.host = values.host;
  }
  if (values.topic) options.topics = values.topic;
  if (values['notification-topic']) options.notificationTopics = values['notification-topic'];
  if (values.pool) options.pools = values.pool;
  if (values.expect) {
    const expected: Record<string, number> = {};
    for (const item of values.expect) {
      const m = /^([^=]+)=(\d+)$/.exec(item);
      if (!m) throw new UsageError(`--expect must be <topic>=<count>, e.g. compute=3, received ${JSON.stringify(item)}`);
      expected[m[1]] = Number(m[2]);
    }
    options.expectedServers = expected;
  }
  if (values['allow-write']) options.allowWrite = true;
  if (values['refresh-ms'] !== undefined) options.refreshMs = parsePositiveInt('--refresh-ms', values['refresh-ms'], 2000);
  return options;
}

export const consoleCommand: Command = {
  name: 'console',
  summary: 'serve a web console: servers, pools and lag, dead letters, traffic, health',
  help: HELP,
  async run(argv: readonly string[], io: CliIO): Promise<number> {
    const { values } = parseCommandLine(argv, OPTIONS, 0, 'tidings console --url <url>');
    const options = consoleOptionsFrom(values);
    const url = TransportURL.parse(resolveUrl(values.url, io));
    const shutdown = shutdownRequested(io.outputClosed);
    let transport: Transport | undefined;
    try {
      transport = await openTransport('rpc', url, values.verbose);
      warnIfInProcess(url, 'the console sees only this process\'s own servers, pools and dead letters', io);
      // Read-only, no request can use a token: $TIDINGS_CONSOLE_TOKEN is not even read then.
      const token = options.allowWrite ? io.env.TIDINGS_CONSOLE_TOKEN : randomBytes(32).toString('hex');
      const handle = await startConsole(transport, { ...options, token });
      io.err(`console on ${handle.url} for ${transport.url}${options.allowWrite ? '' : ' (read-only; --allow-write enables replay and purge)'}`);
      if (handle.token !== undefined) io.err(`token (X-Tidings-Token): ${handle.token}`);
      const signal = await shutdown.promise;
      io.err(`${signal}: closing the console`);
      await handle.close();
      return EXIT.OK;
    } finally {
      shutdown.dispose();
      await transport?.cleanup();
    }
  },
};
