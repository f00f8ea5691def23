// package.json claims only what ships: peers and description follow the schemes transport.ts can
// load, exports work for import and require, the docs ship with their links, and the license is the one declared.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TRANSPORT_SCHEMES } from '../../src/transport.js';
import { linksLeavingThePackage, selectedBy } from '../package/shipped-links.js';
import { accepts, installedWith, LOCK, nodeFloor, shortVersion } from '../support/node-engines.js';

interface PackageJson {
  description: string;
  keywords: string[];
  license: string;
  repository: { type: string; url: string };
  exports: Record<string, string | Record<string, string>>;
  files: string[];
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
  engines: { node: string };
}

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as PackageJson;

/** What each URL scheme needs from the user (`peer`: the broker library; `alternatives`: other client libraries it can use instead) and is called in prose. */
const BROKERS: Record<string, { peer?: string; alternatives?: string[]; name: string }> = {
  memory: { name: 'memory://' },
  rabbit: { peer: 'amqplib', name: 'RabbitMQ' },
  kombu: { peer: 'amqplib', name: 'RabbitMQ' },
  amqp: { peer: 'amqplib', name: 'RabbitMQ' },
  amqps: { peer: 'amqplib', name: 'RabbitMQ' },
  redis: { peer: 'ioredis', name: 'Redis' },
  rediss: { peer: 'ioredis', name: 'Redis' },
  kafka: { peer: 'kafkajs', alternatives: ['@platformatic/kafka'], name: 'Kafka' },
};

/** tidings/testing registers vitest tests: only users of that export need vitest. */
const TEST_KIT_PEER = 'vitest';
/** OpenTelemetry tracing and metrics are loaded only when a user turns instrumentation on. */
const INSTRUMENTATION_PEER = '@opentelemetry/api';
/** tidings/nestjs imports @nestjs/microservices and rxjs; @nestjs/microservices needs @nestjs/common and @nestjs/core. */
const NESTJS_PEERS = ['@nestjs/common', '@nestjs/core', '@nestjs/microservices', 'rxjs'];

const shipped = TRANSPORT_SCHEMES.map((s) => BROKERS[s]!);
const shippedNames = new Set(shipped.map((b) => b.name));
const shippedPeers = new Set(shipped.flatMap((b) => [...(b.peer ? [b.peer] : []), ...(b.alternatives ?? [])]));

describe('package.json claims what src/transport.ts can load', () => {
  it('knows every scheme transport.ts ships (add a new one to BROKERS above)', () => {
    for (const scheme of TRANSPORT_SCHEMES) expect(BROKERS, `scheme ${scheme}`).toHaveProperty([scheme]);
  });

  it('has exactly the broker libraries of the shipped drivers, the test kit\'s runner, the OpenTelemetry API and tidings/nestjs\'s NestJS as optional peers, each also a devDependency', () => {
    const peers = [...shippedPeers, TEST_KIT_PEER, INSTRUMENTATION_PEER, ...NESTJS_PEERS].sort();
    expect(Object.keys(pkg.peerDependencies ?? {}).sort()).toEqual(peers);
    expect(Object.keys(pkg.peerDependenciesMeta ?? {}).sort()).toEqual(peers);
    for (const peer of peers) {
      expect(pkg.peerDependenciesMeta?.[peer]?.optional, `${peer} is optional`).toBe(true);
      expect(pkg.devDependencies, `${peer} in devDependencies`).toHaveProperty([peer]);
    }
  });

  it('names every shipped broker in the description and its library in the keywords', () => {
    for (const name of shippedNames) expect(pkg.description).toContain(name);
    for (const peer of shippedPeers) expect(pkg.keywords).toContain(peer);
  });

  it('has the keywords people search for', () => {
    expect(pkg.keywords).toEqual(expect.arrayContaining(['oslo.messaging', 'rpc', 'notifications', 'rabbitmq', 'amqp', 'messaging', 'microservices']));
  });
});

describe('package.json exports, files, license', () => {
  it('gives every code subpath types first, then import, then default (require(esm) on Node >= 20.19)', () => {
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (typeof target === 'string') continue;
      expect(Object.keys(target), subpath).toEqual(['types', 'import', 'default']);
      expect(target.default, subpath).toBe(target.import);
    }
  });

  it('exports the API, the driver contract, the test kit, the NestJS transport and the console, each from its dist/ index', () => {
    expect(Object.keys(pkg.exports)).toEqual(['.', './driver', './testing', './nestjs', './console', './package.json']);
    for (const [subpath, dir] of [['.', ''], ['./driver', 'contract/'], ['./testing', 'testing/'], ['./nestjs', 'nestjs/'], ['./console', 'console/']] as const) {
      expect(pkg.exports[subpath], subpath).toEqual({ types: `./dist/${dir}index.d.ts`, import: `./dist/${dir}index.js`, default: `./dist/${dir}index.js` });
    }
  });

  it('packs dist, src (for source maps), the docs README.md links to (not the generated docs/api) with the console screenshot, examples/, README.md and LICENSE only', () => {
    expect([...pkg.files].sort()).toEqual(['LICENSE', 'README.md', 'dist', 'docs/*.md', 'docs/console.png', 'examples', 'src']);
    const shipped = selectedBy(pkg.files);
    expect(shipped).toEqual(expect.arrayContaining(['docs/guide.md', 'docs/writing-a-driver.md', 'docs/drivers.md', 'docs/design.md', 'examples/quick-start.ts']));
    expect(shipped.filter((p) => p.startsWith('docs/api/'))).toEqual([]);
  });

  it('ships every file a relative link of the shipped README.md and docs/*.md points to', () => {
    expect(linksLeavingThePackage(selectedBy([...pkg.files, 'package.json']))).toEqual([]);
  });

  it('flags a link to a file the package does not ship', () => {
    expect(linksLeavingThePackage(['README.md', 'docs/guide.md', 'package.json'])).toEqual(expect.arrayContaining([expect.stringMatching(/^docs\/guide\.md:\d+: \.\.\/examples\//)]));
  });

  it('declares Apache-2.0, ships its full text, and points at the repository', () => {
    expect(pkg.license).toBe('Apache-2.0');
    const license = readFileSync(new URL('../../LICENSE', import.meta.url), 'utf8');
    expect(license).toMatch(/^\s+Apache License\n\s+Version 2\.0, January 2004\n/);
    expect(license).toContain('TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION');
    expect(license).toContain('END OF TERMS AND CONDITIONS');
    expect(pkg.repository).toEqual({ type: 'git', url: 'git+https://github.com/tidings-js/tidings.git' });
  });
});

describe('Node versions: package.json engines, the lock and the README agree', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const installation = readme.slice(readme.indexOf('## Installation'), readme.indexOf('\n## ', readme.indexOf('## Installation') + 1));
  const optionalPeers = [...shippedPeers, INSTRUMENTATION_PEER];
  const floor = nodeFloor([{ engines: pkg.engines }])!;

  it('reads engines ranges as npm does', () => {
    expect(accepts('>= 20.19.4 || >= 22.18.0 || >= 24.6.0', [20, 20, 2])).toBe(true);
    expect(accepts('>= 20.19.4 || >= 22.18.0 || >= 24.6.0', [20, 19, 0])).toBe(false);
    expect(accepts('^20.19.0 || >=22.12.0', [21, 0, 0])).toBe(false);
    expect(accepts('>=20', [20, 0, 0])).toBe(true);
    expect(() => accepts('node 20', [20, 0, 0])).toThrow(/cannot read/);
    expect(nodeFloor([{ engines: { node: '>= 20.19.4 || >= 22.18.0' } }, { engines: { node: '>= 22.19.0' } }])).toEqual([22, 19, 0]);
  });

  it('npm i tidings prints no EBADENGINE on any Node its engines accept: what it installs (not the optional peers) accepts them all', () => {
    expect(floor).toEqual([20, 0, 0]);
    const runtime = Object.entries(LOCK.packages).filter(([path, e]) => path !== '' && !e.dev && !e.optional);
    expect(runtime.map(([path]) => path)).toContain('node_modules/eventemitter3');
    const nodes = [floor, [20, 19, 0], [22, 0, 0], [24, 0, 0]] as const;
    const refused = runtime.flatMap(([path, e]) => nodes.filter((v) => e.engines?.node && !accepts(e.engines.node, v)).map((v) => `${path} refuses Node ${v.join('.')} (${e.engines!.node})`));
    expect(refused).toEqual([]);
  });

  it('README installation has an `npm i` line for every optional peer', () => {
    for (const peer of optionalPeers) expect(installation, peer).toMatch(new RegExp(`^npm i ${peer.replace(/[/.]/g, '\\$&')}\\s`, 'm'));
  });

  it("README's Node table gives each optional peer the oldest Node its engines and its dependencies' accept", () => {
    expect(installation).toContain(`| tidings | | ${floor[0]} or later`);
    for (const peer of optionalPeers) {
      const row = installation.split('\n').find((l) => l.startsWith(`| \`${peer}\` |`));
      expect(row, `a row for ${peer}`).toBeDefined();
      const needs = nodeFloor(installedWith(peer).values())!;
      const node = row!.split('|')[3]!;
      expect(node, `${peer} needs Node ${needs.join('.')}`).toContain(`${shortVersion(needs)} or later`);
      expect(row, peer).toContain(`\`${pkg.peerDependencies![peer]}\``);
      expect(row, peer).toContain(`tested: ${pkg.devDependencies[peer]}`);
    }
  });
});
