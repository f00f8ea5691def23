// `npm run console:screenshot`: the README's picture of the console (docs/console.png). Starts a
// console on an embedded memory:// broker with an RPC server, a notification pool whose backlog
// grows while its listener is away and drains when it is back, a dead letter and some traffic,
// then has headless Chromium photograph the pools page. Run after `npm run build` (the script
// does): the console serves dist/console-ui. $CONSOLE_SCREENSHOT writes the PNG elsewhere (the
// browser test that runs this script does, so the picture's recipe cannot rot).
import { fileURLToPath } from 'node:url';
import { startConsole } from '../src/console/index.js';
import { getNotificationListener, getNotificationTransport, getRpcClient, getRpcServer, Notifier, Target } from '../src/index.js';
import { launchChromium } from '../test/support/browser.js';

const OUT = process.env.CONSOLE_SCREENSHOT || fileURLToPath(new URL('../docs/console.png', import.meta.url));
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

const transport = await getNotificationTransport('memory:///console-demo?max_deliveries=3');
const server = getRpcServer(transport, { topic: 'compute', server: 'compute-1' }, [{ resize: (_ctx: unknown, args: { size: number }) => args.size }]);
await server.start();
const client = getRpcClient(transport, new Target({ topic: 'compute' }));

// billing handles everything but "poison" (which it fails 3 times: a dead letter); audit is away for a while.
const billing = getNotificationListener(
  transport,
  [new Target({ topic: 'notifications' })],
  [
    {
      info(_ctx: unknown, _publisher: string | null, eventType: string) {
        if (eventType === 'poison') throw new Error('KeyError: instance 42 has no flavor');
      },
    },
  ],
  { pool: 'billing', allowRequeue: true },
);
await billing.start();
const auditEndpoint = { info: () => undefined };
// A listener without a pool: the default pool (oslo's `<topic>.<priority>` queue) keeps up.
const plain = getNotificationListener(transport, [new Target({ topic: 'notifications' })], [auditEndpoint]);
await plain.start();
const away = getNotificationListener(transport, [new Target({ topic: 'notifications' })], [auditEndpoint], { pool: 'audit' });
await away.start();
await away.close();

const console_ = await startConsole(transport, { port: 0, topics: ['compute'], notificationTopics: ['notifications'], pools: ['billing', 'audit'], expectedServers: { compute: 1 }, refreshMs: 250 });
const browser = await launchChromium({ width: 1100, height: 760 });
try {
  const notifier = new Notifier(transport, { publisherId: 'compute.host-1', driver: 'messagingv2', topics: ['notifications'] });
  await notifier.info({}, 'poison', { instance: 42 });
  // A backlog building up on audit for ~3 s, some RPC traffic beside it.
  for (let i = 0; i < 12; i++) {
    for (let j = 0; j < 3; j++) await notifier.info({}, 'compute.instance.update', { i, j });
    await client.call({}, 'resize', { size: i });
    await pause(250);
  }
  // audit comes back and drains it.
  const audit = getNotificationListener(transport, [new Target({ topic: 'notifications' })], [auditEndpoint], { pool: 'audit', executorSize: 1 });
  await pause(500);
  await audit.start();
  const page = await browser.page();
  await page.goto(`${console_.url}#/pools`);
  await page.locator('[data-testid="pool-row"][data-pool="audit"][data-backlog="0"]').waitFor({ timeout: 15_000 });
  await page.getByTestId('lag-chart').locator('canvas').waitFor({ timeout: 15_000 });
  await pause(750); // two more samples at 0 after the drain, for the picture
  await page.screenshot({ path: OUT, fullPage: true });
  process.stderr.write(`wrote ${OUT}\n`);
  await audit.close();
} finally {
  await browser.close();
  await console_.close();
  await billing.close();
  await plain.close();
  await server.close();
  await transport.cleanup();
}
