// `tidings notify`: publishes one notification, as oslo-messaging-send-notification does.
import { hostname } from 'node:os';
import { Notifier, PRIORITIES, TransportURL, type Priority } from '../index.js';
import { CLI_RETRY } from './call.js';
import {
  COMMON_HELP,
  EXIT,
  EXIT_HELP,
  jsonArgument,
  openTransport,
  parseCommandLine,
  parseContext,
  parseJsonValue,
  resolveUrl,
  UsageError,
  warnIfInProcess,
  type CliIO,
  type Command,
} from './common.js';

/** oslo's default notification topic. */
export const DEFAULT_NOTIFICATION_TOPIC = 'notifications';

const OPTIONS = {
  topic: { type: 'string', short: 't' },
  priority: { type: 'string', short: 'p' },
  'publisher-id': { type: 'string' },
  context: { type: 'string' },
} as const;

const HELP = `Usage: tidings notify <event-type> [json-payload | -] [options]

Publishes one notification and exits once the broker accepted it.
[json-payload] is any JSON value (default {}); - reads it from stdin.

Options:
  -t, --topic <topic>        notification topic (default ${DEFAULT_NOTIFICATION_TOPIC})
  -p, --priority <level>     ${PRIORITIES.join(' | ')} (default info)
  --publisher-id <id>        publisher id (default tidings-cli.<hostname>)
  --context <json>           request context object (default {})

${COMMON_HELP}

Example:
  tidings notify compute.instance.create.end '{"id": 42}' --priority info \\
    --url rabbit://guest:guest@127.0.0.1:5672/
  echo '{"id": 42}' | tidings notify compute.instance.create.end -

memory:// (the default) lives inside this one process: a notification sent on it is accepted,
but nothing outside this process receives it (a warning says so on stderr).

${EXIT_HELP}`;

export function parsePriority(text: string | undefined, flag = '--priority'): Priority {
  const p = (text ?? 'info').toLowerCase();
  if (!(PRIORITIES as readonly string[]).includes(p)) {
    throw new UsageError(`${flag} must be one of ${PRIORITIES.join(', ')}; received ${JSON.stringify(text)}`);
  }
  return p as Priority;
}

export const notifyCommand: Command = {
  name: 'notify',
  summary: 'publish one notification',
  help: HELP,
  async run(argv: readonly string[], io: CliIO): Promise<number> {
    const { values, positionals } = parseCommandLine(argv, OPTIONS, 2, 'tidings notify <event-type> [json-payload]');
    const [eventType, rawPayload] = positionals;
    if (!eventType) throw new UsageError('missing <event-type> (usage: tidings notify <event-type> [json-payload])');
    const ctx = parseContext(values.context);
    const priority = parsePriority(values.priority);
    const topic = values.topic ?? DEFAULT_NOTIFICATION_TOPIC;
    if (topic === '') throw new UsageError('--topic must not be empty');
    const url = TransportURL.parse(resolveUrl(values.url, io));
    const json = await jsonArgument('json-payload', rawPayload, io);
    const payload = parseJsonValue(json.what, json.text, {});
    warnIfInProcess(url, 'nothing outside this process receives this notification', io);

    const transport = await openTransport('notification', url, values.verbose);
    try {
      const notifier = new Notifier(transport, {
        publisherId: values['publisher-id'] ?? `tidings-cli.${hostname()}`,
        driver: 'messagingv2',
        topics: [topic],
        retry: CLI_RETRY,
      });
      await notifier[priority](ctx, eventType, payload);
      return EXIT.OK;
    } finally {
      await transport.cleanup();
    }
  },
};
