// `tidings dead-letters list|replay|purge`: what a driver set aside after maxDeliveries or as
// malformed, through BaseDriver.deadLetters() (every built-in driver keeps them).
import { NotSupportedError, TransportURL } from '../index.js';
import type { DeadLetterQuery } from '../contract/dead-letters.js';
import { COMMON_HELP, EXIT, EXIT_HELP, openTransport, parseCommandLine, parsePositiveInt, resolveUrl, UsageError, type CliIO, type Command } from './common.js';

const OPTIONS = {
  address: { type: 'string', short: 'a' },
  exchange: { type: 'string' },
  id: { type: 'string', multiple: true },
  limit: { type: 'string', short: 'n' },
  all: { type: 'boolean' },
} as const;

const ACTIONS = ['list', 'replay', 'purge'] as const;
type Action = (typeof ACTIONS)[number];

const HELP = `Usage: tidings dead-letters <list | replay | purge> --address <address> [options]

Messages a driver set aside instead of delivering them again: after maxDeliveries failed
deliveries (the handler threw or requeued every time) or because they were malformed.

  list     prints them as JSON lines, oldest first: {id, address, pool, error, consumer,
           deadAt, deliveries, body}; changes nothing
  replay   puts them back on their address (listeners drop any they had in fact handled, by
           _unique_id), then removes them from the dead letters; prints {"replayed": N}
  purge    removes them for good; needs --id or --all; prints {"purged": N}

Options:
  -a, --address <address>    where they were consumed from, e.g. notifications.info
  --exchange <name>          exchange of the address (default: the transport's control exchange)
  --id <id>                  only this dead letter (repeatable)
  -n, --limit <n>            at most n, oldest first (list: default 100)
  --all                      purge: every dead letter of the address

${COMMON_HELP}

Example:
  tidings dead-letters list --address notifications.info --url redis://127.0.0.1:6379/
  tidings dead-letters replay --address notifications.info --id 1700000000000-0 --url redis://127.0.0.1:6379/
  tidings dead-letters purge --address notifications.info --all --url rabbit://guest:guest@127.0.0.1:5672/

Drivers without dead letters (a driver of your own that keeps none) exit 2 saying so.

${EXIT_HELP}`;

export const deadLettersCommand: Command = {
  name: 'dead-letters',
  summary: 'list, replay or purge the messages a driver set aside',
  help: HELP,
  async run(argv: readonly string[], io: CliIO): Promise<number> {
    const { values, positionals } = parseCommandLine(argv, OPTIONS, 1, 'tidings dead-letters <list|replay|purge> --address <address>');
    const action = positionals[0] as Action | undefined;
    if (action === undefined || !ACTIONS.includes(action)) {
      throw new UsageError(`expected one of ${ACTIONS.join(', ')}${action === undefined ? '' : `, received ${JSON.stringify(action)}`} (usage: tidings dead-letters <list|replay|purge> --address <address>)`);
    }
    const address = values.address;
    if (address === undefined || address === '') throw new UsageError('missing --address, e.g. --address notifications.info');
    const ids = values.id;
    if (action === 'purge' && ids === undefined && values.all !== true) throw new UsageError('purge removes dead letters for good: name them with --id, or pass --all');
    const limit = values.limit === undefined ? (action === 'list' ? 100 : undefined) : parsePositiveInt('--limit', values.limit, 100);
    const query: DeadLetterQuery = { address, exchange: values.exchange, ids, limit };
    const url = TransportURL.parse(resolveUrl(values.url, io));

    const transport = await openTransport('notification', url, values.verbose);
    try {
      let store;
      try {
        store = transport.driver.deadLetters();
      } catch (err) {
        if (err instanceof NotSupportedError) throw new UsageError(err.message, { cause: err });
        throw err;
      }
      if (action === 'list') {
        for (const letter of await store.list(query)) await io.out(JSON.stringify(letter));
      } else if (action === 'replay') {
        await io.out(JSON.stringify({ replayed: await store.replay(query) }));
      } else {
        await io.out(JSON.stringify({ purged: await store.purge(query) }));
      }
      return EXIT.OK;
    } finally {
      await transport.cleanup();
    }
  },
};
