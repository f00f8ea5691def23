// `tidings call` and `tidings cast`: one RPC from the command line, result as JSON on stdout.
import { MessagingTimeout, TransportURL, getRpcClient, getRpcTransport, type Transport } from '../index.js';
import {
  COMMON_HELP,
  EXIT,
  EXIT_HELP,
  loggerFor,
  parseCommandLine,
  parseJsonObject,
  parsePositiveInt,
  requireTopic,
  resolveUrl,
  UsageError,
  type CliIO,
  type Command,
} from './common.js';

/** The CLI's reply deadline: shorter than the library's 60 s, since a person is waiting. */
export const CALL_DEFAULT_TIMEOUT_MS = 30_000;

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
  return `Usage: tidings ${kind} <method> [json-args] --topic <topic> [options]

${what}
[json-args] is a JSON object of keyword arguments (default {}).

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

Note: memory:// lives inside one process, so a ${kind} from this command only reaches a server in
this same process; use a broker URL to talk to \`tidings serve\` or your services.

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
      const args = parseJsonObject('json-args', rawArgs);
      const ctx = parseJsonObject('--context', values.context);
      const topic = requireTopic(values.topic, kind);
      const timeout = parsePositiveInt('--timeout', values.timeout, CALL_DEFAULT_TIMEOUT_MS);
      if (kind === 'call' && values.fanout) throw new UsageError('--fanout cannot be used with call (a fanout has no single reply); use cast');
      const url = TransportURL.parse(resolveUrl(values.url, io));

      const transport: Transport = await getRpcTransport(url, { logger: loggerFor(values.verbose) });
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
        try {
          const result = await client.call(ctx, method, args);
          io.out(JSON.stringify(result ?? null));
          return EXIT.OK;
        } catch (err) {
          if (err instanceof MessagingTimeout && url.driver === 'memory') {
            throw new MessagingTimeout(`${err.message} (memory:// is in-process: no other process can answer; pass --url of a broker)`);
          }
          throw err;
        }
      } finally {
        await transport.cleanup();
      }
    },
  };
}

export const callCommand = rpcCommand('call');
export const castCommand = rpcCommand('cast');
