// Notifications and listener pools: every pool gets its own copy of each notification, and the
// listeners inside one pool share them. Run: npx tsx examples/notifications-pools.ts
import { randomUUID } from 'node:crypto';
import { NotificationResult, Notifier, Target, getNotificationListener, getNotificationTransport, type Context } from 'tidings';

const topic = `events-${randomUUID().slice(0, 8)}`;
const transport = await getNotificationTransport(); // $TIDINGS_TRANSPORT_URL, else memory://
const received: Record<string, string[]> = { 'billing-1': [], 'billing-2': [], 'audit-1': [] };

function listener(name: string, pool: string) {
  const endpoint = {
    info(_ctx: Context, publisherId: string | null, eventType: string, payload: { id: number }) {
      received[name].push(`${eventType}#${payload.id}`);
      return NotificationResult.HANDLED;
    },
  };
  return getNotificationListener(transport, [new Target({ topic })], [endpoint], { pool });
}

const listeners = [listener('billing-1', 'billing'), listener('billing-2', 'billing'), listener('audit-1', 'audit')];
await Promise.all(listeners.map((l) => l.start()));

const notifier = new Notifier(transport, { publisherId: 'compute.host1', topics: [topic] });
for (let id = 1; id <= 4; id++) await notifier.info({ user: 'alice' }, 'instance.create.end', { id });

const deadline = Date.now() + 5000;
const billing = () => received['billing-1'].length + received['billing-2'].length;
while (billing() < 4 || received['audit-1'].length < 4) {
  if (Date.now() > deadline) throw new Error('notifications did not arrive');
  await new Promise((r) => setTimeout(r, 10));
}
console.log(`pool billing: billing-1 got ${received['billing-1'].length}, billing-2 got ${received['billing-2'].length} (4 in total)`);
console.log(`pool audit: audit-1 got ${received['audit-1'].length}`);

await Promise.all(listeners.map((l) => l.stop()));
await Promise.all(listeners.map((l) => l.wait()));
await transport.cleanup();
console.log('notifications-pools done');
