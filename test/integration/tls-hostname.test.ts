// TLS verifies the server's name by default on amqps:// and rediss://: a man in the middle (a TLS
// proxy on loopback in front of the real broker) holding a certificate that the client's CA trusts,
// but issued for another name, is refused before any credential crosses; the one option
// `ssl_enforce_hostname_verification=false` lets the same connection through.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionError, MessagingError, getRpcClient, getRpcServer, getRpcTransport, type Transport } from '../../src/index.js';
import { uniqueName } from '../../src/testing/wait.js';
import { requireRabbitMQ, requireRedis } from '../support/brokers.js';
import { generateCa, issueServerCertificateFor, type CertificateAuthority } from '../support/tls.js';
import { startTlsProxy, type TlsProxy } from '../support/tls-proxy.js';

const q = encodeURIComponent;
let scratch: string;
let ca: CertificateAuthority;
let certificate: { cert: string; key: string };
const proxies: TlsProxy[] = [];
const transports: Transport[] = [];

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'tidings-tls-hostname-'));
  ca = generateCa(join(scratch, 'pki'));
  certificate = issueServerCertificateFor(ca, 'elsewhere', 'elsewhere.example');
}, 60_000);

afterAll(async () => {
  for (const t of transports) await t.cleanup();
  await Promise.all(proxies.map((p) => p.close()));
  rmSync(scratch, { recursive: true, force: true });
});

/** Every rendering of an error along its cause chain. */
function errorText(e: unknown): string {
  const parts: string[] = [inspect(e, { depth: Infinity })];
  for (let cur: unknown = e, depth = 0; cur instanceof Error && depth < 10; cur = cur.cause, depth++) parts.push(String(cur), cur.message);
  return parts.join('\n');
}

function causes(e: unknown): unknown[] {
  const out: unknown[] = [];
  for (let cur: unknown = e, depth = 0; cur !== undefined && depth < 10; cur = (cur as { cause?: unknown }).cause, depth++) out.push(cur);
  return out;
}

async function open(url: string): Promise<Transport> {
  const t = await getRpcTransport(url);
  transports.push(t);
  return t;
}

/** A call through `url` (server and client on transports of their own). */
async function roundTrip(url: string): Promise<unknown> {
  const topic = uniqueName('t-tlsname');
  const server = getRpcServer(await open(url), { topic, server: 's1' }, [{ echo: (_ctx: unknown, args: { x: number }) => args.x }]);
  await server.start();
  try {
    return await getRpcClient(await open(url), { topic }, { timeout: 10_000 }).call({}, 'echo', { x: 42 });
  } finally {
    await server.stop();
    await server.wait();
  }
}

const brokers = [
  { name: 'RabbitMQ (amqps://)', require: requireRabbitMQ, port: 5672, url: (port: number) => `amqps://guest:guest@127.0.0.1:${port}/?ssl_ca_file=${q(ca.caCert)}` },
  { name: 'Redis (rediss://)', require: requireRedis, port: 6379, url: (port: number) => `rediss://127.0.0.1:${port}/?ssl_ca_file=${q(ca.caCert)}` },
];

for (const broker of brokers) {
  describe(`TLS hostname verification: ${broker.name}`, () => {
    let proxy: TlsProxy;
    beforeAll(async () => {
      await broker.require();
      proxy = await startTlsProxy(certificate.cert, certificate.key, broker.port);
      proxies.push(proxy);
    });

    it('refuses a trusted certificate issued for another name with a ConnectionError naming the reason, before any byte of the protocol', async () => {
      const transport = await open(broker.url(proxy.port));
      const err = await getRpcClient(transport, { topic: uniqueName('t-tlsname') }, { timeout: 5_000, retry: 0 })
        .cast({}, 'echo', { x: 1 })
        .then(() => expect.unreachable('the cast went through a server with a certificate for another name'), (e: unknown) => e);
      expect(err).toBeInstanceOf(MessagingError);
      expect(causes(err).some((c) => c instanceof ConnectionError)).toBe(true);
      expect(errorText(err)).toMatch(/does not match certificate's altnames|ERR_TLS_CERT_ALTNAME_INVALID/);
      expect(proxy.handshakes()).toBe(0);
    }, 30_000);

    it('lets it through with ssl_enforce_hostname_verification=false (the one option to turn it off)', async () => {
      expect(await roundTrip(`${broker.url(proxy.port)}&ssl_enforce_hostname_verification=false`)).toBe(42);
      expect(proxy.handshakes()).toBeGreaterThan(0);
    }, 30_000);
  });
}
