// Every option oslo.messaging registers in [oslo_messaging_rabbit], read from the installed
// oslo.messaging, is in docs/drivers.md's table and is accepted or refused by name as a URL query.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { InvalidTransportURL } from '../../../../src/core/errors.js';
import { TransportURL } from '../../../../src/core/transport-url.js';
import { resolveOptions } from '../../../../src/drivers/amqp/options.js';
import { PYTHON, requireOsloMessaging } from '../../../interop/support/python.js';

interface OsloOpt {
  readonly name: string;
  /** A valid value in oslo's terms (its default, first choice, or true for a boolean), or null. */
  readonly sample: string | null;
}

const LIST_OPTS = `
import json
from oslo_messaging._drivers import impl_rabbit, amqp, base
out = []
for o in list(impl_rabbit.rabbit_opts) + list(amqp.amqp_opts) + list(base.base_opts):
    if type(o).__name__ == 'BoolOpt':
        sample = 'true'
    elif getattr(o.type, 'choices', None):
        sample = str(list(o.type.choices)[0])
    elif o.default not in (None, ''):
        sample = str(o.default)
    else:
        sample = None
    out.append({'name': o.name, 'sample': sample})
    for d in o.deprecated_opts or []:
        if d.name and d.name != o.name:
            out.append({'name': d.name, 'sample': sample})
print(json.dumps(out))
`;

/** Values for oslo options whose default is empty (their meaning comes from the operator). */
const SAMPLES: Readonly<Record<string, string>> = {
  ssl_version: 'TLSv1_2',
  kombu_ssl_version: 'TLSv1_2',
  ssl_key_file: '/etc/ssl/k.pem',
  kombu_ssl_keyfile: '/etc/ssl/k.pem',
  ssl_cert_file: '/etc/ssl/c.pem',
  kombu_ssl_certfile: '/etc/ssl/c.pem',
  ssl_ca_file: '/etc/ssl/ca.pem',
  kombu_ssl_ca_certs: '/etc/ssl/ca.pem',
  kombu_compression: 'gzip',
};

/** Options oslo accepts only together with others (oslo's own rules), as a query suffix. */
const COMPANIONS: Readonly<Record<string, string>> = {
  rabbit_stream_fanout: '&rabbit_transient_quorum_queue=true',
};

/** Names later oslo releases added (read from openstack/oslo.messaging up to 18.1), not in the installed 14.0.3. */
const LATER: readonly OsloOpt[] = [
  { name: 'rabbit_quorum_max_memory_length', sample: '0' },
  { name: 'rabbit_quorum_max_memory_bytes', sample: '0' },
  { name: 'rabbit_transient_quorum_queue', sample: 'true' },
  { name: 'use_queue_manager', sample: 'true' },
  { name: 'hostname', sample: 'node1.example.com' },
  { name: 'processname', sample: 'nova-api' },
  { name: 'rabbit_stream_fanout', sample: 'true' },
  { name: 'kombu_reconnect_splay', sample: '0.5' },
];

function osloRabbitOptions(): OsloOpt[] {
  requireOsloMessaging();
  const r = spawnSync(PYTHON, ['-c', LIST_OPTS], { encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`Could not list oslo.messaging's rabbit options with ${PYTHON} (python3-oslo.messaging): ${r.stderr || r.error?.message}`);
  const installed = JSON.parse(r.stdout) as OsloOpt[];
  return [...installed, ...LATER.filter((l) => !installed.some((o) => o.name === l.name))];
}

/** The oslo names in the first column of docs/drivers.md's `[oslo_messaging_rabbit]` table. */
function documentedNames(): Set<string> {
  const doc = readFileSync(new URL('../../../../docs/drivers.md', import.meta.url), 'utf8');
  const section = doc.split("## oslo's `[oslo_messaging_rabbit]` options")[1]?.split('\n## ')[0] ?? '';
  const names = new Set<string>();
  for (const row of section.split('\n').filter((l) => l.startsWith('| `'))) {
    for (const m of row.split('|')[1].matchAll(/`([a-z0-9_]+)`/g)) names.add(m[1]);
  }
  return names;
}

describe("oslo.messaging's [oslo_messaging_rabbit] options", () => {
  const opts = osloRabbitOptions();

  it('reads the installed option list (oslo 14 names among them)', () => {
    const names = opts.map((o) => o.name);
    expect(names).toEqual(expect.arrayContaining(['kombu_compression', 'heartbeat_rate', 'rabbit_transient_queues_ttl', 'rabbit_quorum_queue', 'amqp_durable_queues', 'rabbit_use_ssl']));
  });

  it('lists every one in the docs table', () => {
    const documented = documentedNames();
    expect(opts.map((o) => o.name).filter((n) => !documented.has(n))).toEqual([]);
  });

  it('accepts every one as a URL query, or refuses it naming the option and why', () => {
    const unknown: string[] = [];
    for (const { name, sample } of opts) {
      const value = SAMPLES[name] ?? sample;
      expect(value, `a sample value for ${name}`).not.toBeNull();
      try {
        resolveOptions(TransportURL.parse(`rabbit://h/?${name}=${encodeURIComponent(value!)}${COMPANIONS[name] ?? ''}`));
      } catch (err) {
        expect(err, name).toBeInstanceOf(InvalidTransportURL);
        const message = (err as Error).message;
        if (message.startsWith('Unknown option')) unknown.push(name);
        else expect(message, name).toMatch(new RegExp(`^${name}\\b.*: .{20,}`));
      }
    }
    expect(unknown).toEqual([]);
  });

  it('refuses what tidings cannot honour with InvalidTransportURL, never silently', () => {
    const refused = (query: string) => () => resolveOptions(TransportURL.parse(`rabbit://h/?${query}`));
    expect(refused('kombu_compression=bz2')).toThrow(/kombu_compression=bz2 is not supported.*no bz2/);
    expect(refused('rabbit_login_method=RABBIT-CR-DEMO')).toThrow(InvalidTransportURL);
    expect(refused('ssl_version=SSLv3')).toThrow(/ssl_version=SSLv3 is not supported/);
  });
});
