// `tidings serve`: an RPC server with the built-in endpoints, for smoke tests and health
// checks. Runs until SIGINT/SIGTERM, then stops taking messages and lets in-flight ones finish.
import { Target, TransportURL, getRpcServer, type Transport } from '../index.js';
import { BUILTIN_METHODS, MAX_SLEEP_MS, createBuiltinEndpoints } from './builtin-endpoints.js';
import {
  COMMON_HELP,
  EXIT,
  EXIT_HELP,
  defaultServerName,
  openTransport,
  parseCommandLine,
  requireTopic,
  resolveUrl,
  shutdownRequested,
  warnIfInProcess,
  type CliIO,
  type Command,
} from './common.js';

const OPTIONS = {
  topic: { type: 'string', short: 't' },
  server: { type: 'string', short: 's' },
  exchange: { type: 'string' },
} as const;

const HELP = `Usage: tidings serve --topic <topic> [--server <name>] [options]

Runs an RPC server on --topic until SIGINT/SIGTERM, then stops gracefully (in-flight calls
finish). Prints "serving ..." on stderr once it is subscribed.

Endpoints (default namespace, version 1.0):
  echo    {...}           returns its arguments
  add     {a, b}          returns a + b (TypeError for non-numbers)
  sleep   {ms}            replies {slept: ms} after ms (default 1000, at most ${MAX_SLEEP_MS})
  fail    {message?}      raises DeliberateFailure (module tidings.cli)
  whoami  {}              {server, topic, host, pid, url, startedAt, ctx}
  ping    {}              "pong"

Options:
  -t, --topic <topic>     topic to serve (required)
  -s, --server <name>     server name, for calls with --server (default: the host name)
  --exchange <name>       exchange (default: the transport's control exchange, openstack)

${COMMON_HELP}

Example:
  tidings serve --topic demo --url rabbit://guest:guest@127.0.0.1:5672/ &
  tidings call ping --topic demo --url rabbit://guest:guest@127.0.0.1:5672/

On memory:// (the default) the server lives inside this one process, where no caller runs;
it starts, but warns on stderr that nothing outside this process can reach it.

${EXIT_HELP}`;

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run an RPC server with echo/add/sleep/fail/whoami/ping',
  help: HELP,
  async run(argv: readonly string[], io: CliIO): Promise<number> {
    const { values } = parseCommandLine(argv, OPTIONS, 0, 'tidings serve --topic <topic>');
    const topic = requireTopic(values.topic, 'serve');
    const serverName = values.server ?? defaultServerName();
    const url = TransportURL.parse(resolveUrl(values.url, io));
    // Subscribe to signals before the (possibly slow) connect, so an early SIGTERM is not lost.
    const shutdown = shutdownRequested();
    let transport: Transport | undefined;
    try {
      transport = await openTransport('rpc', url, values.verbose);
      warnIfInProcess(url, 'nothing outside this process can reach this server', io);
      const target = new Target({ topic, server: serverName, exchange: values.exchange });
      const endpoints = createBuiltinEndpoints({ topic, server: serverName, url: transport.url });
      const server = getRpcServer(transport, target, [endpoints]);
      await server.start();
      io.err(`serving on ${transport.url} topic=${topic} server=${serverName} methods=${BUILTIN_METHODS.join(',')}`);
      const signal = await shutdown.promise;
      io.err(`${signal}: stopping (in-flight calls finish)`);
      await server.stop();
      await server.wait();
      io.err('stopped');
      return EXIT.OK;
    } finally {
      shutdown.dispose();
      await transport?.cleanup();
    }
  },
};
