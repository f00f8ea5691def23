// TLS verifies the server's name by default on amqps:// and rediss://: a man in the middle (a TLS
// proxy on loopback in front of the real broker) holding a certificate that the client's CA trusts,
// but issued for another name, is refused before any credential crosses; the one option
// `ssl_enforce_hostname_verification=false` lets the same connection through.
import { beforeAll, describe, expect, it } from 'vitest';
import { ConnectionError, MessagingError, getRpcClient, getRpcServer, getRpcTransport, type Transport } from '../../src/index.js';
import { uniqueName } from '../../src/testing/wait.js';
import { requireRabbitMQ, requireRedis } from '../support/brokers.js';
import { causes, errorText } from '../support/error-text.js';
import { useManInTheMiddle, type TlsProxy } from '../support/tls-proxy.js';

const q = encodeURIComponent;
const mitm = useManInTheMiddle('tls-hostname');

async function open(url: string): Promise<Transport> {
  const t = await getRpcTransport(url);
  mitm.track(t);
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
  { name: 'RabbitMQ (amqps://)', require: requireRabbitMQ, port: 5672, url: (port: number) => `amqps://guest:guest@127.0.0.1:${port}/?ssl_ca_file=${q(mitm.ca().caCert)}` },
  { name: 'Redis (rediss://)', require: requireRedis, port: 6379, url: (port: number) => `rediss://127.0.0.1:${port}/?ssl_ca_file=${q(mitm.ca().caCert)}` },
];

for (const broker of brokers) {
  describe(`TLS hostname verification: ${broker.name}`, () => {
    let proxy: TlsProxy;
    beforeAll(async () => {
      await broker.require();
      proxy = await mitm.proxyTo(broker.port);
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
