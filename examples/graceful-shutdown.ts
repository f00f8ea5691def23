// Graceful shutdown: on SIGTERM, transport.close() stops the servers started on it, lets the
// requests in flight finish within a deadline, then closes the connections.
// Run: npx tsx examples/graceful-shutdown.ts (it sends itself SIGTERM once work is under way).
import { randomUUID } from 'node:crypto';
import { getRpcClient, getRpcServer, getRpcTransport } from 'tidings';

const topic = `images-${randomUUID().slice(0, 8)}`;
const transport = await getRpcTransport();
let started = 0;
let finished = 0;

const server = getRpcServer(transport, { topic, server: 'worker-1' }, [
  {
    async resize(_ctx: object, { image }: { image: string }) {
      started++;
      await new Promise((resolve) => setTimeout(resolve, 200)); // the work
      finished++;
      return `${image} resized`;
    },
  },
]);
await server.start();

// The recipe: close everything on the transport, with a deadline, then set the exit code.
const shutdown = new Promise<void>((resolve) => {
  process.once('SIGTERM', () => {
    console.log(`SIGTERM: closing with ${server.inFlight} request(s) in flight`);
    transport.close({ deadlineMs: 10_000 }).then(
      () => {
        console.log(`closed: ${finished} request(s) finished`);
        process.exitCode = 0;
      },
      (err: unknown) => {
        // MessagingTimeout: handlers were still running at the deadline; their subscription was released.
        console.error(err instanceof Error ? err.message : err);
        process.exitCode = 1;
      },
    ).finally(resolve);
  });
});

// A caller elsewhere (here, on its own transport in the same process) asks for three resizes.
const caller = await getRpcTransport();
const client = getRpcClient(caller, { topic });
const replies = ['a.png', 'b.png', 'c.png'].map((image) => client.call({}, 'resize', { image }));

const deadline = Date.now() + 5000;
while (started < 3) {
  if (Date.now() > deadline) throw new Error('the requests did not arrive');
  await new Promise((r) => setTimeout(r, 10));
}
process.kill(process.pid, 'SIGTERM'); // what an orchestrator does to stop the process

for (const reply of await Promise.all(replies)) console.log(reply);
await shutdown;
await caller.cleanup();
console.log('graceful-shutdown done');
