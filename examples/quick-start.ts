// The README's quick start, verbatim (test/unit/examples.test.ts checks that they match).
import { Notifier, Target, getNotificationListener, getNotificationTransport, getRpcClient, getRpcServer, getRpcTransport, type Context } from 'tidings';

class Calculator {
  add(_ctx: Context, args: { a: number; b: number }): number {
    return args.a + args.b;
  }
}

// RPC: a server on topic "calc", and a typed client calling it.
const rpc = await getRpcTransport(); // $TIDINGS_TRANSPORT_URL, else memory://
const server = getRpcServer(rpc, new Target({ topic: 'calc', server: 'host-1' }), [new Calculator()]);
await server.start();
const client = getRpcClient<Calculator>(rpc, { topic: 'calc' }, { timeout: 5000 });
console.log('1 + 2 =', await client.call({ user: 'alice' }, 'add', { a: 1, b: 2 }));

// Notifications: a listener on "notifications", and a notifier publishing to it.
const events = await getNotificationTransport();
let arrived!: () => void;
const received = new Promise<void>((resolve) => (arrived = resolve));
const listener = getNotificationListener(events, [new Target({ topic: 'notifications' })], [
  {
    info(_ctx: Context, publisherId: string | null, eventType: string, payload: unknown) {
      console.log(`${eventType} from ${publisherId}:`, payload);
      arrived();
    },
  },
]);
await listener.start();
await new Notifier(events, { publisherId: 'calc.host-1' }).info({}, 'calc.added', { sum: 3 });
await received;

await Promise.all([server.stop(), listener.stop()]);
await Promise.all([server.wait(), listener.wait()]);
await Promise.all([rpc.cleanup(), events.cleanup()]);
