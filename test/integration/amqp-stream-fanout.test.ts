// `rabbit_stream_fanout` on the shared RabbitMQ (3.9+): a topic's fanout casts go to one durable
// stream `<topic>_fanout` that every server reads from its own offset. Each server gets each cast
// once, a (re)started server only what is sent after it subscribed, a reconnected one what it
// missed, and Python oslo 14.7+ declares the same objects.
import { execFile } from 'node:child_process';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { RpcIncomingMessage } from '../../src/contract/incoming-message.js';
import type { Listener } from '../../src/contract/listener.js';
import { InvalidArgument } from '../../src/core/errors.js';
import { createMemoryLogger, silentLogger, type Logger, type MemoryLogger } from '../../src/core/logger.js';
import { Target } from '../../src/core/target.js';
import type { AmqpDriver } from '../../src/drivers/amqp/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';
import { makeAmqpDriver, openRawChannel, useAmqpDrivers } from '../support/amqp-driver.js';
import { RABBIT_URL } from '../support/brokers.js';
import { listRabbitQueues, publishRawToRabbit, queueArgs } from '../support/rabbit-admin.js';

const run = promisify(execFile);
const PREFIX = uniqueName('t-streamfan');
const EXCHANGE = `${PREFIX}-x`;
/** oslo's names: the option, and the one it requires (impl_rabbit Connection.__init__). */
const STREAM_URL = `${RABBIT_URL}?rabbit_stream_fanout=true&rabbit_transient_quorum_queue=true`;
const N = 40;

/**
 * What oslo.messaging 14.7+ declares for `<topic>_fanout` under rabbit_stream_fanout=True
 * (openstack/oslo.messaging impl_rabbit.py, unchanged from 14.7.0 to master 8ea2d5b4):
 * `declare_fanout_consumer` names the queue `'%s_fanout' % topic`, durable (`is_durable =
 * rabbit_transient_quorum_queue or rabbit_stream_fanout`), auto_delete False, bound to the
 * `'%s_fanout' % topic` fanout exchange (durable, auto_delete True: `fanout_send` declares it
 * durable=rabbit_transient_quorum_queue, which Connection requires to be true) with routing key
 * `topic`; `_get_queue_arguments` replaces every other argument by
 * `{'x-queue-type': 'stream', 'x-max-age': f"{rabbit_transient_queues_ttl}s"}` (no x-max-age when
 * the ttl is 0). The python3-oslo.messaging installed here is 14.0.3, which has no
 * rabbit_stream_fanout (added in 14.7.0), so no Python process can declare it on this machine:
 * the test declares exactly these objects with amqplib, as kombu would, against the queue and
 * exchange tidings declared, and RabbitMQ's equivalence check decides.
 */
function osloStreamDeclaration(topic: string, ttlSeconds: number) {
  const args: Record<string, unknown> = { 'x-queue-type': 'stream' };
  if (ttlSeconds > 0) args['x-max-age'] = `${ttlSeconds}s`;
  return {
    exchange: { name: `${topic}_fanout`, type: 'fanout', options: { durable: true, autoDelete: true } },
    queue: { name: `${topic}_fanout`, options: { durable: true, autoDelete: false, exclusive: false, arguments: args } },
    routingKey: topic,
  };
}

/** A TCP proxy to RabbitMQ that can drop every connection through it and refuse new ones until restored. */
class CuttableProxy {
  private readonly sockets = new Set<Socket>();
  private refusing = false;

  private constructor(private readonly server: Server) {
    server.on('connection', (client) => {
      if (this.refusing) return void client.destroy();
      const upstream = connect({ host: '127.0.0.1', port: 5672 });
      for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
        this.sockets.add(from);
        from.pipe(to);
        from.on('error', () => to.destroy());
        from.on('close', () => {
          this.sockets.delete(from);
          to.destroy();
        });
      }
    });
  }

  static async start(): Promise<CuttableProxy> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new CuttableProxy(server);
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Drops every connection and refuses new ones. */
  cut(): void {
    this.refusing = true;
    for (const s of this.sockets) s.destroy();
  }

  restore(): void {
    this.refusing = false;
  }

  close(): void {
    this.cut();
    this.server.close();
  }
}

/** Consumers of `queue`, via rabbitmqctl (a stream's declare-ok always says 0). */
async function consumers(queue: string): Promise<number> {
  const { stdout } = await run('rabbitmqctl', ['-q', 'list_queues', 'name', 'consumers', '--formatter', 'json'], { timeout: 60_000 });
  return (JSON.parse(stdout) as Array<{ name: string; consumers: number }>).find((q) => q.name === queue)?.consumers ?? -1;
}

describe('rabbit_stream_fanout (RabbitMQ streams)', () => {
  const amqp = useAmqpDrivers(PREFIX);
  const { drivers, listeners } = amqp;

  const makeDriver = (url = STREAM_URL, options: Record<string, unknown> = {}, logger: Logger = silentLogger): AmqpDriver => {
    const d = makeAmqpDriver(EXCHANGE, options, logger, url);
    drivers.push(d);
    return d;
  };

  /** An RPC server `server` on `topic` recording the `i` of every fanout cast it handles. */
  async function server(driver: AmqpDriver, topic: string, name: string): Promise<{ listener: Listener<RpcIncomingMessage>; got: number[] }> {
    const listener = await driver.listen(new Target({ topic, server: name }), { prefetchHint: 8 });
    listeners.push(listener);
    const got: number[] = [];
    listener.start(async (msgs) => {
      for (const m of msgs) got.push((m.request.args as { i: number }).i);
    });
    return { listener, got };
  }

  const cast = (driver: AmqpDriver, topic: string, i: number) => driver.send(new Target({ topic, fanout: true }), {}, { method: 'fan', args: { i } });
  const castRange = async (driver: AmqpDriver, topic: string, from: number, to: number) => {
    for (let i = from; i < to; i++) await cast(driver, topic, i);
  };
  const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);
  /** Waits until each list ends with `last` (a stream delivers in order: everything before it has arrived). */
  const untilLast = (lists: ReadonlyArray<{ got: number[] }>, last: number, what: string) =>
    waitFor(() => lists.every((l) => l.got.at(-1) === last), { timeoutMs: 30_000, message: what });

  it('declares <topic>_fanout as Python oslo 14.7+ does: a durable stream with x-max-age, bound to the durable auto-delete fanout exchange; oslo\'s declarations are equivalent', async () => {
    const topic = `${PREFIX}-decl`;
    const driver = makeDriver(`${STREAM_URL}&rabbit_transient_queues_ttl=600`);
    await server(driver, topic, 's1');
    const info = await listRabbitQueues((n) => n.startsWith(topic));
    // One shared queue, no private `<topic>_fanout_<hex>` one.
    expect([...info.keys()].filter((n) => n.includes('_fanout'))).toEqual([`${topic}_fanout`]);
    const q = info.get(`${topic}_fanout`)!;
    const oslo = osloStreamDeclaration(topic, 600);
    expect({ type: q.type, durable: q.durable, autoDelete: q.auto_delete, args: queueArgs(q) }).toEqual({ type: 'stream', durable: true, autoDelete: false, args: oslo.queue.options.arguments });
    const { raw, ch } = await openRawChannel();
    raw.on('error', () => undefined);
    try {
      ch.on('error', () => undefined);
      // What a Python oslo 14.7+ consumer and publisher declare: accepted, no PRECONDITION_FAILED.
      await ch.assertExchange(oslo.exchange.name, oslo.exchange.type, oslo.exchange.options);
      await ch.assertQueue(oslo.queue.name, oslo.queue.options);
      await ch.bindQueue(oslo.queue.name, oslo.exchange.name, oslo.routingKey);
      // The check has teeth: oslo's default TTL (1800 s) is another queue to RabbitMQ.
      await expect(ch.assertQueue(oslo.queue.name, osloStreamDeclaration(topic, 1800).queue.options)).rejects.toThrow(/PRECONDITION_FAILED - inequivalent arg 'x-max-age'/);
    } finally {
      await raw.close().catch(() => undefined);
    }
  });

  it('fanout casts reach every server of the topic exactly once each (two servers, separate connections)', async () => {
    const topic = `${PREFIX}-once`;
    const a = await server(makeDriver(), topic, 'a');
    const b = await server(makeDriver(), topic, 'b');
    const client = makeDriver();
    await castRange(client, topic, 0, N);
    await untilLast([a, b], N - 1, `both servers got the ${N} casts`);
    expect(a.got).toEqual(range(0, N));
    expect(b.got).toEqual(range(0, N));
    // Both consume the one stream; the casts stay in it for the next reader.
    expect(await consumers(`${topic}_fanout`)).toBe(2);
  });

  it('a stopped server leaves the stream (durable) and the other server loses nothing; restarted, it reads only casts sent after it subscribed, never the old ones again', async () => {
    const topic = `${PREFIX}-restart`;
    const a1 = await server(makeDriver(), topic, 'a');
    const b = await server(makeDriver(), topic, 'b');
    const client = makeDriver();
    await castRange(client, topic, 0, N);
    await untilLast([a1, b], N - 1, 'both servers got the first casts');
    // Server a stops as a process would (its listener cleaned up): the stream stays with b on it.
    await a1.listener.cleanup();
    // Its consumer is cancelled, its stream stays (checkQueue fails on a missing queue).
    await expect(amqp.ch.checkQueue(`${topic}_fanout`)).resolves.toMatchObject({ queue: `${topic}_fanout` });
    await castRange(client, topic, N, 2 * N);
    await untilLast([b], 2 * N - 1, 'b got the casts sent while a was down');
    // A new process for server a: oslo would start at `last` and run cast 2N-1 again.
    const a2 = await server(makeDriver(), topic, 'a');
    await castRange(client, topic, 2 * N, 3 * N);
    await untilLast([a2, b], 3 * N - 1, 'both servers got the casts sent after the restart');
    expect(a1.got).toEqual(range(0, N));
    expect(a2.got).toEqual(range(2 * N, 3 * N));
    expect(b.got).toEqual(range(0, 3 * N));
  });

  it('a server whose connection is lost reads on from where it was: casts sent while it was away arrive once, none twice', async () => {
    const topic = `${PREFIX}-reconnect`;
    const b = await server(makeDriver(), topic, 'b');
    const client = makeDriver();
    // a reaches RabbitMQ through a proxy that can drop its connection and refuse it a new one.
    const proxy = await CuttableProxy.start();
    try {
      const aDriver = makeDriver(STREAM_URL.replace('127.0.0.1:5672', `127.0.0.1:${proxy.port}`), { reconnectDelay: 100, retryInterval: 100, retryBackoff: 0 });
      const a = await server(aDriver, topic, 'a');
      await castRange(client, topic, 0, N);
      await untilLast([a, b], N - 1, 'both servers got the casts before the connection loss');
      let lost = false;
      let reconnected = false;
      aDriver.events.on('disconnected', () => (lost = true));
      aDriver.events.on('reconnected', () => (reconnected = true));
      proxy.cut();
      await waitFor(() => lost, { timeoutMs: 30_000, message: 'a lost its connection' });
      // Sent while a cannot connect: a fresh consumer (`next`) would never see them.
      await castRange(client, topic, N, 2 * N);
      await untilLast([b], 2 * N - 1, 'b got the casts sent while a was away');
      expect(reconnected).toBe(false);
      proxy.restore();
      await waitFor(() => reconnected, { timeoutMs: 60_000, message: 'a reconnected' });
      await castRange(client, topic, 2 * N, 2 * N + 5);
      await untilLast([a, b], 2 * N + 4, 'both servers got the casts after the reconnect');
      expect(a.got).toEqual(range(0, 2 * N + 5));
      expect(b.got).toEqual(range(0, 2 * N + 5));
    } finally {
      proxy.close();
    }
  }, 120_000);

  it('a malformed message in the stream is skipped once (acknowledged: a reject would close the connection), and casts after it flow', async () => {
    const topic = `${PREFIX}-malformed`;
    const logger: MemoryLogger = createMemoryLogger();
    const driver = makeDriver(STREAM_URL, {}, logger);
    let lost = 0;
    driver.events.on('disconnected', () => lost++);
    const a = await server(driver, topic, 'a');
    const client = makeDriver();
    await cast(client, topic, 0);
    await publishRawToRabbit(`${topic}_fanout`, topic, '{not json');
    await castRange(client, topic, 1, 5);
    await untilLast([a], 4, 'the casts after the malformed message');
    expect(a.got).toEqual(range(0, 5));
    expect(logger.records.filter((r) => r.msg === 'Rejecting a malformed message (not requeued)')).toHaveLength(1);
    expect(lost).toBe(0);
  });

  it('conflicting options fail at once with InvalidArgument naming both options', () => {
    expect(() => makeAmqpDriver(EXCHANGE, {}, silentLogger, `${RABBIT_URL}?rabbit_stream_fanout=true`)).toThrow(InvalidArgument);
    expect(() => makeAmqpDriver(EXCHANGE, {}, silentLogger, `${RABBIT_URL}?rabbit_stream_fanout=true`)).toThrow(/rabbit_stream_fanout needs rabbit_transient_quorum_queue=true/);
    expect(() => makeAmqpDriver(EXCHANGE, {}, silentLogger, `${STREAM_URL}&rabbit_qos_prefetch_count=0`)).toThrow(/rabbit_stream_fanout needs rabbit_qos_prefetch_count > 0/);
  });
});
