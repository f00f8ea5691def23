// The console in a real browser (Debian's Chromium through playwright-core) against RabbitMQ and
// Redis: a server the test starts is on the servers page; a poison notification dead-lettered
// after max_deliveries is on the dead-letters page with its error; Replay (token typed into the
// page, confirmed) puts it back and the now healthy listener handles it once; a read-only console
// shows no Replay button and refuses the page's own replay request; the lag chart and the pool
// row show a backlog the test built up, then its drain; health and traffic render. Needs
// `npm run build` (dist/console-ui). About 10 s per broker: not in vitest.config's slow-first list.
import { randomUUID } from 'node:crypto';
import { connect } from 'amqplib';
import type { Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startConsole, type ConsoleHandle } from '../../src/console/index.js';
import { Target } from '../../src/core/target.js';
import { Notifier } from '../../src/notify/notifier.js';
import { getNotificationListener, type NotificationListener } from '../../src/notify/listener.js';
import { getRpcServer, type RpcServer } from '../../src/rpc/server.js';
import { getNotificationTransport, type Transport } from '../../src/transport.js';
import { uniqueName } from '../../src/testing/wait.js';
import { launchChromium, type Browser } from '../support/browser.js';
import { RABBIT_URL, REDIS_URL, requireRabbitMQ, requireRedis } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';
import { deleteRedisKeys } from '../support/redis-keys.js';

const ID = randomUUID().slice(0, 8);
const PREFIX = `tdconsole-${ID}`;
const WAIT = { timeout: 20_000, interval: 100 };

let browser: Browser | undefined;
const pages: Page[] = [];
const pageErrors: string[] = [];
const consoles: ConsoleHandle[] = [];
const closers: { close(): Promise<void> }[] = [];
const transports: Transport[] = [];

beforeAll(async () => {
  await requireRabbitMQ();
  await requireRedis();
  browser = await launchChromium();
}, 60_000);
/** On a failure, what the API answered at that moment (set by the test). */
let diagnose: (() => Promise<string>) | undefined;

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && diagnose) process.stderr.write(`console API at the failure:\n${await diagnose().catch(String)}\n`);
  diagnose = undefined;
  for (const p of pages.splice(0)) await p.close();
  expect(pageErrors.splice(0), 'errors in the pages').toEqual([]);
  for (const c of consoles.splice(0)) await c.close();
  for (const c of closers.splice(0).reverse()) await c.close();
  await Promise.all(transports.splice(0).map((t) => t.cleanup()));
});
afterAll(async () => {
  await browser?.close();
  await deleteRabbitObjectsWithPrefix(PREFIX);
  await deleteRedisKeys(PREFIX);
});

const BROKERS = [
  { name: 'RabbitMQ', url: `${RABBIT_URL}?max_deliveries=3`, options: { controlExchange: PREFIX } },
  { name: 'Redis', url: `${REDIS_URL}?key_prefix=${PREFIX}&max_deliveries=3&sweep_interval_ms=100`, options: {} },
];

/**
 * A tab on `url` + `#/<route>`; an exception in the page or an error it logs fails the test
 * (answers the page shows, such as the 403 the test asks for, are not errors).
 */
async function open(url: string, route: string): Promise<Page> {
  const page = await browser!.page();
  pages.push(page);
  page.on('pageerror', (err) => pageErrors.push(String(err)));
  page.on('console', (m) => void (m.type() === 'error' && !m.text().startsWith('Failed to load resource') && pageErrors.push(m.text())));
  await page.goto(`${url}#/${route}`);
  return page;
}

/** An attribute of the element, or null while it is not there (short, for expect.poll). */
const attr = (locator: Locator, name: string) => locator.getAttribute(name, { timeout: 250 }).catch(() => null);

/** The last value the chart holds for the series of `pool` (data-latest: label -> value). */
async function chartLatest(chart: Locator, pool: string): Promise<number | null | undefined> {
  const latest = JSON.parse((await attr(chart, 'data-latest')) ?? '{}') as Record<string, number | null>;
  return Object.entries(latest).find(([label]) => label.startsWith(`${pool} `))?.[1];
}

/** Records what a pool listener handles; its handler throws while `poisoned` holds the event type. */
function poolEndpoint() {
  const handled: string[] = [];
  const state = { poisoned: new Set<string>(), handled };
  const endpoint = {
    info(_ctx: unknown, _publisher: string | null, eventType: string) {
      if (state.poisoned.has(eventType)) throw new Error(`poisoned ${eventType} ${ID}`);
      handled.push(eventType);
    },
  };
  return { state, endpoint };
}

describe.each(BROKERS)('console in Chromium on $name', ({ name, url, options }) => {
  it('shows a server, a dead letter with its error, replays it once with the token, refuses writes when read-only, charts a backlog and its drain', async () => {
    const transport = await getNotificationTransport(url, options);
    transports.push(transport);
    const rpcTopic = uniqueName(`${PREFIX}-rpc`);
    const topic = uniqueName(`${PREFIX}-n`);
    const pool = uniqueName(`${PREFIX}-pool`);
    const address = `${topic}.info`;
    const serverName = uniqueName('console-server');

    const server: RpcServer = getRpcServer(transport, { topic: rpcTopic, server: serverName }, [{ echo: (_ctx: unknown, args: unknown) => args }]);
    await server.start();
    closers.push(server);

    const { state, endpoint } = poolEndpoint();
    let listener: NotificationListener = getNotificationListener(transport, [new Target({ topic })], [endpoint], { pool, allowRequeue: true });
    await listener.start();
    closers.push(listener);

    const common = { port: 0, topics: [rpcTopic], notificationTopics: [topic], pools: [pool], expectedServers: { [rpcTopic]: 1 }, refreshMs: 300 };
    const writable = await startConsole(transport, { ...common, allowWrite: true });
    consoles.push(writable);
    const readOnly = await startConsole(transport, common);
    consoles.push(readOnly);
    diagnose = async () => {
      const paths = [`servers?topic=${rpcTopic}`, `dead-letters?address=${address}`, `pools?topic=${topic}`];
      const answers = await Promise.all(paths.map(async (p) => `${p}: ${await (await fetch(`${writable.url.replace(/\/$/, '')}/api/${p}`)).text()}`));
      return answers.join('\n');
    };

    // Servers: the test's RPC server, with "expected 1, see 1".
    const servers = await open(writable.url, 'servers');
    await servers.getByTestId('server-row').filter({ hasText: serverName }).waitFor({ timeout: WAIT.timeout });
    await servers.getByText('expected 1, see 1').waitFor({ timeout: WAIT.timeout });
    // Health and traffic through the navigation: connected, and a traffic chart drawn.
    await servers.getByTestId('nav-health').click();
    await expect.poll(() => attr(servers.getByTestId('health-connected'), 'data-value'), WAIT).toBe('true');
    await servers.getByTestId('nav-traffic').click();
    await servers.getByTestId('traffic-chart').locator('canvas').waitFor({ timeout: WAIT.timeout });

    // A poison notification: three failed deliveries, then a dead letter with the handler's error.
    state.poisoned.add('poison');
    const notifier = new Notifier(transport, { publisherId: 'console-test', driver: 'messagingv2', topics: [topic] });
    await notifier.info({}, 'poison', { n: 1 });
    const error = `poisoned poison ${ID}`;

    // Read-only: the letter and its error are shown, no Replay button, and the API refuses the page's own request.
    const seen = await open(readOnly.url, `dead-letters?address=${address}`);
    await seen.getByTestId('dead-letter-row').filter({ hasText: error }).waitFor({ timeout: WAIT.timeout });
    expect(await seen.getByTestId('replay-button').count()).toBe(0);
    expect(await seen.getByTestId('token-input').count()).toBe(0);
    await seen.getByTestId('body-button').click();
    await seen.locator('pre.body').filter({ hasText: '"event_type": "poison"' }).waitFor({ timeout: WAIT.timeout });
    if (name === 'RabbitMQ') {
      // Another client listing the queue (the CLI, another console) takes its letters for a moment:
      // the row goes, and comes back with the body it showed.
      const other = await connect('amqp://guest:guest@127.0.0.1:5672/');
      try {
        const ch = await other.createChannel();
        let holding = false;
        await expect.poll(async () => (holding ||= (await ch.get(`${address}.dlq`, { noAck: false })) !== false), WAIT).toBe(true);
        await seen.getByText(`No dead letters on ${address}.`).waitFor({ timeout: WAIT.timeout });
      } finally {
        // Closing gives the letter back.
        await other.close();
      }
      await seen.getByTestId('dead-letter-row').filter({ hasText: error }).waitFor({ timeout: WAIT.timeout });
      await seen.locator('pre.body').filter({ hasText: '"event_type": "poison"' }).waitFor({ timeout: WAIT.timeout });
      expect(await seen.getByTestId('body-button').count()).toBe(0);
    }
    const refused = await seen.evaluate(async (a) => {
      const res = await fetch('api/dead-letters/replay', { method: 'POST', headers: { 'content-type': 'application/json', 'x-tidings-token': 'x'.repeat(64) }, body: JSON.stringify({ address: a, all: true }) });
      return res.status;
    }, address);
    expect(refused).toBe(403);

    // Writable: the token typed in, Replay, Confirm; the healed listener handles it once.
    state.poisoned.clear();
    const letters = await open(writable.url, `dead-letters?address=${address}`);
    const row = letters.getByTestId('dead-letter-row').filter({ hasText: error });
    await row.waitFor({ timeout: WAIT.timeout });
    await letters.getByTestId('token-input').fill(writable.token!);
    await row.getByTestId('replay-button').click();
    await letters.getByTestId('confirm-button').click();
    await letters.getByText('Replayed 1.').waitFor({ timeout: WAIT.timeout });
    await expect.poll(() => state.handled.filter((e) => e === 'poison').length, WAIT).toBe(1);
    await expect.poll(() => letters.getByTestId('dead-letter-row').count(), WAIT).toBe(0);
    expect(await transport.driver.deadLetters().list({ address })).toEqual([]);

    // Lag: with the pool's listener gone, a backlog of 5 builds up; a new listener drains it.
    await listener.close();
    const pools = await open(writable.url, 'pools');
    const poolRow = pools.locator(`[data-testid="pool-row"][data-pool="${pool}"]`);
    const chart = pools.getByTestId('lag-chart');
    await expect.poll(() => attr(poolRow, 'data-backlog'), WAIT).toBe('0');
    for (let i = 0; i < 5; i++) await notifier.info({}, 'lag', { i });
    await expect.poll(() => attr(poolRow, 'data-backlog'), WAIT).toBe('5');
    await expect.poll(() => chartLatest(chart, pool), WAIT).toBe(5);
    expect(Number(await chart.getAttribute('data-points'))).toBeGreaterThan(1);
    expect(await chart.locator('canvas').count()).toBe(1);

    listener = getNotificationListener(transport, [new Target({ topic })], [endpoint], { pool });
    await listener.start();
    closers.push(listener);
    await expect.poll(() => state.handled.filter((e) => e === 'lag').length, WAIT).toBe(5);
    await expect.poll(() => attr(poolRow, 'data-backlog'), WAIT).toBe('0');
    await expect.poll(() => chartLatest(chart, pool), WAIT).toBe(0);
    // Still exactly one replayed delivery, after everything else was handled.
    expect(state.handled.filter((e) => e === 'poison')).toHaveLength(1);
  }, 90_000);
});
