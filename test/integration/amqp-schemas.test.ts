// Schemas over a real RabbitMQ: a contract's server-side argument check reaches a caller that
// skipped the client-side check as InvalidArgument naming the field, and the good path works.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { InvalidArgument } from '../../src/core/errors.js';
import { remoteOrigin } from '../../src/contract/remote-error.js';
import { getRpcClient } from '../../src/rpc/client.js';
import { defineRpcContract, implementContract } from '../../src/rpc/contract.js';
import { getRpcServer, type RpcServer } from '../../src/rpc/server.js';
import { getRpcTransport, type Transport } from '../../src/transport.js';
import { uniqueName } from '../../src/testing/wait.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';

const PREFIX = uniqueName('t-amqpschema');
const Calc = defineRpcContract({ add: { args: z.object({ a: z.number(), b: z.number().default(10) }), result: z.number() } });

describe('schemas on RabbitMQ', () => {
  let transport: Transport;
  let server: RpcServer;
  const topic = `${PREFIX}-calc`;

  beforeAll(async () => {
    await requireRabbitMQ();
    transport = await getRpcTransport(RABBIT_URL, { controlExchange: `${PREFIX}-x` });
    server = getRpcServer(transport, { topic, server: 's1' }, [implementContract(Calc, { add: (_ctx, { a, b }) => a + b })]);
    await server.start();
  });

  afterAll(async () => {
    await server?.stop().catch(() => undefined);
    await server?.wait().catch(() => undefined);
    await transport?.cleanup();
    await deleteRabbitObjectsWithPrefix(PREFIX);
  });

  it("the server's InvalidArgument naming the field arrives over the wire; good calls get the schema's defaults", async () => {
    const plain = getRpcClient(transport, { topic }, { timeout: 10_000 });
    const err = await plain.call({}, 'add', { a: 'one' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgument);
    expect(err).toMatchObject({ field: 'args.a' });
    expect((err as Error).message).toMatch(/^Invalid args\.a: /);
    expect(remoteOrigin(err)).toMatchObject({ className: 'InvalidArgument', module: 'oslo_messaging.rpc.dispatcher' });
    const typed = getRpcClient(transport, { topic }, { contract: Calc, timeout: 10_000 });
    expect(await typed.call({}, 'add', { a: 1 })).toBe(11);
  });
});
