// `tidings call` and `tidings cast`: one RPC from the command line, result as JSON on stdout.
import { TransportURL, getRpcClient } from '../index.js';
import {
  BROKER_HINT,
  COMMON_HELP,
  EXIT,
  EXIT_HELP,
  jsonArgument,
  openTransport,
  parseCommandLine,
  parseContext,
  parseJsonObject,
  parsePositiveInt,
  requireTopic,
  resolveUrl,
  UsageError,
  warnIfInProcess,
  type CliIO,
  type Command,
} from './common.js';

/** The CLI's reply deadline: shorter than the library's 60 s, since a person is waiting. */
const CALL_DEFAULT_TIMEOUT_MS = 30_000;

/** Connection retries for one-shot commands: fail rather than hang on a dead broker. */
export const CLI_RETRY = 3;

const OPTIONS = {
  topic: { type: 'string', short: 't' },
  server: { type: 'string', short: 's' },
  exchange: { type: 'string' },
  version: { type: 'string' },
  namespace: { type: 'string' },
  fanout: { type: 'boolean' },
  timeout: { type: 'string' },
  context: { type: 'string' },
} as const;

function helpFor(kind: 'call' | 'cast'): string {
  const what =
    kind === 'call'
      ? 'Calls <method> on a server of --topic and prints the result as JSON on stdout.'
      : 'Casts <method> to --topic (no reply) and exits once the broker accepted it.';
  return `Usage: tidings ${kind} <method> [json-args | -] --topic <topic> [options]

${what}
[json-args] is a JSON object of keyword arguments (default {}); - reads it from stdin.

Options:
  -t, --topic <topic>      target topic (required)
  -s, --server <name>      send to one server of the topic only
  --exchange <name>        exchange (default: the transport's control exchange, openstack)
  --version <x.y>          requested API version of the endpoint
  --namespace <ns>         endpoint namespace
${kind === 'cast' ? '  --fanout                 cast to every server of the topic\n' : '  --fanout                 refused: a call cannot fan out (use cast)\n'}  --timeout <ms>           ${kind === 'call' ? `reply deadline (default ${CALL_DEFAULT_TIMEOUT_MS})` : 'ignored for casts'}
  --context <json>         request context object (default {})

${COMMON_HELP}

Examples:
  tidings ${kind} echo '{"hello": "world"}' --topic demo --url rabbit://guest:guest@127.0.0.1:5672/
  tidings ${kind} add '{"a": 1, "b": 2}' --topic demo --server host-1
  echo '{"a": 1, "b": 2}' | tidings ${kind} add - --topic demo

${
  kind === 'call'
    ? `memory:// (the default) lives inside this one process, where no server runs: a call on it
fails at once with exit status 2. Use a broker URL to reach \`tidings serve\` or your services.`
    : `memory:// (the default) lives inside this one process: a cast on it succeeds, but nothing
outside this process receives it (a warning says so on stderr). Use a broker URL to reach
\`tidings serve\` or your services.`
}

${EXIT_HELP}`;
}

function rpcCommand(kind: 'call' | 'cast'): Command {
  return {
    name: kind,
    summary: kind === 'call' ? 'call an RPC method and print its result as JSON' : 'cast an RPC method (no reply)',
    help: helpFor(kind),
    async run(argv: readonly string[], io: CliIO): Promise<number> {
      const { values, positionals } = parseCommandLine(argv, OPTIONS, 2, `tidings ${kind} <method> [json-args]`);
      const [method, rawArgs] = positionals;
      if (!method) throw new UsageError(`missing <method> (usage: tidings ${kind} <method> [json-args] --topic <topic>)`);
      const ctx = parseContext(values.context);
      const topic = requireTopic(values.topic, kind);
      const timeout = parsePositiveInt('--timeout', values.timeout, CALL_DEFAULT_TIMEOUT_MS);
      if (kind === 'call' && values.fanout) throw new UsageError('--fanout cannot be used with call (a fanout has no single reply); use cast');
      const url = TransportURL.parse(resolveUrl(values.url, io));
      const json = await jsonArgument('json-args', rawArgs, io);
      const args = parseJsonObject(json.what, json.text);
      // Waiting out the timeout for a reply that cannot come helps nobody.
      if (kind === 'call' && url.driver === 'memory') {
        const which = values.url === undefined && io.env.TIDINGS_TRANSPORT_URL === undefined ? 'memory:// (used without --url or $TIDINGS_TRANSPORT_URL)' : 'memory://';
        throw new UsageError(`${which} is in-process: no server in another process can answer a call; ${BROKER_HINT}`);
      }
      if (kind === 'cast') warnIfInProcess(url, 'nothing outside this process receives this cast', io);

      const transport = await openTransport('rpc', url, values.verbose);
      try {
        const client = getRpcClient(
          transport,
          { topic, server: values.server, exchange: values.exchange, version: values.version, namespace: values.namespace, fanout: values.fanout },
          { timeout, retry: CLI_RETRY },
        );
        if (kind === 'cast') {
          await client.cast(ctx, method, args);
          return EXIT.OK;
        }
        const result = await client.call(ctx, method, args);
        await io.out(JSON.stringify(result ?? null));
        return EXIT.OK;
      } finally {
        await transport.cleanup();
      }
    },
  };
}

export const callCommand = rpcCommand('call');
export const castCommand = rpcCommand('cast');
