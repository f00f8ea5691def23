// Errors retrying cannot fix, against real brokers: a refused login, a vhost the user may not use,
// a message over the broker's own size limit (RabbitMQ), a command the ACL user may not run
// (Redis). Each fails the send or call at once, typed and not retriable, instead of being retried
// until a timeout; the password never shows in the error, and the transport goes on working.
import { randomUUID } from 'node:crypto';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConnectionError,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  MessageDeliveryFailure,
  MessagingError,
  Notifier,
  Target,
  type Transport,
} from '../../src/index.js';
import { uniqueName } from '../../src/testing/wait.js';
import { requireRabbitMQ } from '../support/brokers.js';
import { withDeadline } from '../support/deadline.js';
import { startRabbitNode, type RabbitNode } from '../support/rabbit-node.js';
import { redisCommand, startRedisServer, type RedisServer } from '../support/redis-servers.js';

/**
 * Retry waits far longer than a failure may take: an error taken for retriable waits at least
 * this long before its second try, so a failure within {@link FAST_MS} was not retried (however
 * busy the machine), and one that is retried forever (a notifier's default) shows as a timeout.
 */
const RABBIT_RETRY = 'rabbit_retry_interval=30&rabbit_retry_backoff=0';
const REDIS_RETRY = 'retry_interval_ms=30000&retry_max_ms=30000';
const FAST_MS = 10_000;

/** What `op` rejected with; fails if it resolves or is still pending after {@link FAST_MS} (retried). */
async function failure(op: () => Promise<unknown>): Promise<MessagingError> {
  const err = await withDeadline(op().then(() => new Error('resolved, expected a rejection'), (e: unknown) => e), FAST_MS, 'retried instead of failing at once');
  expect(err).toBeInstanceOf(MessagingError);
  return err as MessagingError;
}

/** The checks every case shares: the type, not retriable, what the broker said, no password anywhere. */
function expectNonRetriable(err: MessagingError, type: typeof ConnectionError | typeof MessageDeliveryFailure, said: RegExp, secret?: string): void {
  expect(err).toBeInstanceOf(type);
  expect(err.retriable).toBe(false);
  expect(err.message).toMatch(said);
  if (secret) {
    expect(err.message).not.toContain(secret);
    expect(inspect(err, { depth: Infinity })).not.toContain(secret);
  }
}

describe('non-retriable errors from RabbitMQ', () => {
  const transports: Transport[] = [];
  let node: RabbitNode;
  const vhost = `tidings-noperm-${randomUUID().slice(0, 8)}`;
  const user = `tidings-user-${randomUUID().slice(0, 8)}`;
  const userPassword = `pw-${randomUUID()}`;

  async function open(url: string): Promise<{ notify: Transport; rpc: Transport }> {
    const [notify, rpc] = await Promise.all([getNotificationTransport(url), getRpcTransport(url)]);
    transports.push(notify, rpc);
    return { notify, rpc };
  }

  /** A notifier with its default retry (oslo's: forever) and a call, on `url`: both fail at once with `said`. */
  async function sendAndCallFail(url: string, type: typeof ConnectionError | typeof MessageDeliveryFailure, said: RegExp, secret?: string): Promise<void> {
    const { notify, rpc } = await open(url);
    const notifier = new Notifier(notify, { publisherId: 'non-retriable', driver: 'messagingv2', topics: [uniqueName('t-nr')] });
    const sent = await failure(() => notifier.info({}, 'nr.test', { n: 1 }));
    expectNonRetriable(sent, type, said, secret);
    const called = await failure(() => getRpcClient(rpc, { topic: uniqueName('t-nr-rpc') }, { timeout: 60_000 }).call({}, 'echo', { n: 1 }));
    expectNonRetriable(called, type, said, secret);
  }

  beforeAll(async () => {
    await requireRabbitMQ();
    // The broker's own limit, below tidings' max_message_bytes (16 MiB by default).
    node = await startRabbitNode({ config: ['max_message_size = 1048576'] });
    await Promise.all([node.ctl(['add_vhost', vhost]), node.ctl(['add_user', user, userPassword])]);
  }, 180_000);

  afterAll(async () => {
    await Promise.all(transports.map((t) => t.cleanup().catch(() => undefined)));
    await node?.stop();
  }, 60_000);

  it('a wrong password (shared broker): 403 ACCESS_REFUSED, a non-retriable ConnectionError without the password', async () => {
    const password = `wrong-${randomUUID()}`;
    await sendAndCallFail(`amqp://guest:${password}@127.0.0.1:5672/?${RABBIT_RETRY}`, ConnectionError, /ACCESS_REFUSED/, password);
  });

  it('a vhost the user has no permission on: 530 NOT_ALLOWED, a non-retriable ConnectionError without the password', async () => {
    await sendAndCallFail(`amqp://${user}:${userPassword}@127.0.0.1:${node.amqpPort}/${vhost}?${RABBIT_RETRY}`, ConnectionError, /refused to open the virtual host \(530 NOT_ALLOWED/, userPassword);
  });

  it('a message over the broker max_message_size: 406 PRECONDITION_FAILED, a non-retriable MessageDeliveryFailure; the transport goes on', async () => {
    const { notify } = await open(`${node.url}?${RABBIT_RETRY}&max_message_bytes=${4 * 1024 * 1024}`);
    const notifier = new Notifier(notify, { publisherId: 'non-retriable', driver: 'messagingv2', topics: [uniqueName('t-nr-size')] });
    await notifier.info({}, 'nr.small', { n: 0 });
    const err = await failure(() => notifier.info({}, 'nr.big', { blob: 'x'.repeat(2 * 1024 * 1024) }));
    expectNonRetriable(err, MessageDeliveryFailure, /PRECONDITION_FAILED.*max(imum)? size|larger than/i);
    await notifier.info({}, 'nr.small', { n: 1 });
  });
});

describe('non-retriable errors from Redis', () => {
  let server: RedisServer;
  const transports: Transport[] = [];

  beforeAll(async () => {
    server = await startRedisServer();
  });

  afterAll(async () => {
    await Promise.all(transports.map((t) => t.cleanup().catch(() => undefined)));
    await server?.stop();
  }, 60_000);

  it('an ACL user without XADD and RPUSH (notifications are stream entries, requests list elements): NOPERM, a non-retriable ConnectionError without the password, for a notification and a call', async () => {
    const name = `limited-${randomUUID().slice(0, 8)}`;
    const password = `pw-${randomUUID()}`;
    await redisCommand(server.endpoint, ['ACL', 'SETUSER', name, 'on', `>${password}`, '~*', '&*', '+@all', '-xadd', '-rpush']);
    const url = `redis://${name}:${password}@127.0.0.1:${server.port}/?${REDIS_RETRY}`;
    const [notify, rpc] = await Promise.all([getNotificationTransport(url), getRpcTransport(url)]);
    transports.push(notify, rpc);
    const notifier = new Notifier(notify, { publisherId: 'non-retriable', driver: 'messagingv2', topics: [uniqueName('t-nr')] });
    const sent = await failure(() => notifier.info({}, 'nr.test', { n: 1 }));
    expectNonRetriable(sent, ConnectionError, /NOPERM/, password);
    // A request to an address no server ever listened on is dropped before anything is pushed: a
    // server (of a user with every right) makes the address, so the call's push reaches the ACL.
    const topic = uniqueName('t-nr-rpc');
    const serving = await getRpcTransport(`redis://127.0.0.1:${server.port}/?${REDIS_RETRY}`);
    transports.push(serving);
    const rpcServer = getRpcServer(serving, new Target({ topic, server: 'nr' }), [{ echo: (_c: unknown, args: unknown) => args }]);
    await rpcServer.start();
    const called = await failure(() => getRpcClient(rpc, { topic }, { timeout: 60_000 }).call({}, 'echo', { n: 1 }));
    await rpcServer.stop();
    await rpcServer.wait();
    expectNonRetriable(called, ConnectionError, /NOPERM/, password);
  });
});
