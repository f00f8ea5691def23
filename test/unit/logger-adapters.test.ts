// pino, bunyan, winston and console given as they are: fields, child bindings and errors must
// arrive in each library's own output, through the adapters and through a real memory:// path.
import { Console } from 'node:console';
import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import winston from 'winston';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createMemoryLogger,
  fromBunyan,
  fromConsole,
  fromPino,
  fromWinston,
  getNotificationListener,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  InvalidArgument,
  Notifier,
  silentLogger,
  toLogger,
  type Logger,
  type LoggerLike,
  type ObjectFirstLogger,
  type Transport,
} from '../../src/index.js';
import { getMemoryBroker } from '../../src/drivers/memory/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';

// bunyan ships no types: the little of it these tests use, typed here.
interface BunyanModule {
  createLogger(options: { name: string; level?: string; streams?: unknown[]; serializers?: Record<string, unknown> }): ObjectFirstLogger;
}
const bunyan = createRequire(import.meta.url)('bunyan') as BunyanModule;

type Rec = Record<string, any>;

function lines(): { stream: { write(chunk: string): boolean }; records(): Rec[] } {
  const out: string[] = [];
  return {
    stream: { write: (chunk: string) => (out.push(String(chunk)), true) },
    records: () => out.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Rec),
  };
}

function pinoCapture() {
  const { stream, records } = lines();
  return { logger: pino({ level: 'debug' }, stream), records };
}

function bunyanCapture(serializers?: Record<string, unknown>) {
  const { stream, records } = lines();
  return { logger: bunyan.createLogger({ name: 'app', level: 'debug', streams: [{ level: 'debug', stream }], serializers }), records };
}

function winstonCapture(levels?: Record<string, number>) {
  const out: string[] = [];
  const stream = writable(out);
  const logger = winston.createLogger({ level: 'debug', levels, format: winston.format.json(), transports: [new winston.transports.Stream({ stream })] });
  return { logger, records: () => out.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Rec) };
}

function writable(out: string[]): Writable {
  return new Writable({
    write(chunk, _enc, done) {
      out.push(String(chunk));
      done();
    },
  });
}

function consoleCapture() {
  const out: string[] = [];
  const stream = writable(out);
  return { console: new Console({ stdout: stream, stderr: stream }), text: () => out.join('') };
}

const transports: Transport[] = [];
afterEach(async () => {
  await Promise.all(transports.splice(0).map((t) => t.cleanup()));
});

/**
 * A real path through a memory:// transport given `logger`: the driver rejects a malformed
 * message (driver bindings + fields) and an RPC server logs a handler failure (server bindings,
 * fields and the error). `find` looks the two records up in the library's own output.
 */
async function rpcFailurePath(logger: LoggerLike, find: (msg: string) => Rec | undefined): Promise<{ rejected: Rec; failed: Rec; topic: string }> {
  const vhost = uniqueName('log');
  const t = await getRpcTransport(`memory:///${vhost}`, { logger });
  transports.push(t);
  const topic = uniqueName();
  const server = getRpcServer(t, { topic, server: 's1' }, [{ boom() { throw new RangeError('kaboom'); } }]);
  await server.start();
  try {
    await expect(getRpcClient(t, { topic }, { timeout: 5000 }).call({}, 'boom', {})).rejects.toThrow(/kaboom/);
    expect(getMemoryBroker(vhost).publishRaw('openstack', topic, '{not json')).toBeGreaterThan(0);
    const [rejected, failed] = await waitFor(
      () => {
        const pair = [find('Rejecting a malformed message (not requeued)'), find('exception during message handling')];
        return pair.every(Boolean) ? (pair as Rec[]) : undefined;
      },
      { timeoutMs: 5000, message: 'both records in the library output' },
    );
    return { rejected, failed, topic };
  } finally {
    await server.stop();
    await server.wait();
  }
}

describe('toLogger', () => {
  it('returns the fallback for undefined and tidings loggers as they are', () => {
    const memory = createMemoryLogger();
    expect(toLogger(undefined)).toBe(silentLogger);
    expect(toLogger(undefined, memory)).toBe(memory);
    expect(toLogger(memory)).toBe(memory);
    expect(toLogger(memory.child({ a: 1 }))).not.toBe(silentLogger);
    expect(toLogger(silentLogger)).toBe(silentLogger);
  });

  it('takes a hand-written (unbranded) Logger with child() as it is', () => {
    const calls: unknown[][] = [];
    const custom: Logger = {
      debug: (...a) => calls.push(a),
      info: (...a) => calls.push(a),
      warn: (...a) => calls.push(a),
      error: (...a) => calls.push(a),
      child: () => custom,
    };
    expect(toLogger(custom)).toBe(custom);
  });

  it('adapts a console-like object without child(), carrying the bindings itself', () => {
    const { console, text } = consoleCapture();
    toLogger(console).child({ component: 'c' }).warn('careful', { n: 1 });
    expect(text()).toContain('careful');
    expect(text()).toMatch(/component: 'c'/);
    expect(text()).toMatch(/n: 1/);
  });

  it('rejects anything else with InvalidArgument naming the field', () => {
    for (const bad of [42, 'pino', null, {}, { info() {} }, { debug() {}, info() {}, warn() {}, error: 1 }]) {
      const err = (() => {
        try {
          toLogger(bad as never);
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(InvalidArgument);
      expect((err as InvalidArgument).field).toBe('logger');
      expect((err as Error).message).toMatch(/pino, bunyan, winston or console/);
    }
  });

  it('adapters reject objects of the wrong shape', () => {
    expect(() => fromPino({} as never)).toThrow(InvalidArgument);
    expect(() => fromBunyan(null as never)).toThrow(/bunyan logger/);
    expect(() => fromWinston({ info() {} } as never)).toThrow(/winston logger/);
    expect(() => fromConsole({} as never)).toThrow(/console/);
    expect(() => fromConsole(console, { level: 'trace' as never })).toThrow(/Invalid level: expected one of 'debug', 'info', 'warn', 'error', received "trace"/);
  });
});

describe('pino', () => {
  it('fromPino: fields, child bindings and errors arrive in pino output', () => {
    const { logger, records } = pinoCapture();
    const log = fromPino(logger).child({ component: 'rpc-server', topic: 't1' });
    log.info('listening', { port: 5672 });
    log.child({ server: 's1' }).error('failed', { err: new TypeError('bad'), cause: new RangeError('deep') });
    log.debug('no fields');
    const [info, error, debug] = records();
    expect(info).toMatchObject({ level: 30, msg: 'listening', port: 5672, component: 'rpc-server', topic: 't1' });
    // `err` goes through pino's own serializer (type + stack); other keys through the adapter.
    expect(error).toMatchObject({ level: 50, msg: 'failed', component: 'rpc-server', topic: 't1', server: 's1' });
    expect(error.err).toMatchObject({ type: 'TypeError', message: 'bad' });
    expect(error.err.stack).toContain('TypeError: bad');
    expect(error.cause).toMatchObject({ name: 'RangeError', message: 'deep' });
    expect(error.cause.stack).toContain('RangeError: deep');
    expect(debug).toMatchObject({ level: 20, msg: 'no fields', component: 'rpc-server' });
  });

  it('as a transport logger: driver and server records carry their bindings and fields', async () => {
    const { logger, records } = pinoCapture();
    const { rejected, failed, topic } = await rpcFailurePath(logger, (msg) => records().find((r) => r.msg === msg));
    expect(rejected).toMatchObject({ level: 40, driver: 'memory', transport: 'rpc', listener: 'rpc', topic, queue: topic, reason: expect.any(String) });
    expect(rejected.url).toMatch(/^memory:\/\/\//);
    // The server logs a summary of the error (no stack), which pino's err serializer keeps.
    expect(failed).toMatchObject({ level: 50, component: 'rpc-server', topic, server: 's1', method: 'boom', err: { name: 'RangeError', message: 'kaboom' } });
    expect(records().find((r) => r.msg === 'rpc server listening')).toMatchObject({ level: 20, component: 'rpc-server', topic });
  });
  it("as a notifier's own logger: the log driver's record arrives with its fields", async () => {
    const { logger, records } = pinoCapture();
    const t = await getNotificationTransport('memory:///' + uniqueName());
    transports.push(t);
    await new Notifier(t, { driver: 'log', logger, publisherId: 'compute.host1' }).warn({}, 'compute.start', { id: 7 });
    expect(records()).toEqual([expect.objectContaining({ level: 40, msg: 'notification', eventType: 'compute.start', publisherId: 'compute.host1', payload: { id: 7 } })]);
  });
});

describe('bunyan', () => {
  it('fromBunyan: fields, child bindings and errors arrive in bunyan output', () => {
    const { logger, records } = bunyanCapture();
    const log = fromBunyan(logger).child({ component: 'notification-listener' });
    log.warn('slow', { ms: 12 });
    log.error('failed', { err: new TypeError('bad') });
    const [warn, error] = records();
    expect(warn).toMatchObject({ name: 'app', level: 40, msg: 'slow', ms: 12, component: 'notification-listener' });
    // Without serializers bunyan would write `{}` for an Error.
    expect(error.err).toMatchObject({ name: 'TypeError', message: 'bad' });
    expect(error.err.stack).toContain('TypeError: bad');
  });

  it("keeps Errors for keys bunyan has a serializer for, so the application's serializer applies", () => {
    const { logger, records } = bunyanCapture({ err: (e: Error) => ({ custom: `${e.name}/${e.message}` }) });
    fromBunyan(logger).error('failed', { err: new TypeError('bad'), other: new RangeError('r') });
    expect(records()[0].err).toEqual({ custom: 'TypeError/bad' });
    expect(records()[0].other).toMatchObject({ name: 'RangeError', message: 'r' });
  });

  it('as a transport logger: driver and server records carry their bindings and fields', async () => {
    const { logger, records } = bunyanCapture();
    const { rejected, failed, topic } = await rpcFailurePath(logger, (msg) => records().find((r) => r.msg === msg));
    expect(rejected).toMatchObject({ level: 40, driver: 'memory', transport: 'rpc', listener: 'rpc', topic, queue: topic });
    expect(failed).toMatchObject({ level: 50, component: 'rpc-server', topic, server: 's1', method: 'boom', err: { name: 'RangeError', message: 'kaboom' } });
  });
  it("as an RPC server's own logger: the server's records carry its bindings", async () => {
    const { logger, records } = bunyanCapture();
    const t = await getRpcTransport('memory:///' + uniqueName());
    transports.push(t);
    const topic = uniqueName();
    const server = getRpcServer(t, { topic, server: 's1' }, [{ ping() {} }], { logger });
    await server.start();
    await server.stop();
    await server.wait();
    expect(records().find((r) => r.msg === 'rpc server listening')).toMatchObject({ level: 20, component: 'rpc-server', topic, server: 's1' });
  });
});

describe('winston', () => {
  it('fromWinston: fields, child bindings and errors arrive in winston output', async () => {
    const { logger, records } = winstonCapture();
    const log = fromWinston(logger).child({ component: 'notifier' });
    log.info('sent %s', { topic: 'n', count: 2 });
    log.child({ driver: 'log' }).error('failed', { err: new TypeError('bad') });
    const [info, error] = await waitFor(() => (records().length === 2 ? records() : undefined));
    // `%s` in the message must not turn the fields into format arguments.
    expect(info).toEqual({ level: 'info', message: 'sent %s', topic: 'n', count: 2, component: 'notifier' });
    expect(error).toMatchObject({ level: 'error', message: 'failed', component: 'notifier', driver: 'log', err: { name: 'TypeError', message: 'bad' } });
    expect(error.err.stack).toContain('TypeError: bad');
  });

  it('maps warn onto syslog levels', async () => {
    const { logger, records } = winstonCapture(winston.config.syslog.levels);
    fromWinston(logger).warn('careful', { n: 1 });
    const [rec] = await waitFor(() => (records().length === 1 ? records() : undefined));
    expect(rec).toEqual({ level: 'warning', message: 'careful', n: 1 });
  });

  it('as a notification transport logger: a listener logs an endpoint failure with its bindings', async () => {
    const { logger, records } = winstonCapture();
    const t = await getNotificationTransport('memory:///' + uniqueName(), { logger });
    transports.push(t);
    const topic = uniqueName();
    const pool = uniqueName('pool');
    const listener = getNotificationListener(t, [{ topic }], [{ info() { throw new Error('listener boom'); } }], { pool });
    await listener.start();
    try {
      await new Notifier(t, { topics: [topic] }).info({}, 'compute.start', { a: 1 });
      const rec = await waitFor(() => records().find((r) => r.message === 'notification endpoint failed'), { timeoutMs: 5000 });
      expect(rec).toMatchObject({ level: 'error', component: 'notification-listener', pool, priority: 'info', eventTypes: ['compute.start'], err: { name: 'Error', message: 'listener boom' } });
    } finally {
      await listener.stop();
      await listener.wait();
    }
  });
});

describe('console', () => {
  it('fromConsole: bindings carried by the adapter, fields and errors printed, info and up by default', () => {
    const { console, text } = consoleCapture();
    const log = fromConsole(console).child({ component: 'rpc-server' });
    log.debug('hidden');
    log.info('plain');
    log.child({ server: 's1' }).error('failed', { err: new TypeError('bad') });
    expect(text()).not.toContain('hidden');
    expect(text()).toMatch(/^plain \{ component: 'rpc-server' \}$/m);
    expect(text()).toMatch(/failed \{\n\s+component: 'rpc-server',\n\s+server: 's1',\n\s+err: TypeError: bad/);
  });

  it('logs debug when asked, and a bare message without fields', () => {
    const { console, text } = consoleCapture();
    fromConsole(console, { level: 'debug' }).debug('shown');
    expect(text()).toBe('shown\n');
  });

  it('as a transport logger: a server failure is printed with its bindings and error', async () => {
    const { console, text } = consoleCapture();
    const found = (msg: string) => (text().includes(msg) ? {} : undefined);
    const { topic } = await rpcFailurePath(console, found);
    expect(text()).toMatch(new RegExp(`exception during message handling \\{[^]*component: 'rpc-server',[^]*topic: '${topic}'[^]*err: \\{ name: 'RangeError', message: 'kaboom' \\}`));
    // info and up only by default: the server's debug record is not printed.
    expect(text()).not.toContain('rpc server listening');
    expect(text()).toMatch(/Rejecting a malformed message \(not requeued\) \{[^]*driver: 'memory'/);
  });
});
