// `tidings listen`: prints one JSON line per notification on stdout until --count, --timeout
// or a signal; status lines go to stderr so stdout stays machine-readable.
import {
  MessagingTimeout,
  NotificationResult,
  PRIORITIES,
  Target,
  TransportURL,
  getNotificationListener,
  type Context,
  type NotificationMetadata,
  type Priority,
} from '../index.js';
import {
  COMMON_HELP,
  EXIT,
  EXIT_HELP,
  openTransport,
  OutputClosed,
  parseCommandLine,
  parsePositiveInt,
  resolveUrl,
  shutdownRequested,
  UsageError,
  warnIfInProcess,
  type CliIO,
  type Command,
} from './common.js';
import { DEFAULT_NOTIFICATION_TOPIC, parsePriority } from './notify.js';

const OPTIONS = {
  topic: { type: 'string', short: 't' },
  pool: { type: 'string' },
  priority: { type: 'string', short: 'p' },
  count: { type: 'string', short: 'n' },
  timeout: { type: 'string' },
  exchange: { type: 'string' },
} as const;

const HELP = `Usage: tidings listen [options]

Prints one JSON line per notification on stdout:
  {"priority":"info","event_type":"...","publisher_id":"...","payload":...,"ctx":{...},"message_id":"...","timestamp":"..."}
Status lines ("listening on ...") go to stderr. Stops on SIGINT/SIGTERM, after --count
notifications, after --timeout ms, or (exit 0) once the reader of stdout goes away, as with
| head -1.

A notification is acknowledged only once its line is written: while the reader of stdout
does not read, the listener waits and the broker keeps the rest (add a prefetch to the URL,
e.g. ?rabbit_qos_prefetch_count=100, to also bound what this process holds unacknowledged).
A line that cannot be written any more is requeued where the transport supports it.

Options:
  -t, --topic <topic>        notification topic (default ${DEFAULT_NOTIFICATION_TOPIC})
  --pool <name>              join a listener pool: each pool gets every notification once and
                             the members of a pool share them (default: the topic's shared queue)
  -p, --priority <p1,p2>     only these priorities (default: all of ${PRIORITIES.join(', ')})
  -n, --count <n>            exit 0 after n notifications
  --timeout <ms>             stop after ms; with --count, fewer than n is a timeout (exit 3)
  --exchange <name>          exchange (default: the transport's control exchange, openstack)

${COMMON_HELP}

Example:
  tidings listen --topic notifications --pool billing --count 2 --url rabbit://guest:guest@127.0.0.1:5672/

On memory:// (the default) the listener lives inside this one process, where no notifier runs;
it starts, but warns on stderr that nothing outside this process can reach it.

${EXIT_HELP}`;

export const listenCommand: Command = {
  name: 'listen',
  summary: 'print notifications as JSON lines',
  help: HELP,
  async run(argv: readonly string[], io: CliIO): Promise<number> {
    const { values } = parseCommandLine(argv, OPTIONS, 0, 'tidings listen [options]');
    const topic = values.topic ?? DEFAULT_NOTIFICATION_TOPIC;
    if (topic === '') throw new UsageError('--topic must not be empty');
    const priorities: Priority[] = values.priority
      ? [...new Set(values.priority.split(',').map((p) => parsePriority(p.trim())))]
      : [...PRIORITIES];
    const count = values.count === undefined ? undefined : parsePositiveInt('--count', values.count, 1);
    const timeout = values.timeout === undefined ? undefined : parsePositiveInt('--timeout', values.timeout, 1);
    const url = TransportURL.parse(resolveUrl(values.url, io));

    let received = 0;
    let reachedCount!: () => void;
    const enough = new Promise<void>((resolve) => (reachedCount = resolve));
    const print = (priority: Priority) => async (ctx: Context, publisherId: string | null, eventType: string, payload: unknown, metadata: NotificationMetadata) => {
      // With concurrent deliveries a message may arrive after --count was reached; it is not printed.
      if (count !== undefined && received >= count) return NotificationResult.HANDLED;
      try {
        // Returning only once the line is flushed is the back-pressure: with one executor slot,
        // nothing more is taken (or acknowledged) while the reader of stdout is not reading.
        await io.out(JSON.stringify({ priority, event_type: eventType, publisher_id: publisherId, payload, ctx, message_id: metadata.message_id, timestamp: metadata.timestamp }));
      } catch (err) {
        if (err instanceof OutputClosed) return NotificationResult.REQUEUE;
        throw err;
      }
      received++;
      if (count !== undefined && received >= count) reachedCount();
      return NotificationResult.HANDLED;
    };
    const endpoint = Object.fromEntries(priorities.map((p) => [p, print(p)]));

    const transport = await openTransport('notification', url, values.verbose);
    // A reader that goes away (`| head -1`) stops the listener like a signal does.
    const shutdown = shutdownRequested(io.outputClosed);
    let timer: NodeJS.Timeout | undefined;
    try {
      warnIfInProcess(url, 'nothing outside this process can reach this listener', io);
      const listener = getNotificationListener(transport, [new Target({ topic, exchange: values.exchange })], [endpoint], {
        ...(values.pool ? { pool: values.pool } : {}),
        executorSize: 1,
        allowRequeue: transport.driver.capabilities.requeue,
      });
      await listener.start();
      io.err(`listening on ${transport.url} topic=${topic} priorities=${priorities.join(',')}${values.pool ? ` pool=${values.pool}` : ''}`);
      const timedOut = new Promise<'timeout'>((resolve) => {
        if (timeout !== undefined) timer = setTimeout(() => resolve('timeout'), timeout);
      });
      const why = await Promise.race([enough.then(() => 'count' as const), timedOut, shutdown.promise]);
      await listener.stop();
      await listener.wait();
      if (why === 'timeout' && count !== undefined) {
        throw new MessagingTimeout(`received ${received} of ${count} notifications within ${timeout} ms`);
      }
      return EXIT.OK;
    } finally {
      clearTimeout(timer);
      shutdown.dispose();
      await transport.cleanup();
    }
  },
};
