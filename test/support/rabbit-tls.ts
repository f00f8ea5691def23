// Adds TLS listeners to the running RabbitMQ on loopback ports from the test setup, through
// `rabbitmqctl eval`, without a restart: the plain 5672 listener other tests use stays untouched.
import { spawnSync } from 'node:child_process';
import { renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateTlsMaterial, loadTlsMaterial, requireOpenssl, type TlsMaterial } from './tls.js';

/** TLS; a client certificate is verified when given but not required. */
export const RABBIT_TLS_PORT = Number(process.env.TIDINGS_RABBIT_TLS_PORT ?? 5671);
/** TLS that refuses clients without a certificate signed by the test CA. */
export const RABBIT_MTLS_PORT = Number(process.env.TIDINGS_RABBIT_MTLS_PORT ?? 5674);

/**
 * The broker keeps reading the PEM files after the listener started, so they live in one
 * stable directory per user rather than a per-test temp dir that is deleted afterwards. The
 * broker (user rabbitmq) must be able to read it: set TIDINGS_RABBIT_TLS_DIR when its /tmp is private.
 */
const MATERIAL_DIR = process.env.TIDINGS_RABBIT_TLS_DIR ?? join(tmpdir(), `tidings-rabbit-tls-${process.getuid?.() ?? 'u'}`);

export interface RabbitTls {
  material: TlsMaterial;
  port: number;
  mtlsPort: number;
}

function erlString(s: string): string {
  return '"' + s.replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';
}

/** `rabbitmqctl` needs the node's Erlang cookie; a non-root CI user can set e.g. TIDINGS_RABBITMQCTL="sudo -n rabbitmqctl". */
export function rabbitmqctlCommand(): [string, ...string[]] {
  const parts = (process.env.TIDINGS_RABBITMQCTL ?? 'rabbitmqctl').trim().split(/\s+/);
  return parts as [string, ...string[]];
}

function rabbitmqctl(args: string[], timeoutMs = 60_000): { ok: boolean; out: string } {
  const [cmd, ...pre] = rabbitmqctlCommand();
  const r = spawnSync(cmd, [...pre, ...args], { encoding: 'utf8', timeout: timeoutMs });
  if (r.error) {
    throw new Error(
      `${cmd} could not be run (${r.error.message}); rabbitmqctl ships with rabbitmq-server (apt-get install -y rabbitmq-server), ` +
        'must reach the running node and read its Erlang cookie (run as root or set TIDINGS_RABBITMQCTL="sudo -n rabbitmqctl").',
    );
  }
  return { ok: r.status === 0, out: `${r.stdout}${r.stderr}`.trim() };
}

/**
 * An Erlang expression that makes sure a TLS listener with exactly these options runs on
 * 127.0.0.1:`port`: `already` when it does, `started` after starting it (replacing a listener
 * on that port with other options), or an `{error, ...}` term.
 */
function listenerExpr(port: number, m: TlsMaterial, requireClientCert: boolean, restart: boolean): string {
  const opts = `[{cacertfile,${erlString(m.caCert)}},{certfile,${erlString(m.serverCert)}},{keyfile,${erlString(m.serverKey)}},` +
    `{verify,verify_peer},{fail_if_no_peer_cert,${requireClientCert}}]`;
  return [
    `Port = ${port}`,
    `Want = ${opts}`,
    `Existing = [L || L <- rabbit_networking:active_listeners(), element(2, L) =:= node(), element(6, L) =:= Port]`,
    `Same = [L || L <- Existing, not ${restart}, element(3, L) =:= 'amqp/ssl', lists:all(fun(O) -> lists:member(O, element(7, L)) end, Want)]`,
    `case {Same, Existing} of
       {[_ | _], _} -> already;
       {[], _} ->
         case Existing of [] -> ok; _ -> rabbit_networking:stop_tcp_listener({"127.0.0.1", Port}) end,
         {ok, Apps} = application:get_env(rabbit, ssl_apps),
         ok = app_utils:start_applications(Apps),
         ssl:clear_pem_cache(),
         case rabbit_networking:start_ssl_listener({"127.0.0.1", Port}, rabbit_ssl_options:fix(Want), 1) of
           ok -> started;
           Err -> Err
         end
     end.`,
  ].join(',\n');
}

function ensureListener(port: number, m: TlsMaterial, requireClientCert: boolean, restart: boolean): void {
  let last = '';
  // A concurrent setup may win the race to start it; the second look then sees `already`.
  for (let attempt = 0; attempt < 2; attempt++) {
    const r = rabbitmqctl(['eval', listenerExpr(port, m, requireClientCert, restart && attempt === 0)]);
    last = r.out;
    if (r.ok && /^(already|started)$/m.test(r.out)) return;
  }
  throw new Error(
    `Could not start a RabbitMQ TLS listener on 127.0.0.1:${port} via rabbitmqctl eval (run as root or set TIDINGS_RABBITMQCTL="sudo -n rabbitmqctl"): ${last}`,
  );
}

/**
 * The test PKI in the stable directory, generated once (atomically, so parallel setups agree).
 * `fresh` says it was just generated: a listener still running with files of the same names
 * holds the old certificates in the broker's PEM cache and must be restarted.
 */
function material(): { m: TlsMaterial; fresh: boolean } {
  const existing = loadTlsMaterial(MATERIAL_DIR);
  if (existing) return { m: existing, fresh: false };
  const staging = `${MATERIAL_DIR}.${process.pid}.${Date.now()}`;
  generateTlsMaterial(staging);
  try {
    renameSync(staging, MATERIAL_DIR);
  } catch {
    rmSync(staging, { recursive: true, force: true });
  }
  const m = loadTlsMaterial(MATERIAL_DIR);
  if (!m) throw new Error(`TLS material in ${MATERIAL_DIR} is incomplete; delete the directory and retry`);
  return { m, fresh: true };
}

/**
 * Makes RabbitMQ listen for TLS on RABBIT_TLS_PORT (client certificate optional) and
 * RABBIT_MTLS_PORT (client certificate required). Idempotent; safe to call from every setup.
 */
export function ensureRabbitTls(): RabbitTls {
  requireOpenssl();
  const { m, fresh } = material();
  ensureListener(RABBIT_TLS_PORT, m, false, fresh);
  ensureListener(RABBIT_MTLS_PORT, m, true, fresh);
  return { material: m, port: RABBIT_TLS_PORT, mtlsPort: RABBIT_MTLS_PORT };
}
