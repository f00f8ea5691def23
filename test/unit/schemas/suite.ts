// One behaviour suite for every Standard Schema library: each library's test file builds the
// same schemas with its own API and runs this over memory:// (RPC contracts and payload schemas).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvalidArgument } from '../../../src/core/errors.js';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { remoteOrigin } from '../../../src/contract/remote-error.js';
import { getRpcClient } from '../../../src/rpc/client.js';
import { defineRpcContract, implementContract } from '../../../src/rpc/contract.js';
import type { StandardSchemaV1 } from '../../../src/core/schema.js';
import { Notifier } from '../../../src/notify/notifier.js';
import { getNotificationListener } from '../../../src/notify/listener.js';
import type { HandlerFailure } from '../../../src/notify/dispatcher.js';
import type { NotificationDispatchedEvent } from '../../../src/notify/instrumentation.js';
import { getNotificationTransport, type Transport } from '../../../src/transport.js';
import { uniqueName, waitFor } from '../../../src/testing/wait.js';
import { createHarness, type Harness } from '../rpc/harness.js';

/** The schemas every library builds the same way. */
export interface LibrarySchemas {
  /** `{a: number, b: number}`. */
  addArgs: StandardSchemaV1;
  /** `number`. */
  addResult: StandardSchemaV1;
  /** `{name: string (trimmed, upper-cased), times: number (default 1)}`. */
  greetArgs: StandardSchemaV1;
  /** `string` (an ISO date) → `Date`. */
  greetResult: StandardSchemaV1;
  /** `{id: string, vcpus: number}`. */
  instance: StandardSchemaV1;
}

/** Registers the suite for `library`. */
export function schemaSuite(library: string, s: LibrarySchemas): void {
  let h: Harness;
  const transports: Transport[] = [];
  afterEach(async () => {
    await h?.cleanup();
    await Promise.all(transports.splice(0).map((t) => t.cleanup()));
  });

  const contract = defineRpcContract({ add: { args: s.addArgs, result: s.addResult }, greet: { args: s.greetArgs, result: s.greetResult }, free: {} });

  async function serve(calls: unknown[] = []) {
    h = createHarness();
    const endpoint = implementContract(contract, {
      add(_ctx, args: any) {
        calls.push(args);
        return args.a + args.b;
      },
      greet(_ctx, args: any) {
        calls.push(args);
        return '2024-05-06T07:08:09.000Z';
      },
      free: (_ctx, args) => args,
    });
    await h.server([endpoint]);
    return h.transport();
  }

  describe(`schemas with ${library}: RPC contracts`, () => {
    it('the client refuses bad args with InvalidArgument naming the field, and sends nothing', async () => {
      const calls: unknown[] = [];
      const transport = await serve(calls);
      const send = vi.spyOn(transport.driver, 'send');
      const client = getRpcClient(transport, { topic: h.topic }, { contract, timeout: 5000 });
      for (const attempt of [client.call({}, 'add', { a: 1, b: 'x' } as never), client.cast({}, 'add', { a: 1, b: 'x' } as never)]) {
        const err = await attempt.catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidArgument);
        expect(err).toMatchObject({ field: 'args.b' });
        expect((err as Error).message).toMatch(/^Invalid args\.b: /);
      }
      expect(send).not.toHaveBeenCalled();
      expect(calls).toEqual([]);
      // A method without schemas passes anything, as without a contract.
      expect(await client.call({}, 'free', { any: 'thing' })).toEqual({ any: 'thing' });
      expect(send).toHaveBeenCalledTimes(1);
    });

    it('the server refuses bad args from an unchecked client with a remote InvalidArgument naming the field', async () => {
      const calls: unknown[] = [];
      const transport = await serve(calls);
      const plain = getRpcClient(transport, { topic: h.topic }, { timeout: 5000 });
      const err = await plain.call({}, 'add', { a: 1, b: 'x' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidArgument);
      expect(remoteOrigin(err)).toMatchObject({ className: 'InvalidArgument' });
      expect(err).toMatchObject({ field: 'args.b' });
      expect((err as Error).message).toMatch(/^Invalid args\.b: /);
      const missing = await plain.call({}, 'add', { b: 2 }).catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(InvalidArgument);
      expect(missing).toMatchObject({ field: 'args.a' });
      expect(calls).toEqual([]);
    });

    it('the handler gets the args schema output (transforms, defaults); the client the result schema output', async () => {
      const calls: unknown[] = [];
      const transport = await serve(calls);
      const client = getRpcClient(transport, { topic: h.topic }, { contract, timeout: 5000 });
      expect(await client.call({}, 'add', { a: 2, b: 3 })).toBe(5);
      const at = await client.call({}, 'greet', { name: '  bob ' });
      expect(at).toBeInstanceOf(Date);
      expect((at as Date).toISOString()).toBe('2024-05-06T07:08:09.000Z');
      expect(calls).toEqual([
        { a: 2, b: 3 },
        { name: 'BOB', times: 1 },
      ]);
    });

    it('a result its schema refuses rejects the call with InvalidArgument naming result', async () => {
      h = createHarness();
      await h.server([{ add: () => 'seven' }]);
      const client = getRpcClient(await h.transport(), { topic: h.topic }, { contract, timeout: 5000 });
      const err = await client.call({}, 'add', { a: 3, b: 4 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidArgument);
      expect(err).toMatchObject({ field: 'result' });
    });
  });

  describe(`schemas with ${library}: notification payloads`, () => {
    it('on() hands the schema output to the handler; a refused payload is logged without it, reported and acknowledged', async () => {
      const t = await getNotificationTransport('memory:///' + uniqueName());
      transports.push(t);
      const topic = uniqueName();
      const logger = createMemoryLogger();
      const listener = getNotificationListener(t, [{ topic }], [], { allowRequeue: true, logger });
      const got: unknown[] = [];
      const failures: HandlerFailure[] = [];
      const dispatched: NotificationDispatchedEvent[] = [];
      listener.on('compute.instance.*', { payload: s.instance }, (_ctx, payload) => {
        got.push(payload);
      });
      listener.events.on('handlerError', (f) => failures.push(f));
      listener.events.on('dispatched', (e) => dispatched.push(e));
      await listener.start();
      try {
        const notifier = new Notifier(t, { topics: [topic], publisherId: 'compute.host1' });
        await notifier.info({}, 'compute.instance.create.end', { id: 'i-1', vcpus: 2 });
        await notifier.info({}, 'compute.instance.resize.end', { id: 'i-2', vcpus: 'secret-looking-value' });
        await notifier.info({}, 'compute.instance.delete.end', { id: 'i-3', vcpus: 4 });
        await waitFor(() => dispatched.length >= 3, { message: 'three notifications settled' });
        expect(got).toEqual([
          { id: 'i-1', vcpus: 2 },
          { id: 'i-3', vcpus: 4 },
        ]);
        expect(dispatched.map((e) => e.requeued)).toEqual([0, 0, 0]);
        expect(failures).toHaveLength(1);
        expect(failures[0]).toMatchObject({ endpoint: 'on("compute.instance.*")', priority: 'info', eventTypes: ['compute.instance.resize.end'] });
        expect(failures[0].error).toBeInstanceOf(InvalidArgument);
        expect(failures[0].error).toMatchObject({ field: 'payload.vcpus' });
        const warned = logger.records.filter((r) => r.level === 'warn');
        expect(warned).toHaveLength(1);
        expect(warned[0].fields).toMatchObject({ field: 'payload.vcpus', eventType: 'compute.instance.resize.end' });
        expect(JSON.stringify(logger.records)).not.toContain('secret-looking-value');
      } finally {
        await listener.stop();
        await listener.wait();
      }
    });
  });
}
