// Moleculer (0.14), as a Moleculer user writes it: two ServiceBrokers (nodes) on one transporter,
// a `bench` service on one (action `echo` returning its params, event `bench.sink` counting
// casts) and the other calling it with `broker.call` (a call) and `broker.emit` (a cast), in one
// process, as tidings' bench runs its server and client. Loggers, metrics and tracing off.
// `--transporter amqp`: Moleculer's AMQP transporter (amqplib), tuned as its docs suggest:
// `prefetch` 64 (its default 1 allows one request in flight per node; tidings' bench server runs
// 64 at once) and `noDelay` on the socket (amqplib leaves Nagle's algorithm on).
// `--transporter redis`: Moleculer's Redis transporter (ioredis pub/sub), at its defaults.
//   node --import tsx bench/peers/moleculer.mjs --transporter amqp --scenario call-sequential --count 2000
import moleculer from 'moleculer';
import { PAYLOAD_TEXT, RABBIT_URL, REDIS_URL, measureRpc, runPeer, unique, within } from './common.mjs';

const { ServiceBroker } = moleculer;

const kind = process.argv.includes('--transporter') ? process.argv[process.argv.indexOf('--transporter') + 1] : undefined;
if (kind !== 'amqp' && kind !== 'redis') throw new Error(`--transporter must be amqp or redis; received ${JSON.stringify(kind)}`);
process.argv.splice(process.argv.indexOf('--transporter'), 2);

/** Moleculer's AMQP queues are per namespace and expire two minutes after their last consumer. */
const transporter =
  kind === 'amqp'
    ? { type: 'AMQP', options: { url: RABBIT_URL, prefetch: 64, socketOptions: { noDelay: true } } }
    : { type: 'Redis', options: REDIS_URL };

runPeer(async (args) => {
  const common = { namespace: unique('bench'), transporter, logger: false, metrics: false, tracing: false };
  const server = new ServiceBroker({ ...common, nodeID: 'bench-server' });
  const client = new ServiceBroker({ ...common, nodeID: 'bench-client' });
  let handled = 0;
  server.createService({
    name: 'bench',
    actions: { echo: (ctx) => ctx.params },
    events: { 'bench.sink': () => void handled++ },
  });
  await server.start();
  await client.start();
  try {
    await client.waitForServices('bench', 30_000);
    return await measureRpc(args, {
      call: (i) => client.call('bench.echo', { i, text: PAYLOAD_TEXT }),
      cast: (i) => client.emit('bench.sink', { i, text: PAYLOAD_TEXT }),
      handled: () => handled,
    });
  } finally {
    await within(10_000, 'stopping Moleculer', Promise.all([client.stop(), server.stop()]));
  }
});
