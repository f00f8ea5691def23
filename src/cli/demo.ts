// `tidings demo`: RPC and notifications end to end on memory://, printed as a transcript.
// It doubles as a smoke test of the whole stack: any step that misbehaves fails the command.
import {
  MessagingTimeout,
  NoSuchMethod,
  NotificationResult,
  Notifier,
  Target,
  defaultRemoteErrorRegistry,
  getBatchNotificationListener,
  getNotificationListener,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  type Context,
} from '../index.js';
import { EXIT, parseCommandLine, UsageError, type CliIO, type Command } from './common.js';

const HELP = `Usage: tidings demo

Runs RPC and notifications end to end on the embedded memory:// transport and prints what
happens: two servers, call, server-targeted call, cast, fanout, a remote error arriving as
its own class, a timeout, a notifier with two listener pools, and a batch listener.
Needs no broker; exits 0 when every step behaved as described.

Options:
  -h, --help   show this help`;

/** An application error the caller gets back as its own class (its module is allowed). */
class InsufficientFunds extends Error {
  static readonly remoteModule = 'demo.bank';
  override readonly name = 'InsufficientFunds';
}

const json = (v: unknown) => JSON.stringify(v);

async function until(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`demo: ${what} did not happen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function errorName(err: unknown): string {
  return err instanceof Error ? err.constructor.name : typeof err;
}

async function rpcPart(say: (line: string) => Promise<void>): Promise<void> {
  const transport = await getRpcTransport('memory://', {
    allowedRemoteExmods: ['demo.bank'],
    remoteErrors: defaultRemoteErrorRegistry.clone().register('demo.bank', InsufficientFunds),
  });
  const handledBy: string[] = [];
  let releaseSlow = () => {};
  const endpointFor = (server: string) => ({
    add: (_ctx: Context, args: { a: number; b: number }) => args.a + args.b,
    whoami: () => server,
    record: (_ctx: Context, args: { event: string }) => void handledBy.push(`${server}:${args.event}`),
    withdraw: (_ctx: Context, args: { amount: number }) => {
      throw new InsufficientFunds(`balance 10 is less than ${args.amount}`);
    },
    slow: () => new Promise<void>((resolve) => (releaseSlow = resolve)),
  });
  const servers = ['host-a', 'host-b'].map((name) => getRpcServer(transport, new Target({ topic: 'demo', server: name }), [endpointFor(name)]));
  try {
    await Promise.all(servers.map((s) => s.start()));
    await say('  started 2 servers on topic "demo": host-a, host-b');
    const client = getRpcClient(transport, { topic: 'demo' }, { timeout: 5000 });

    const sum = await client.call({ user: 'demo' }, 'add', { a: 2, b: 3 });
    await say(`  call add ${json({ a: 2, b: 3 })} -> ${json(sum)}`);

    const who = await client.prepare({ server: 'host-b' }).call({}, 'whoami', {});
    await say(`  call whoami with server=host-b -> ${json(who)}`);

    await client.cast({}, 'record', { event: 'hello' });
    await until(() => handledBy.some((h) => h.endsWith(':hello')), 'the cast');
    await say(`  cast record ${json({ event: 'hello' })} -> handled once, by ${handledBy.filter((h) => h.endsWith(':hello')).map((h) => h.split(':')[0]).join(', ')}`);

    await client.prepare({ fanout: true }).cast({}, 'record', { event: 'everyone' });
    await until(() => handledBy.filter((h) => h.endsWith(':everyone')).length === 2, 'the fanout cast');
    const fanned = handledBy.filter((h) => h.endsWith(':everyone')).map((h) => h.split(':')[0]).sort();
    await say(`  fanout cast record ${json({ event: 'everyone' })} -> handled by every server: ${fanned.join(', ')}`);

    try {
      await client.call({}, 'withdraw', { amount: 100 });
      throw new Error('demo: withdraw should have failed');
    } catch (err) {
      if (!(err instanceof InsufficientFunds)) throw err;
      await say(`  call withdraw ${json({ amount: 100 })} -> threw ${errorName(err)} (instanceof InsufficientFunds: true): ${err.message}`);
    }

    try {
      await client.call({}, 'nosuch', {});
      throw new Error('demo: nosuch should have failed');
    } catch (err) {
      if (!(err instanceof NoSuchMethod)) throw err;
      await say(`  call nosuch -> threw ${errorName(err)}: ${err.message}`);
    }

    const started = Date.now();
    try {
      await client.prepare({ timeout: 200 }).call({}, 'slow', {});
      throw new Error('demo: slow should have timed out');
    } catch (err) {
      if (!(err instanceof MessagingTimeout)) throw err;
      await say(`  call slow with timeout=200 -> threw ${errorName(err)} after ${Date.now() - started >= 200 ? 'at least' : 'under'} 200 ms`);
    } finally {
      releaseSlow();
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await Promise.all(servers.map((s) => s.wait()));
    await transport.cleanup();
  }
  await say('  stopped both servers (in-flight calls finished first)');
}

async function notificationPart(say: (line: string) => Promise<void>): Promise<void> {
  const transport = await getNotificationTransport('memory://');
  const got: Record<string, number[]> = { 'billing-1': [], 'billing-2': [], 'audit-1': [] };
  const listenerFor = (name: string, pool: string) =>
    getNotificationListener(
      transport,
      [new Target({ topic: 'notifications' })],
      [
        {
          info: (_ctx: Context, _publisherId: string, _eventType: string, payload: { n: number }) => {
            got[name].push(payload.n);
            return NotificationResult.HANDLED;
          },
        },
      ],
      { pool },
    );
  const listeners = [listenerFor('billing-1', 'billing'), listenerFor('billing-2', 'billing'), listenerFor('audit-1', 'audit')];
  const batches: number[][] = [];
  const batchListener = getBatchNotificationListener(
    transport,
    [new Target({ topic: 'metrics' })],
    [{ sample: (messages: Array<{ payload: { n: number } }>) => void batches.push(messages.map((m) => m.payload.n)) }],
    { batchSize: 5, batchTimeout: 100 },
  );
  const all = [...listeners, batchListener];
  try {
    await Promise.all(all.map((l) => l.start()));
    const notifier = new Notifier(transport, { publisherId: 'compute.host1', driver: 'messagingv2', topics: ['notifications'] });
    await say('  listeners on topic "notifications": billing-1 and billing-2 in pool "billing", audit-1 in pool "audit"');
    const total = 6;
    for (let n = 1; n <= total; n++) await notifier.info({ user: 'demo' }, 'compute.instance.create.end', { n });
    await say(`  notifier compute.host1 sent ${total} info notifications compute.instance.create.end`);
    const count = (name: string) => got[name].length;
    await until(() => count('billing-1') + count('billing-2') === total && count('audit-1') === total, 'delivery to both pools');
    await say(`  pool "billing": billing-1 got ${count('billing-1')}, billing-2 got ${count('billing-2')} -> each notification once per pool, shared by its members`);
    await say(`  pool "audit": audit-1 got ${count('audit-1')} -> every pool gets its own copy`);

    const metrics = new Notifier(transport, { publisherId: 'compute.host1', driver: 'messagingv2', topics: ['metrics'] });
    for (let n = 1; n <= total; n++) await metrics.sample({}, 'compute.metrics', { n });
    await until(() => batches.flat().length === total, 'the batches');
    await say(`  batch listener (batchSize 5, batchTimeout 100 ms) got ${total} sample notifications in batches of ${batches.map((b) => b.length).join(' + ')}`);
  } finally {
    await Promise.all(all.map((l) => l.stop()));
    await Promise.all(all.map((l) => l.wait()));
    await transport.cleanup();
  }
}

export const demoCommand: Command = {
  name: 'demo',
  summary: 'RPC and notifications end to end on memory://, as a transcript',
  help: HELP,
  async run(argv: readonly string[], io: CliIO): Promise<number> {
    const { values } = parseCommandLine(argv, {}, 0, 'tidings demo');
    if (values.url !== undefined) throw new UsageError('demo always runs on memory:// (it needs no broker); --url is not accepted');
    const say = (line: string) => io.out(line);
    await say('tidings demo: RPC and notifications end to end on memory://');
    await say('');
    await say('RPC');
    await rpcPart(say);
    await say('');
    await say('Notifications');
    await notificationPart(say);
    await say('');
    await say('demo finished: every step behaved as described');
    return EXIT.OK;
  },
};
