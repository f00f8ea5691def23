// Client resilience on a real RabbitMQ: a retry policy and a circuit breaker against a server that
// goes away and comes back. Calls to it time out and are retried as new requests, the circuit opens
// and refuses calls at once, the server returns, a probe closes the circuit, and no request sent
// while it was away runs late (each expires with its call's timeout).
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CircuitOpenError } from '../../src/core/errors.js';
import { getRpcTransport, type Transport } from '../../src/transport.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { getRpcServer, type RpcServer } from '../../src/rpc/server.js';
import type { RpcMeta } from '../../src/rpc/endpoint.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';

const PREFIX = uniqueName('t-resil');

describe('client resilience (RabbitMQ)', () => {
  const transports: Transport[] = [];
  const servers: RpcServer[] = [];

  beforeAll(requireRabbitMQ);

  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close({ deadlineMs: 1000 }).catch(() => undefined);
    await Promise.all(transports.splice(0).map((t) => t.cleanup()));
  });

  afterAll(() => deleteRabbitObjectsWithPrefix(PREFIX));

  async function open(): Promise<Transport> {
    const t = await getRpcTransport(RABBIT_URL, { controlExchange: `${PREFIX}-x` });
    transports.push(t);
    return t;
  }

  it('retry and breaker across a server that goes away and comes back', { timeout: 90_000 }, async () => {
    const topic = `${PREFIX}-${uniqueName('topic')}`;
    const runs: string[] = [];
    const endpoint = {
      get(_ctx: unknown, args: { id: number }, meta: RpcMeta) {
        runs.push(`${args.id} ${meta.messageId}`);
        return { id: args.id };
      },
    };
    // The server runs on a transport (a connection) of its own: it goes away with it.
    const startServer = async (): Promise<{ server: RpcServer; transport: Transport }> => {
      const transport = await open();
      const server = getRpcServer(transport, { topic, server: 'inventory-1' }, [endpoint]);
      servers.push(server);
      await server.start();
      return { server, transport };
    };

    const client = getRpcClient(await open(), { topic }, {
      timeout: 1500,
      retryPolicy: { attempts: 3, delayMs: 100, jitter: 0.5, idempotentMethods: ['get'] },
      circuitBreaker: { maxFailures: 2, halfOpenAfterMs: 2000 },
    });
    const events: string[] = [];
    client.events.on('retry', (i) => events.push(`retry ${i.attempt}`));
    client.events.on('circuitOpened', () => events.push('opened'));
    client.events.on('circuitHalfOpened', () => events.push('half-open'));
    client.events.on('circuitClosed', () => events.push('closed'));

    let up = await startServer();
    await expect(client.waitForServers({ count: 1, timeoutMs: 20_000 })).resolves.toEqual([expect.objectContaining({ server: 'inventory-1', topic })]);
    await expect(client.call({}, 'get', { id: 1 })).resolves.toEqual({ id: 1 });

    // The server goes away: two attempts time out, the circuit opens, the third attempt is refused.
    await up.server.close();
    await up.transport.cleanup();
    const away = await client.call({}, 'get', { id: 2 }).catch((e: unknown) => e);
    expect(away).toBeInstanceOf(CircuitOpenError);
    expect(events).toEqual(['retry 2', 'opened', 'retry 3']);
    expect(client.circuitState).toBe('open');
    const send = vi.spyOn(client.transport.driver, 'send');
    await expect(client.call({}, 'get', { id: 3 })).rejects.toBeInstanceOf(CircuitOpenError);
    expect(send).not.toHaveBeenCalled();
    send.mockRestore();

    // It comes back: once half-open, a probe gets through and closes the circuit.
    up = await startServer();
    await client.waitForServers({ count: 1, timeoutMs: 20_000 });
    await waitFor(() => client.circuitState === 'half-open', { timeoutMs: 20_000, message: 'circuit half-open' });
    await expect(client.call({}, 'get', { id: 4 })).resolves.toEqual({ id: 4 });
    expect(client.circuitState).toBe('closed');
    expect(events.slice(3)).toEqual(['half-open', 'closed']);

    // Away again while a call is being retried: the retry after its return gets the answer.
    await up.server.close();
    await up.transport.cleanup();
    const retried = client.call({}, 'get', { id: 5 }, { retryPolicy: { attempts: 20, delayMs: 200, jitter: 0 }, idempotent: true });
    client.events.once('retry', () => void startServer());
    await expect(retried).resolves.toEqual({ id: 5 });

    // Nothing sent while the server was away ran late: every request expired with its timeout.
    // (Call 5's first attempt may have run if the server came back within its timeout; it is idempotent.)
    const ids = runs.map((r) => r.split(' ')[0]);
    expect(ids.filter((id) => id !== '5')).toEqual(['1', '4']);
    expect(ids.filter((id) => id === '5').length).toBeGreaterThanOrEqual(1);
    expect(new Set(runs).size).toBe(runs.length); // every run was a request of its own
  });
});
