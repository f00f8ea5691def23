// The Redis driver over TLS (`rediss://` with a CA from the URL) and with ACL credentials from the
// URL, against throwaway redis-servers on loopback ports: RPC and notifications work; a wrong CA
// or a wrong password fails with a typed error that never shows the password.
import { mkdtempSync, rmSync } from 'node:fs';
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
  Notifier,
  NotificationResult,
  Target,
  type MemoryLogger,
  type Transport,
} from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { startRedisServer, type RedisServer } from '../support/redis-servers.js';
import { generateCa, generateTlsMaterial, type TlsMaterial } from '../support/tls.js';
import { errorText, recordsText } from '../support/error-text.js';

const q = encodeURIComponent;
const PASSWORD = 'Sup3r-S3cret-Redis-Pw';
const transports: Transport[] = [];
const servers: RedisServer[] = [];
let scratch: string;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'tidings-redis-tls-test-'));
});

afterAll(async () => {
  for (const t of transports) await t.cleanup();
  await Promise.all(servers.map((s) => s.stop()));
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, 60_000);

async function open(kind: 'rpc' | 'notification', url: string, logger?: MemoryLogger): Promise<Transport> {
  const t = kind === 'rpc' ? await getRpcTransport(url, { logger }) : await getNotificationTransport(url, { logger });
  transports.push(t);
  return t;
}

/** One RPC round trip and one notification through transports opened with `url`. */
async function roundTrip(url: string): Promise<void> {
  const topic = uniqueName('t-rtls');
  const transport = await open('rpc', url);
  const server = getRpcServer(transport, new Target({ topic, server: 's1' }), [{ echo: (_ctx: unknown, args: unknown) => ({ args }) }]);
  await server.start();
  try {
    const client = getRpcClient(transport, { topic }, { timeout: 15_000 });
    await expect(client.call({ user_id: 'tls' }, 'echo', { x: 1 })).resolves.toEqual({ args: { x: 1 } });
  } finally {
    await server.stop();
    await server.wait();
  }
  const nt = await open('notification', url);
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
    await new Notifier(nt, { publisherId: 'redis.test', driver: 'messagingv2', topics: [topic] }).info({}, 'redis.ping', { n: 1 });
    await waitFor(() => got.length === 1, { timeoutMs: 15_000, message: 'the notification arrived' });
    expect(got).toEqual([{ n: 1 }]);
  } finally {
    await listener.stop();
    await listener.wait();
  }
}

function logText(logger: MemoryLogger): string {
  return recordsText(logger.records);
}

/** A notification send and an RPC cast with retry 0: both must fail, typed, within a bound. */
async function failures(url: string, logger: MemoryLogger): Promise<Error[]> {
  const started = Date.now();
  const nt = await open('notification', url, logger);
  const notifier = new Notifier(nt, { publisherId: 'redis.bad', driver: 'messagingv2', topics: [uniqueName('t-rbad')], retry: 0 });
  const rt = await open('rpc', url, logger);
  const client = getRpcClient(rt, { topic: uniqueName('t-rbad') }, { timeout: 5000, retry: 0 });
  const errs = await Promise.all([notifier.info({}, 'redis.bad', {}), client.cast({}, 'echo', {})].map((p) => p.then(() => expect.unreachable('the operation succeeded'), (e: unknown) => e as Error)));
  expect(Date.now() - started).toBeLessThan(20_000);
  return errs;
}

describe('redis over TLS', () => {
  let m: TlsMaterial;
  let server: RedisServer;
  beforeAll(async () => {
    m = generateTlsMaterial(join(scratch, 'pki'));
    server = await startRedisServer({ tls: m, password: PASSWORD });
    servers.push(server);
  }, 60_000);

  it('rediss:// with ssl_ca_file in the URL query: RPC call and notification', async () => {
    expect(server.url).toMatch(/^rediss:\/\//);
    await roundTrip(`${server.url}?ssl_ca_file=${q(m.caCert)}`);
  }, 60_000);

  it('a wrong CA fails with a typed error naming the certificate problem, never the password', async () => {
    const wrong = generateCa(join(scratch, 'wrong'), 'wrong-ca');
    const logger = createMemoryLogger();
    const errs = await failures(`${server.url}?ssl_ca_file=${q(wrong.caCert)}`, logger);
    for (const e of errs) {
      expect(e).toBeInstanceOf(MessageDeliveryFailure);
      expect(e.message).toMatch(/certificate/i);
      expect(e.cause).toBeInstanceOf(ConnectionError);
      expect(errorText(e)).not.toContain(PASSWORD);
    }
    expect(logText(logger)).not.toContain(PASSWORD);
  }, 60_000);
});

describe('redis with an ACL user from the URL', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer({ user: { name: 'tidings-app', password: PASSWORD } });
    servers.push(server);
  }, 60_000);

  it('user and password from the URL: RPC call and notification', async () => {
    expect(server.url).toContain(`tidings-app:${PASSWORD}@`);
    await roundTrip(server.url);
  }, 60_000);

  it('a wrong password fails at once with a typed, non-retriable error; the password is redacted everywhere', async () => {
    const wrong = `Wr0ng-${PASSWORD}`;
    const logger = createMemoryLogger();
    const url = server.url.replace(`:${PASSWORD}@`, `:${wrong}@`);
    const transport = await open('notification', url, logger);
    expect(String(transport)).not.toContain(wrong);
    const errs = await failures(url, logger);
    for (const e of errs) {
      expect(e).toBeInstanceOf(MessagingError);
      expect((e as MessagingError).retriable).toBe(false);
      expect(errorText(e)).toMatch(/WRONGPASS|refused the login/);
      expect(errorText(e)).not.toContain(wrong);
    }
    expect(logText(logger)).not.toContain(wrong);
    // Default retry (forever): a login that cannot succeed is not retried forever either.
    const notifier = new Notifier(transport, { publisherId: 'redis.bad', driver: 'messagingv2', topics: [uniqueName('t-rbad')] });
    const err = await notifier.info({}, 'redis.bad', {}).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(MessagingError);
    expect((err as MessagingError).retriable).toBe(false);
  }, 60_000);
});
