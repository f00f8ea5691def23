// A batch listener: notifications arrive in arrays of up to batchSize, or whatever came within
// batchTimeout ms. Run: npx tsx examples/batch-listener.ts
import { randomUUID } from 'node:crypto';
import { Notifier, Target, getBatchNotificationListener, getNotificationTransport, type NotificationBatchItem } from 'tidings';

const topic = `metrics-${randomUUID().slice(0, 8)}`;
const transport = await getNotificationTransport();
const batchSizes: number[] = [];

const listener = getBatchNotificationListener(
  transport,
  [new Target({ topic })],
  [
    {
      sample(messages: NotificationBatchItem[]) {
        // One write for many samples, e.g. a bulk insert.
        batchSizes.push(messages.length);
      },
    },
  ],
  { batchSize: 10, batchTimeout: 200 },
);
await listener.start();

const notifier = new Notifier(transport, { publisherId: 'agent.host1', topics: [topic] });
for (let i = 0; i < 25; i++) await notifier.sample({}, 'cpu.util', { host: 'host1', value: i });

const deadline = Date.now() + 5000;
while (batchSizes.reduce((a, b) => a + b, 0) < 25) {
  if (Date.now() > deadline) throw new Error('samples did not arrive');
  await new Promise((r) => setTimeout(r, 10));
}
console.log(`received 25 samples in ${batchSizes.length} batches: ${batchSizes.join(' + ')}`);

await listener.stop();
await listener.wait();
await transport.cleanup();
console.log('batch-listener done');
