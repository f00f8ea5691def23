// Kafka over TLS and SASL, the first tests of both: TLS verifies the broker's name by default (a
// man in the middle, a TLS proxy on loopback in front of the mock cluster, holding a certificate
// the client's CA trusts but for another name, is refused); `ssl_enforce_hostname_verification=false`
// lets the handshake through. SASL credentials come from the URL and never show in an error.
// librdkafka's mock speaks neither TLS nor SASL: the proxy terminates TLS, and only the bootstrap
// connection goes through it (kafkajs then connects to the addresses the mock advertises, its
// plain ports), so no call completes over TLS here; a SASL handshake is refused by the mock.
import { beforeAll, describe, expect, it } from 'vitest';
import { ConnectionError, MessagingError, getRpcClient, getRpcTransport } from '../../src/index.js';
import { createConsoleLogger } from '../../src/core/logger.js';
import { uniqueName } from '../../src/testing/wait.js';
import { causes, errorText } from '../support/error-text.js';
import { useManInTheMiddle, type TlsProxy } from '../support/tls-proxy.js';
import { useKafkaMock } from '../support/kafka-raw.js';
import { startFakeSaslBroker } from '../support/kafka-fake-sasl.js';

const q = encodeURIComponent;
const mitm = useManInTheMiddle('kafka-tls');

/** A cast through `url` with no retry: rejects with what the driver makes of the connection failure. */
async function castFails(url: string, logLines?: string[]): Promise<unknown> {
  const logger = logLines ? createConsoleLogger({ level: 'debug', sink: (line: string) => void logLines.push(line) }) : undefined;
  const t = await getRpcTransport(url, logger ? { logger } : {});
  mitm.track(t);
  return getRpcClient(t, { topic: uniqueName('t-tls') }, { timeout: 5_000, retry: 0 })
    .cast({}, 'echo', { x: 1 })
    .then(() => expect.unreachable('the cast went through'), (e: unknown) => e);
}

describe('Kafka TLS and SASL (librdkafka mock cluster behind a TLS proxy)', () => {
  const kafka = useKafkaMock();
  let proxy: TlsProxy;
  const fast = 'connect_timeout_ms=2000&request_timeout_ms=3000';

  beforeAll(async () => {
    proxy = await mitm.proxyTo(Number(kafka.broker.brokers[0].split(':')[1]));
  });

  it('refuses a trusted certificate issued for another name with a ConnectionError naming the reason', async () => {
    const err = await castFails(`kafka://127.0.0.1:${proxy.port}/?security_protocol=SSL&ssl_cafile=${q(mitm.ca().caCert)}&${fast}`);
    expect(err).toBeInstanceOf(MessagingError);
    expect(causes(err).some((c) => c instanceof ConnectionError)).toBe(true);
    expect(errorText(err)).toMatch(/does not match certificate's altnames|ERR_TLS_CERT_ALTNAME_INVALID/);
    expect(proxy.handshakes()).toBe(0);
  }, 30_000);

  it('with ssl_enforce_hostname_verification=false the bootstrap TLS handshake completes (the chain is still checked)', async () => {
    const before = proxy.handshakes();
    // The cast fails after the handshake: the mock advertises its plain ports (see the file comment).
    await castFails(`kafka://127.0.0.1:${proxy.port}/?security_protocol=SSL&ssl_cafile=${q(mitm.ca().caCert)}&ssl_enforce_hostname_verification=false&${fast}`);
    expect(proxy.handshakes()).toBeGreaterThan(before);
  }, 30_000);

  it('an untrusted chain is refused even with ssl_enforce_hostname_verification=false', async () => {
    const before = proxy.handshakes();
    const err = await castFails(`kafka://127.0.0.1:${proxy.port}/?security_protocol=SSL&ssl_enforce_hostname_verification=false&${fast}`);
    expect(causes(err).some((c) => c instanceof ConnectionError)).toBe(true);
    expect(errorText(err)).toMatch(/self.signed|unable to (get|verify)|UNABLE_TO|SELF_SIGNED/i);
    expect(proxy.handshakes()).toBe(before);
  }, 30_000);

  it.each(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'])('SASL %s: the password from the URL shows in no error, log line or inspection', async (mechanism) => {
    const password = `pw-${uniqueName('secret')}`;
    const lines: string[] = [];
    const err = await castFails(`kafka://alice:${q(password)}@${kafka.broker.brokers[0]}/?security_protocol=SASL_PLAINTEXT&sasl_mechanism=${mechanism}&${fast}`, lines);
    expect(err).toBeInstanceOf(MessagingError);
    const text = errorText(err);
    // librdkafka 2.0.2's mock has no SaslHandshake API: kafkajs's SASL step is refused there.
    expect(text).toMatch(/does not support the requested API version|SASL|authentication/i);
    expect(lines.join('\n')).toContain('alice:***@');
    expect(text).not.toContain(password);
    expect(lines.join('\n')).not.toContain(password);
  }, 30_000);

  it.each(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'])('SASL %s against a broker that refuses it: the URL user and mechanism are sent; the error is final and hides the password', async (mechanism) => {
    const fake = await startFakeSaslBroker();
    try {
      const password = `pw-${uniqueName('secret')}`;
      const lines: string[] = [];
      const err = await castFails(`kafka://alice:${q(password)}@127.0.0.1:${fake.port}/?security_protocol=SASL_PLAINTEXT&sasl_mechanism=${mechanism}&${fast}`, lines);
      expect(fake.mechanisms[0]).toBe(mechanism);
      const first = fake.authentications[0]?.toString('utf8') ?? '';
      expect(first).toContain(mechanism === 'PLAIN' ? '\0alice\0' : 'n=alice');
      if (mechanism === 'PLAIN') expect(first).toContain(password);
      expect(err).toBeInstanceOf(MessagingError);
      expect(causes(err).some((c) => c instanceof ConnectionError)).toBe(true);
      expect((err as MessagingError).retriable).toBe(false);
      const text = errorText(err);
      expect(text).toMatch(/SASL|authentication/i);
      expect(text).not.toContain(password);
      expect(lines.join('\n')).not.toContain(password);
    } finally {
      await fake.close();
    }
  }, 30_000);
});
