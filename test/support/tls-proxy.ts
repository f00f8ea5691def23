// A TLS-terminating proxy on a loopback port in front of a plain broker port: the man in the
// middle of the hostname tests, holding a certificate the client's CA trusts but for another name.
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { createServer, type TLSSocket } from 'node:tls';

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
