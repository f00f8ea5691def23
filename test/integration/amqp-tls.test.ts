// RabbitMQ over TLS: `amqps://` with a CA, client certificate and key given in the URL query or
// in driverOptions, against TLS listeners the setup adds to the running broker (no restart).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createMemoryLogger,
  getNotificationListener,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  ConnectionError,
  MessageDeliveryFailure,
  MessagingError,
  MessagingTimeout,
  Notifier,
  NotificationResult,
  Target,
  type Transport,
  type TransportOptions,
} from '../../src/index.js';
import { deleteQueues, notificationQueues, rpcQueues } from '../interop/support/amqp-admin.js';
import { requireRabbitMQ } from '../support/brokers.js';
import { ensureRabbitTls, type RabbitTls } from '../support/rabbit-tls.js';
import { generateCa } from '../support/tls.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { errorText, recordsText } from '../support/error-text.js';

const q = encodeURIComponent;

describe('amqp driver over TLS', () => {
  let tls: RabbitTls;
  let scratch: string;
  const transports: Transport[] = [];
  const queues: string[] = [];

  beforeAll(async () => {
    await requireRabbitMQ();
    tls = ensureRabbitTls();
    scratch = mkdtempSync(join(tmpdir(), 'tidings-tls-test-'));
  }, 120_000);

  afterAll(async () => {
    for (const t of transports) await t.cleanup();
    await deleteQueues(queues);
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }, 60_000);

  async function rpcTransport(url: string, options?: TransportOptions): Promise<Transport> {
    const t = await getRpcTransport(url, options);
    transports.push(t);
    return t;
  }

  /** One RPC round trip and one notification through transports opened with `url`/`options`. */
  async function roundTrip(url: string, options?: TransportOptions): Promise<void> {
    const topic = uniqueName('t-tls');
    queues.push(...rpcQueues(topic, ['s1']), ...notificationQueues([topic]));
    const transport = await rpcTransport(url, options);
    const server = getRpcServer(transport, new Target({ topic, server: 's1' }), [{ echo: (_ctx: unknown, args: unknown) => ({ args }) }]);
    await server.start();
    try {
      const client = getRpcClient(transport, { topic }, { timeout: 15_000 });
      await expect(client.call({ user_id: 'tls' }, 'echo', { x: 1 })).resolves.toEqual({ args: { x: 1 } });
    } finally {
      await server.stop();
      await server.wait();
    }

    const nt = await getNotificationTransport(url, options);
    transports.push(nt);
    const got: unknown[] = [];
    const listener = getNotificationListener(nt, [new Target({ topic })], [
      {
        info: (_ctx: unknown, _pub: string, _type: string, payload: unknown) => {
          got.push(payload);
          return NotificationResult.HANDLED;
        },
      },
    ]);
    await listener.start();
    try {
      await new Notifier(nt, { publisherId: 'tls.test', driver: 'messagingv2', topics: [topic] }).info({}, 'tls.ping', { n: 1 });
      await waitFor(() => got.length === 1, { timeoutMs: 15_000, message: 'the notification over TLS arrived' });
      expect(got).toEqual([{ n: 1 }]);
    } finally {
      await listener.stop();
      await listener.wait();
    }
  }

  it('amqps:// with ssl_ca_file in the URL query: RPC call and notification', async () => {
    await roundTrip(`amqps://guest:guest@127.0.0.1:${tls.port}/?ssl_ca_file=${q(tls.material.caCert)}`);
  }, 60_000);

  it('rabbit:// with ssl=true and CA, client cert and key in the URL query (client certificate required)', async () => {
    const m = tls.material;
    await roundTrip(`rabbit://guest:guest@127.0.0.1:${tls.mtlsPort}/?ssl=true&ssl_ca_file=${q(m.caCert)}&ssl_cert_file=${q(m.clientCert)}&ssl_key_file=${q(m.clientKey)}`);
  }, 60_000);

  it('CA, client cert and key as file paths in driverOptions (client certificate required)', async () => {
    const m = tls.material;
    await roundTrip(`amqps://guest:guest@127.0.0.1:${tls.mtlsPort}/`, { driverOptions: { sslCaFile: m.caCert, sslCertFile: m.clientCert, sslKeyFile: m.clientKey } });
  }, 60_000);

  it('CA, client cert and key as contents in driverOptions (client certificate required)', async () => {
    const m = tls.material;
    await roundTrip(`amqps://guest:guest@127.0.0.1:${tls.mtlsPort}/`, {
      driverOptions: { sslCa: readFileSync(m.caCert), sslCert: readFileSync(m.clientCert, 'utf8'), sslKey: readFileSync(m.clientKey) },
    });
  }, 60_000);

  it('ssl_version pins the TLS version: TLSv1_2 connects, TLSv1 (which the broker and OpenSSL 3 refuse) fails with a typed error', async () => {
    await roundTrip(`amqps://guest:guest@127.0.0.1:${tls.port}/?ssl_ca_file=${q(tls.material.caCert)}&ssl_version=TLSv1_2`);
    const transport = await rpcTransport(`amqps://guest:guest@127.0.0.1:${tls.port}/?ssl_ca_file=${q(tls.material.caCert)}&ssl_version=TLSv1`);
    const client = getRpcClient(transport, { topic: uniqueName('t-tls-v1') }, { timeout: 5000, retry: 0 });
    const err = await client.cast({}, 'echo', {}).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MessageDeliveryFailure);
    expect((err as Error).cause).toBeInstanceOf(ConnectionError);
  }, 60_000);

  it('a wrong CA fails with a typed error, not a hang, and the password appears neither in errors nor in logs', async () => {
    const wrong = generateCa(join(scratch, 'wrong'), 'wrong-ca');
    const password = 'Sup3r-S3cret-Pw';
    const logger = createMemoryLogger();
    const url = `amqps://guest:${password}@127.0.0.1:${tls.port}/?ssl_ca_file=${q(wrong.caCert)}`;
    const transport = await rpcTransport(url, { logger });
    const failures: unknown[] = [];
    const failureOf = (p: Promise<unknown>) =>
      p.then(
        () => expect.unreachable('the operation over an untrusted TLS connection succeeded'),
        (e: unknown) => {
          failures.push(e);
          return e;
        },
      );

    // retry 0: one attempt, then MessageDeliveryFailure naming the certificate problem.
    const client = getRpcClient(transport, { topic: uniqueName('t-tls-bad') }, { timeout: 5000, retry: 0 });
    const started = Date.now();
    const callErr = await failureOf(client.call({}, 'echo', {}));
    expect(callErr).toBeInstanceOf(MessageDeliveryFailure);
    expect((callErr as Error).message).toMatch(/certificate/i);
    expect((callErr as Error).cause).toBeInstanceOf(ConnectionError);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(await failureOf(client.cast({}, 'echo', {}))).toBeInstanceOf(MessageDeliveryFailure);

    // Default retry (forever, as oslo): the call still ends, at its own deadline.
    const patient = getRpcClient(transport, { topic: uniqueName('t-tls-bad') }, { timeout: 2000 });
    const t0 = Date.now();
    expect(await failureOf(patient.call({}, 'echo', {}))).toBeInstanceOf(MessagingTimeout);
    expect(Date.now() - t0).toBeLessThan(15_000);

    const nt = await getNotificationTransport(url, { logger });
    transports.push(nt);
    const notifier = new Notifier(nt, { publisherId: 'tls.bad', driver: 'messagingv2', topics: [uniqueName('t-tls-bad')], retry: 0 });
    expect(await failureOf(notifier.info({}, 'tls.bad', {}))).toBeInstanceOf(MessageDeliveryFailure);

    for (const e of failures) expect(errorText(e)).not.toContain(password);
    expect(recordsText(logger.records)).not.toContain(password);
  }, 60_000);

  it('a client without a certificate is refused by the listener that requires one, with a typed error', async () => {
    const transport = await rpcTransport(`amqps://guest:guest@127.0.0.1:${tls.mtlsPort}/?ssl_ca_file=${q(tls.material.caCert)}`);
    const client = getRpcClient(transport, { topic: uniqueName('t-tls-nocert') }, { timeout: 5000, retry: 0 });
    const err = await client.cast({}, 'echo', {}).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MessagingError);
    expect((err as Error).message).toMatch(/certificate/i);
  }, 60_000);
});
