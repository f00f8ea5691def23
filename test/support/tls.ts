// Test PKI with the `openssl` CLI: a CA, a server certificate for localhost/127.0.0.1 and a
// client certificate, written as PEM files that a broker running as another user can read.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CertificateAuthority {
  dir: string;
  caCert: string;
  caKey: string;
}

export interface TlsMaterial extends CertificateAuthority {
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

/** Throws (failing the suite) when `openssl` is missing, saying how to install it. */
export function requireOpenssl(): void {
  const r = spawnSync('openssl', ['version'], { encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0) {
    throw new Error(`The openssl CLI is needed to generate test certificates (${r.error?.message ?? r.stderr}). Install it with \`apt-get install -y openssl\`.`);
  }
}

function openssl(args: string[], cwd: string): void {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed (status ${r.status}): ${r.error?.message ?? r.stderr}`);
}

/** Test keys are not secrets; the broker runs as another user and must read them. */
function makeReadable(dir: string): void {
  chmodSync(dir, 0o755);
  for (const f of readdirSync(dir)) chmodSync(join(dir, f), 0o644);
}

/** A self-signed CA (`<name>.crt`, `<name>.key`) in `dir`. */
export function generateCa(dir: string, name = 'ca', commonName = `tidings test CA ${name}`): CertificateAuthority {
  requireOpenssl();
  mkdirSync(dir, { recursive: true });
  openssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-sha256', '-days', '3650', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-subj', `/CN=${commonName}`,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
    dir,
  );
  makeReadable(dir);
  return { dir, caCert: join(dir, `${name}.crt`), caKey: join(dir, `${name}.key`) };
}

/** A leaf certificate signed by `ca`: `<name>.crt`/`<name>.key`. */
function issue(ca: CertificateAuthority, name: string, subject: string, extensions: string): { cert: string; key: string } {
  const dir = ca.dir;
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-sha256', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject], dir);
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', ca.caCert, '-CAkey', ca.caKey, '-CAcreateserial', '-sha256', '-days', '3650', '-out', `${name}.crt`, '-extfile', `${name}.ext`], dir);
  makeReadable(dir);
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

/** A server certificate signed by `ca` that names only `dnsName` (`<name>.crt`/`<name>.key`): what a man in the middle with a trusted certificate for another host holds. */
export function issueServerCertificateFor(ca: CertificateAuthority, name: string, dnsName: string): { cert: string; key: string } {
  return issue(ca, name, `/CN=${dnsName}`, `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:${dnsName}\n`);
}

/** CA + server certificate (CN=localhost, SAN DNS:localhost and IP:127.0.0.1) + client certificate, in `dir`. */
export function generateTlsMaterial(dir: string): TlsMaterial {
  const ca = generateCa(dir);
  const server = issue(ca, 'server', '/CN=localhost',
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n');
  const client = issue(ca, 'client', '/CN=tidings-test-client',
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n');
  return { ...ca, serverCert: server.cert, serverKey: server.key, clientCert: client.cert, clientKey: client.key };
}

/** The material in `dir` if every file is there, else undefined. */
export function loadTlsMaterial(dir: string): TlsMaterial | undefined {
  const m: TlsMaterial = {
    dir,
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    serverCert: join(dir, 'server.crt'),
    serverKey: join(dir, 'server.key'),
    clientCert: join(dir, 'client.crt'),
    clientKey: join(dir, 'client.key'),
  };
  return [m.caCert, m.caKey, m.serverCert, m.serverKey, m.clientCert, m.clientKey].every((f) => existsSync(f)) ? m : undefined;
}
