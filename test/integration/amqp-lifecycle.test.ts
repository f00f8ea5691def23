// close() past its deadline on a real RabbitMQ: a notification still being handled goes back to
// the queue for another listener; an RPC request (acknowledged on receipt) is not redelivered, and
// its reply still reaches the caller while the transport is open.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MessagingTimeout } from '../../src/core/errors.js';
import { getNotificationTransport, getRpcTransport, type Transport } from '../../src/transport.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcServer } from '../../src/rpc/server.js';
import { Notifier } from '../../src/notify/notifier.js';
import { getNotificationListener } from '../../src/notify/listener.js';
import { deferred, uniqueName, waitFor, type Deferred } from '../../src/testing/wait.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';

const PREFIX = uniqueName('t-lifecycle');
// A short grace for handlers to settle before the listener's channel closes (default 10 s).
const URL = `${RABBIT_URL}?shutdown_timeout_ms=100`;

describe('close() past its deadline (RabbitMQ)', () => {
  const transports: Transport[] = [];
  const gates: Array<Deferred<void>> = [];

  beforeAll(requireRabbitMQ);

  afterEach(async () => {
    for (const gate of gates.splice(0)) gate.resolve();
    await Promise.all(transports.splice(0).map((t) => t.cleanup()));
  });

  afterAll(() => deleteRabbitObjectsWithPrefix(PREFIX));

  async function open(kind: 'rpc' | 'notification'): Promise<Transport> {
    const get = kind === 'rpc' ? getRpcTransport : getNotificationTransport;
    const t = await get(URL, { controlExchange: `${PREFIX}-x` });
    transports.push(t);
    return t;
  }

  function gate(): Deferred<void> {
    const d = deferred();
    gates.push(d);
    return d;
  }

  it('a notification still being handled is redelivered to another listener', async () => {
    const topic = `${PREFIX}-n-${uniqueName('topic')}`;
    const release = gate();
    const first: number[] = [];
    const blocked = getNotificationListener(await open('notification'), [{ topic }], [
      {
        async info(_ctx: unknown, _publisher: unknown, _event: unknown, payload: { id: number }) {
          first.push(payload.id);
          await release.promise;
        },
      },
    ]);
    await blocked.start();
    await new Notifier(await open('notification'), { topics: [topic], publisherId: 'p' }).info({}, 'ev', { id: 7 });
    await waitFor(() => blocked.inFlight === 1, { timeoutMs: 10_000 });

    const err = await blocked.close({ deadlineMs: 50 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MessagingTimeout);
    expect((err as Error).message).toMatch(/1 handler\(s\) still running; its subscription was released/);

    const second: number[] = [];
    const other = getNotificationListener(await open('notification'), [{ topic }], [
      { info: (_ctx: unknown, _publisher: unknown, _event: unknown, payload: { id: number }) => void second.push(payload.id) },
    ]);
    await other.start();
    await waitFor(() => second.length === 1, { timeoutMs: 10_000 });
    expect(second).toEqual([7]);
    // The first handler ends later; its acknowledgement finds its channel closed and changes nothing.
    release.resolve();
    await blocked.wait();
    expect(first).toEqual([7]);
    await other.close();
  });

  it('an RPC request is not redelivered (acknowledged on receipt); its reply still arrives while the transport is open', async () => {
    const topic = `${PREFIX}-r-${uniqueName('topic')}`;
    const release = gate();
    const server = getRpcServer(await open('rpc'), { topic, server: 'a' }, [
      {
        async work(_ctx: unknown, { n }: { n: number }) {
          await release.promise;
          return `a did ${n}`;
        },
      },
    ]);
    await server.start();
    const client = getRpcClient(await open('rpc'), { topic }, { timeout: 20_000 });
    const firstReply = client.call({}, 'work', { n: 1 });
    await waitFor(() => server.inFlight === 1, { timeoutMs: 10_000 });

    await expect(server.close({ deadlineMs: 50 })).rejects.toThrow(/RpcServer on .* did not drain within 50 ms: 1 request\(s\) still running/);

    const handledByB: number[] = [];
    const b = getRpcServer(await open('rpc'), { topic, server: 'b' }, [
      {
        work(_ctx: unknown, { n }: { n: number }) {
          handledByB.push(n);
          return `b did ${n}`;
        },
      },
    ]);
    await b.start();
    // The queue is FIFO: a redelivered first request would reach b before this one.
    expect(await client.call({}, 'work', { n: 2 })).toBe('b did 2');
    expect(handledByB).toEqual([2]);
    release.resolve();
    expect(await firstReply).toBe('a did 1');
    await b.close();
    await server.close();
  });
});
