// A TLS-terminating proxy on a loopback port in front of a plain broker port: the man in the
// middle of the hostname tests, holding a certificate the client's CA trusts but for another name.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll } from 'vitest';
import type { Transport } from '../../src/index.js';
import { generateCa, issueServerCertificateFor, type CertificateAuthority } from './tls.js';

export interface TlsProxy {
  /** The proxy's loopback port. */
  port: number;
  /** TLS handshakes that completed (a client that refused the certificate never completes one). */
  handshakes(): number;
  close(): Promise<void>;
}

/** Accepts TLS with `cert`/`key` and pipes each connection to 127.0.0.1:`targetPort`. */
export async function startTlsProxy(cert: string, key: string, targetPort: number): Promise<TlsProxy> {
  const sockets = new Set<Socket>();
  let handshakes = 0;
  const server = createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (client: TLSSocket) => {
    handshakes++;
    const upstream = connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  // A client that refuses the certificate ends the handshake: not the proxy's failure.
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the TLS proxy has no port');
  return {
    port: address.port,
    handshakes: () => handshakes,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The hostname tests' fixture: a scratch CA, a certificate it issued for another name, the proxies and transports to close. */
export interface ManInTheMiddle {
  /** The CA the client is told to trust (valid once the file's `beforeAll` ran). */
  ca(): CertificateAuthority;
  /** A proxy in front of 127.0.0.1:`targetPort` holding the certificate for `elsewhere.example`; closed after the file. */
  proxyTo(targetPort: number): Promise<TlsProxy>;
  /** Cleans `transport` up after the file. */
  track<T extends Transport>(transport: T): T;
}

/** Registers the file's hooks for a man in the middle and returns the fixture. */
export function useManInTheMiddle(prefix: string): ManInTheMiddle {
  let scratch = '';
  let ca: CertificateAuthority | undefined;
  let certificate: { cert: string; key: string } | undefined;
  const proxies: TlsProxy[] = [];
  const transports: Transport[] = [];
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), `tidings-${prefix}-`));
    ca = generateCa(join(scratch, 'pki'));
    certificate = issueServerCertificateFor(ca, 'elsewhere', 'elsewhere.example');
  }, 60_000);
  afterAll(async () => {
    for (const t of transports) await t.cleanup();
    await Promise.all(proxies.map((p) => p.close()));
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('useManInTheMiddle: used before its beforeAll ran');
    return value;
  };
  return {
    ca: () => ready(ca),
    proxyTo: async (targetPort) => {
      const { cert, key } = ready(certificate);
      const proxy = await startTlsProxy(cert, key, targetPort);
      proxies.push(proxy);
      return proxy;
    },
    track: (transport) => {
      transports.push(transport);
      return transport;
    },
  };
}
