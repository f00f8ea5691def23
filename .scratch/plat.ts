import { getNotificationTransport, getNotificationListener, Notifier, Target } from '../src/index.js';
import { startKafkaMock } from '../test/support/kafka-broker.js';
const broker = await startKafkaMock({ brokers: 3 });
const t0 = Date.now();
const log = (...a: unknown[]) => console.log(((Date.now() - t0) / 1000).toFixed(1), ...a);
const t = await getNotificationTransport(`${broker.url}/?client=platformatic`);
try {
  await new Notifier(t, { publisherId: 'p', driver: 'messagingv2', topics: ['x'] }).info({}, 'e', {});
  log('sent?!');
} catch (e) { log('send:', (e as Error).name, (e as Error).message, (e as any).retriable); }
const l = getNotificationListener(t, [new Target({ topic: 'x' })], [{ info() {} }]);
try { await l.start(); log('started?!'); } catch (e) { log('listen:', (e as Error).name, (e as Error).message); }
await t.cleanup(); await broker.stop();
