// The console's JSON API (startConsole, docs/console.md) on memory://, RabbitMQ, Redis and Kafka
// (the mock cluster): every endpoint, a server the test starts is listed, a pool's backlog and
// its drain are shown, a poison notification becomes a dead letter that is listed (with its
// error), shown (its body), replayed once and purged; every guard refuses what
// it must (read-only, token, origin, content type, body size, limits, Host); and no response, of
// any endpoint, carries the URL's password or the token.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsole, type ConsoleHandle } from '../../src/console/index.js';
import { getNotificationListener, getRpcClient, getRpcServer, getRpcTransport, Notifier, NotificationResult, Target, type NotificationListener, type Transport } from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { requireRabbitMQ, requireRedis } from '../support/brokers.js';
import { ConsoleHttp } from '../support/console-http.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';
import { deleteRedisKeys } from '../support/redis-keys.js';
import { SHORT_GROUP_QUERY, startKafkaMock, type KafkaTestBroker } from '../support/kafka-broker.js';

const RUN = randomUUID().slice(0, 8);
const TOKEN = `tok-${randomUUID()}`;
const REDIS_USER = `t-console-${RUN}`;
const REDIS_PASSWORD = `s3cr3t-redis-${RUN}`;
const RABBIT_PREFIX = `t-console-${RUN}`;
const REDIS_PREFIX = `t-console-${RUN}`;

let kafka: KafkaTestBroker | undefined;

interface Broker {
  readonly name: string;
  readonly url: string;
  /** The URL's password; undefined for a URL without one (the token is still looked for). */
  readonly password: string | undefined;
  readonly controlExchange?: string;
  setup(): Promise<void>;
  teardown(): Promise<void>;
}

const adminRedis = () => new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });

const BROKERS: Broker[] = [
  {
    name: 'memory',
    url: `memory://console:s3cr3t-p4ss@localhost/${RUN}?max_deliveries=3`,
    password: 's3cr3t-p4ss',
    setup: async () => {},
    teardown: async () => {},
  },
  {
    name: 'rabbit',
    url: 'amqp://guest:guest@127.0.0.1:5672/?max_deliveries=3',
    password: 'guest',
    controlExchange: `${RABBIT_PREFIX}-x`,
    setup: requireRabbitMQ,
    teardown: async () => void (await deleteRabbitObjectsWithPrefix(RABBIT_PREFIX)),
  },
  {
    name: 'kafka',
    get url() {
      if (kafka === undefined) throw new Error('the Kafka mock is not started yet');
      return `${kafka.url}/?${SHORT_GROUP_QUERY}&max_deliveries=3`;
    },
    password: undefined,
    setup: async () => {
      kafka = await startKafkaMock({ brokers: 1 });
    },
    teardown: async () => {
      await kafka?.stop();
    },
  },
  {
    name: 'redis',
    url: `redis://${REDIS_USER}:${REDIS_PASSWORD}@127.0.0.1:6379/?key_prefix=${REDIS_PREFIX}&lease_ms=300&sweep_interval_ms=100&max_deliveries=3`,
    password: REDIS_PASSWORD,
    setup: async () => {
      await requireRedis();
      const redis = adminRedis();
      try {
        // A user of this run only, so the URL carries a password the test can look for.
        await redis.call('ACL', 'SETUSER', REDIS_USER, 'reset', 'on', `>${REDIS_PASSWORD}`, '~*', '&*', '+@all');
      } finally {
        redis.disconnect();
      }
    },
    teardown: async () => {
      const redis = adminRedis();
      try {
        await redis.call('ACL', 'DELUSER', REDIS_USER);
      } finally {
        redis.disconnect();
      }
      await deleteRedisKeys(REDIS_PREFIX);
    },
  },
];

describe.each(BROKERS)('console API on $name', (broker) => {
  const prefix = broker.name === 'rabbit' ? RABBIT_PREFIX : uniqueName('t-console');
  const rpcTopic = `${prefix}-rpc`;
  const topic = `${prefix}-events`;
  const address = `${topic}.info`;
  let transport: Transport;
  let writable: ConsoleHandle;
  let readOnly: ConsoleHandle;
  let http: ConsoleHttp;
  let readOnlyHttp: ConsoleHttp;
  const closers: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    await broker.setup();
    transport = await getRpcTransport(broker.url, { controlExchange: broker.controlExchange });
    const server = getRpcServer(transport, new Target({ topic: rpcTopic, server: `${prefix}-s1` }), [{ echo: (_c: unknown, args: unknown) => args, boom: () => { throw new Error('boom'); } }]);
    await server.start();
    closers.push(() => server.close());
    const common = { port: 0, topics: [rpcTopic], notificationTopics: [topic, `${prefix}-lag`], pools: [`${prefix}-billing`, `${prefix}-lagpool`], expectedServers: { [rpcTopic]: 2 }, refreshMs: 500, token: TOKEN };
    writable = await startConsole(transport, { ...common, allowWrite: true });
    readOnly = await startConsole(transport, common);
    http = new ConsoleHttp(writable.url);
    readOnlyHttp = new ConsoleHttp(readOnly.url);
  }, 60_000);

  afterAll(async () => {
    await writable?.close();
    await readOnly?.close();
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
    await transport?.cleanup();
    await broker.teardown();
  }, 60_000);

  it('overview, health and topics describe the transport without its password', async () => {
    const overview = await http.get('/api/overview');
    expect(overview.status).toBe(200);
    expect(overview.json).toMatchObject({ driver: broker.name, writable: true, topics: [rpcTopic], notificationTopics: [topic, `${prefix}-lag`], refreshMs: 500, version: expect.any(String) });
    if (broker.password !== undefined) expect(overview.json.url).toContain('***');
    expect(Object.keys(overview.json.inspection).sort()).toEqual(['backlog', 'consumers', 'listsPools', 'listsTopics']);
    expect((await readOnlyHttp.get('/api/overview')).json.writable).toBe(false);
    expect(writable.token).toBe(TOKEN);
    expect(readOnly.token).toBeUndefined();

    // transport.health() as it is (drivers connect lazily, so `connected` depends on what ran): the
    // console's own pings may open the connection while the request is under way, so the answer is
    // the state before or after it (once, on RabbitMQ, `connected` turned true in between).
    const healthBefore: unknown = JSON.parse(JSON.stringify(transport.health()));
    const health = await http.get('/api/health');
    const healthAfter: unknown = JSON.parse(JSON.stringify(transport.health()));
    expect(health.status).toBe(200);
    expect([healthBefore, healthAfter]).toContainEqual(health.json);
    expect(Object.keys(health.json)).toEqual(expect.arrayContaining(['connected', 'blocked', 'reconnecting']));

    const topics = await http.get('/api/topics');
    expect(topics.status).toBe(200);
    expect(topics.json.configured).toEqual([rpcTopic]);
    expect(topics.json.listed === null || Array.isArray(topics.json.listed)).toBe(true);
    for (const r of [overview, health, topics]) {
      expect(r.headers['content-security-policy']).toMatch(/^default-src 'self'/);
      expect(r.headers['x-content-type-options']).toBe('nosniff');
      expect(r.headers['x-frame-options']).toBe('DENY');
      expect(r.headers['referrer-policy']).toBe('no-referrer');
      expect(r.headers['cache-control']).toBe('no-store');
    }
  });

  it('lists the server the test started, with its ping and the expected count', async () => {
    const servers = await waitFor(
      async () => {
        const r = await http.get(`/api/servers?topic=${rpcTopic}`);
        return r.status === 200 && r.json.servers.length === 1 ? r : undefined;
      },
      { timeoutMs: 20_000, message: 'the test server on /api/servers' },
    );
    expect(servers.json).toMatchObject({ topic: rpcTopic, expected: 2, at: expect.any(Number) });
    expect(servers.json.servers[0]).toMatchObject({ server: `${prefix}-s1`, pid: process.pid, inFlight: 0, pingMs: expect.any(Number) });
    // Only topics the console was given or the broker lists: a fanout ping may create broker objects.
    expect((await http.get(`/api/servers?topic=${prefix}-unknown`)).status).toBe(404);
    expect((await http.get('/api/servers')).status).toBe(400);
    expect((await http.get('/api/servers?topic=a%20b')).status).toBe(400);
  }, 30_000);

  it('pools show a pool, its consumer and a backlog the test made (or 501 where the driver cannot tell); history samples them', async () => {
    const lagTopic = `${prefix}-lag`;
    const inspection = (await http.get('/api/overview')).json.inspection as Record<string, boolean>;
    const canInspect = Object.values(inspection).some(Boolean);
    const none = await http.get(`/api/pools?topic=${lagTopic}`);
    if (!canInspect) {
      expect(none.status).toBe(501);
      expect(none.json.error).toMatch(/cannot inspect/);
    } else {
      // Nothing exists yet: nothing is listed, and nothing is created by looking.
      expect([none.status, none.json.pools], JSON.stringify(none.json)).toEqual([200, []]);
    }
    const handledLag: number[] = [];
    const listener = getNotificationListener(transport, [new Target({ topic: lagTopic })], [{ info: (_c: unknown, _p: string, _e: string, payload: { n: number }) => void handledLag.push(payload.n) }], { pool: `${prefix}-lagpool` });
    await listener.start();
    const notifier = new Notifier(transport, { publisherId: 'console.test', driver: 'messagingv2', topics: [lagTopic] });
    await notifier.info({}, 'lag.event', { n: 0 });
    await waitFor(() => handledLag.length === 1, { timeoutMs: 20_000, message: 'the lag listener working' });
    const poolOf = async () => {
      const r = await http.get(`/api/pools?topic=${lagTopic}`);
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ topic: lagTopic, at: expect.any(Number) });
      return (r.json.pools as Array<Record<string, unknown>>).find((p) => p.pool === `${prefix}-lagpool` && String(p.address).startsWith(`${lagTopic}.`));
    };
    if (canInspect) {
      const live = await waitFor(poolOf, { timeoutMs: 10_000, message: 'the lag pool on /api/pools' });
      expect(live.isDefault).toBe(false);
      if (inspection.consumers) expect(live.consumers).toBe(1);
    }
    // Stop consuming, make a backlog of 3, then drain it.
    await listener.stop();
    await listener.wait();
    for (let n = 1; n <= 3; n++) await notifier.info({}, 'lag.event', { n });
    if (canInspect && inspection.backlog) {
      await waitFor(async () => (await poolOf())?.backlog === 3, { timeoutMs: 10_000, message: 'a backlog of 3 on /api/pools' });
      const sampled = await waitFor(
        async () => {
          const r = await http.get(`/api/pools/history?topic=${lagTopic}`);
          return (r.json.samples as Array<Record<string, unknown>>).find((s) => s.pool === `${prefix}-lagpool` && s.backlog === 3);
        },
        { timeoutMs: 10_000, message: 'the backlog in /api/pools/history' },
      );
      expect(sampled).toMatchObject({ at: expect.any(Number), address: expect.stringMatching(new RegExp(`^${lagTopic}\\.`)), consumers: inspection.consumers ? 0 : null });
    }
    await listener.start();
    await waitFor(() => handledLag.length === 4, { timeoutMs: 20_000, message: 'the backlog drained' });
    if (canInspect && inspection.backlog) await waitFor(async () => (await poolOf())?.backlog === 0, { timeoutMs: 10_000, message: 'backlog 0 after the drain' });
    await listener.close();
    const history = await http.get(`/api/pools/history?topic=${lagTopic}`);
    expect(history.status).toBe(200);
    expect(history.json).toMatchObject({ topic: lagTopic, samples: expect.any(Array) });
    expect((await http.get(`/api/pools/history?topic=${prefix}-other`)).status).toBe(404);
    expect((await http.get('/api/pools')).status).toBe(400);
  }, 60_000);

  it('traffic counts calls, casts, notifications and errors, but not the console\'s own discover and pings', async () => {
    const counting = await startConsole(transport, { port: 0, topics: [rpcTopic], token: TOKEN });
    closers.push(() => counting.close());
    const own = new ConsoleHttp(counting.url);
    await waitFor(async () => (await own.get(`/api/servers?topic=${rpcTopic}`)).json.servers?.length === 1, { timeoutMs: 20_000, message: 'discover' });
    const sum = async () => {
      const r = await own.get('/api/traffic');
      expect(r.status).toBe(200);
      expect(r.json.bucketMs).toBe(10_000);
      const total = { calls: 0, casts: 0, notifications: 0, errors: 0, p50: null as number | null };
      for (const b of r.json.buckets) {
        for (const k of ['calls', 'casts', 'notifications', 'errors'] as const) total[k] += b[k];
        total.p50 ??= b.p50;
      }
      return total;
    };
    expect(await sum()).toEqual({ calls: 0, casts: 0, notifications: 0, errors: 0, p50: null });

    const client = getRpcClient(transport, { topic: rpcTopic }, { timeout: 10_000 });
    await client.call({}, 'echo', { x: 1 });
    await client.cast({}, 'echo', { x: 2 });
    await expect(client.call({}, 'boom', {})).rejects.toThrow();
    await new Notifier(transport, { publisherId: 'console.test', driver: 'messagingv2', topics: [`${prefix}-traffic`] }).info({}, 'ev', { n: 1 });
    // Client and server side each count: 2 calls made + 2 handled, 1 cast made + 1 handled; errors: the failed call on both sides.
    const total = await waitFor(async () => {
      const t = await sum();
      return t.calls >= 4 && t.casts >= 2 ? t : undefined;
    }, { timeoutMs: 10_000, message: 'traffic counted' });
    expect(total).toMatchObject({ calls: 4, casts: 2, notifications: 1, errors: 2, p50: expect.any(Number) });
    own.seen.forEach((s) => http.seen.push(s));
  }, 30_000);

  it('a poison notification is a dead letter: listed with its error, its body on demand, replayed once, purged', async () => {
    let failing = true;
    const handled: string[] = [];
    const notifier = new Notifier(transport, { publisherId: 'console.test', driver: 'messagingv2', topics: [topic] });
    const listener: NotificationListener = getNotificationListener(
      transport,
      [new Target({ topic })],
      [
        {
          info(_c: unknown, _p: string, _e: string, payload: { tag: string }) {
            // The error quotes the password, as a careless handler's might: the console must still not show it.
            if (failing && payload.tag.startsWith('poison')) throw new Error(`tax service down for ${payload.tag} (password ${broker.password ?? 'none'})`);
            handled.push(payload.tag);
            return NotificationResult.HANDLED;
          },
        },
      ],
      { pool: `${prefix}-billing`, allowRequeue: true },
    );
    await listener.start();
    closers.push(() => listener.close());
    await notifier.info({}, 'console.event', { tag: 'poison-1' });

    const listed = await waitFor(
      async () => {
        const r = await http.get(`/api/dead-letters?address=${address}`);
        return r.status === 200 && r.json.letters.length === 1 ? r : undefined;
      },
      { timeoutMs: 30_000, message: 'the poison notification on /api/dead-letters' },
    );
    const letter = listed.json.letters[0];
    expect(listed.json.address).toBe(address);
    expect(letter).toMatchObject({ id: expect.any(String), address, error: `tax service down for poison-1 (password ${broker.password === undefined ? 'none' : '***'})`, deliveries: 3, deadAt: expect.any(String) });
    expect(letter).not.toHaveProperty('body');
    expect(Date.parse(letter.deadAt)).toBeGreaterThan(Date.now() - 120_000);

    const body = await http.get(`/api/dead-letters/body?address=${address}&id=${encodeURIComponent(letter.id)}`);
    expect(body.status).toBe(200);
    expect(body.json.id).toBe(letter.id);
    expect(body.json.body).toContain('poison-1');
    expect((await http.get(`/api/dead-letters/body?address=${address}&id=no-such-id`)).status).toBe(404);
    expect((await http.get(`/api/dead-letters/body?address=${address}`)).status).toBe(400);
    // An address without dead letters (or that does not exist) lists none: 200 and an empty list.
    expect((await http.get(`/api/dead-letters?address=${prefix}-nothing.info`)).json).toEqual({ address: `${prefix}-nothing.info`, letters: [] });

    // The guards, each on a request that would otherwise succeed; the letter stays where it is.
    const replay = { address, ids: [letter.id] };
    expect((await readOnlyHttp.post('/api/dead-letters/replay', replay, TOKEN)).status).toBe(403);
    expect((await readOnlyHttp.post('/api/dead-letters/purge', { address, all: true }, TOKEN)).status).toBe(403);
    expect((await http.post('/api/dead-letters/replay', replay, undefined)).status).toBe(401);
    expect((await http.post('/api/dead-letters/replay', replay, `${TOKEN}x`)).status).toBe(401);
    expect((await http.post('/api/dead-letters/purge', { address, all: true }, 'wrong-token-0123456789')).status).toBe(401);
    expect((await http.post('/api/dead-letters/replay', replay, TOKEN, { Origin: 'http://evil.example' })).status).toBe(403);
    expect((await http.post('/api/dead-letters/replay', replay, TOKEN, { 'Sec-Fetch-Site': 'cross-site' })).status).toBe(403);
    expect((await http.post('/api/dead-letters/replay', replay, TOKEN, { 'Content-Type': 'text/plain' })).status).toBe(415);
    expect((await http.post('/api/dead-letters/replay', { address, ids: [letter.id], pad: 'x'.repeat(70 * 1024) }, TOKEN)).status).toBe(413);
    expect((await http.post('/api/dead-letters/replay', { address }, TOKEN)).status).toBe(400);
    expect((await http.post('/api/dead-letters/replay', { address, ids: [letter.id], all: true }, TOKEN)).status).toBe(400);
    expect((await http.post('/api/dead-letters/replay', '{not json', TOKEN)).status).toBe(400);
    expect((await http.get('/api/dead-letters/replay')).status).toBe(405);
    expect((await http.get(`/api/dead-letters?address=${address}&limit=1000000`)).status).toBe(400);
    expect((await http.get(`/api/dead-letters?address=${address}&limit=0`)).status).toBe(400);
    expect((await http.get(`/api/dead-letters?address=${address}&limit=1000`)).json.letters).toHaveLength(1);
    expect(handled).toEqual([]);

    failing = false;
    const replayed = await http.post('/api/dead-letters/replay', replay, TOKEN);
    expect([replayed.status, replayed.json]).toEqual([200, { replayed: 1 }]);
    await waitFor(() => handled.includes('poison-1'), { timeoutMs: 20_000, message: 'the replayed notification handled' });
    expect((await http.post('/api/dead-letters/replay', replay, TOKEN)).json).toEqual({ replayed: 0 });
    // A notification sent after the replay is handled after it: by then a second copy would have come too.
    await notifier.info({}, 'console.event', { tag: 'after-replay' });
    await waitFor(() => handled.includes('after-replay'), { timeoutMs: 20_000, message: 'the notification after the replay handled' });
    expect(handled.filter((t) => t === 'poison-1')).toHaveLength(1);
    expect((await http.get(`/api/dead-letters?address=${address}`)).json.letters).toEqual([]);

    failing = true;
    await notifier.info({}, 'console.event', { tag: 'poison-2' });
    await waitFor(async () => (await http.get(`/api/dead-letters?address=${address}`)).json.letters.length === 1, { timeoutMs: 30_000, message: 'the second poison notification dead-lettered' });
    const purged = await http.post('/api/dead-letters/purge', { address, all: true }, TOKEN);
    expect([purged.status, purged.json]).toEqual([200, { purged: 1 }]);
    expect((await http.get(`/api/dead-letters?address=${address}`)).json.letters).toEqual([]);
  }, 120_000);

  it('refuses a foreign Host (DNS rebinding), unknown paths, and serves the page with its headers', async () => {
    for (const host of ['evil.example', `evil.example:${http.base.port}`, '127.0.0.1:1']) {
      const r = await http.get('/api/overview', { Host: host });
      expect(r.status).toBe(421);
      expect(r.json.error).toMatch(/Host/);
    }
    expect((await http.get('/', { Host: 'attacker.test' })).status).toBe(421);
    expect((await http.get('/api/overview', { Host: `localhost:${http.base.port}` })).status).toBe(200);
    expect((await http.get('/api/nope')).status).toBe(404);
    expect((await http.get('/nope')).status).toBe(404);
    expect((await http.get('/assets/..%2fpackage.json')).status).toBe(404);
    const page = await http.get('/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toMatch(/^default-src 'self'/);
    expect(page.headers['x-frame-options']).toBe('DENY');
  });

  it('no response of any endpoint carried the password or the token', () => {
    const everything = [...http.seen, ...readOnlyHttp.seen].join('\n');
    expect(http.seen.length).toBeGreaterThan(30);
    if (broker.password !== undefined) {
      expect(everything).not.toContain(broker.password);
      expect(everything).not.toContain(encodeURIComponent(broker.password));
    }
    expect(everything).not.toContain(TOKEN);
  });
});
