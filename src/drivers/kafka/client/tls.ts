// The TLS options both client adapters give node:tls for `security_protocol=SSL`/`SASL_SSL`:
// the CA bundle, and the server's name checked against its certificate unless turned off.
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import type { ResolvedKafkaOptions } from '../options.js';

/** The node:tls options of a transport, or undefined without TLS. */
export function tlsOptionsOf(options: ResolvedKafkaOptions): ConnectionOptions | undefined {
  if (options.securityProtocol !== 'SSL' && options.securityProtocol !== 'SASL_SSL') return undefined;
  const tls: ConnectionOptions = { rejectUnauthorized: true };
  if (options.sslCaFile) tls.ca = [readFileSync(options.sslCaFile, 'utf8')];
  // The chain is still verified; only the name check goes (oslo's `ssl_check_hostname=False`).
  if (!options.sslEnforceHostnameVerification) tls.checkServerIdentity = () => undefined;
  return tls;
}
