// package.json claims only what ships: peers and description follow the schemes transport.ts can
// load, exports work for import and require, the docs ship with their links, and the license is the one declared.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TRANSPORT_SCHEMES } from '../../src/transport.js';
import { linksLeavingThePackage, selectedBy } from '../package/shipped-links.js';

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

  it('exports the API, the driver contract, the test kit and the NestJS transport, each from its dist/ index', () => {
    expect(Object.keys(pkg.exports)).toEqual(['.', './driver', './testing', './nestjs', './package.json']);
    for (const [subpath, dir] of [['.', ''], ['./driver', 'contract/'], ['./testing', 'testing/'], ['./nestjs', 'nestjs/']] as const) {
      expect(pkg.exports[subpath], subpath).toEqual({ types: `./dist/${dir}index.d.ts`, import: `./dist/${dir}index.js`, default: `./dist/${dir}index.js` });
    }
  });

  it('packs dist, src (for source maps), the docs README.md links to (not the generated docs/api), examples/, README.md and LICENSE only', () => {
    expect([...pkg.files].sort()).toEqual(['LICENSE', 'README.md', 'dist', 'docs/*.md', 'examples', 'src']);
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
