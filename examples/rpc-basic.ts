// RPC basics: a server with one endpoint, then call, cast, a call to one named server, a fanout
// cast, and errors. Run: npx tsx examples/rpc-basic.ts (memory://, or $TIDINGS_TRANSPORT_URL).
import { randomUUID } from 'node:crypto';
import { NoSuchMethod, Target, getRpcClient, getRpcServer, getRpcTransport, type Context } from 'tidings';

const seen: string[] = [];

function calculator(server: string) {
  return {
    add: (_ctx: Context, args: { a: number; b: number }) => args.a + args.b,
    divide: (_ctx: Context, args: { a: number; b: number }) => {
      if (args.b === 0) throw new RangeError('division by zero');
      return args.a / args.b;
    },
    whoami: () => server,
    log: (_ctx: Context, args: { line: string }) => void seen.push(`${server}: ${args.line}`),
  };
}

async function until(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the servers');
    await new Promise((r) => setTimeout(r, 10));
  }
}

// A unique topic, so that runs against a shared broker never meet.
const topic = `calc-${randomUUID().slice(0, 8)}`;
const transport = await getRpcTransport(); // $TIDINGS_TRANSPORT_URL, else memory://
const servers = ['host-1', 'host-2'].map((name) => getRpcServer(transport, new Target({ topic, server: name }), [calculator(name)]));
await Promise.all(servers.map((s) => s.start()));

const client = getRpcClient(transport, { topic }, { timeout: 5000 });
console.log('add(2, 3) =', await client.call({ user: 'alice' }, 'add', { a: 2, b: 3 }));
console.log('whoami on host-2 =', await client.prepare({ server: 'host-2' }).call({}, 'whoami'));

await client.cast({}, 'log', { line: 'cast reaches one server' });
await client.prepare({ fanout: true }).cast({}, 'log', { line: 'fanout reaches all' });
await until(() => seen.length === 3);
console.log('handled:', seen.sort().join(' | '));

try {
  await client.call({}, 'divide', { a: 1, b: 0 });
} catch (err) {
  // JS built-in errors come back as their own class, with the remote message.
  console.log('divide by zero ->', err instanceof RangeError ? `RangeError: ${err.message}` : err);
}
try {
  await client.call({}, 'multiply', { a: 1, b: 2 });
} catch (err) {
  console.log('unknown method ->', err instanceof NoSuchMethod ? 'NoSuchMethod' : err);
}

await Promise.all(servers.map((s) => s.stop()));
await Promise.all(servers.map((s) => s.wait()));
await transport.cleanup();
console.log('rpc-basic done');
