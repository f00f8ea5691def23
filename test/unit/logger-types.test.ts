// Type tests: every option named `logger` takes pino, bunyan, winston and console as they are.
import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import winston from 'winston';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  fromBunyan,
  fromConsole,
  fromPino,
  fromWinston,
  getNotificationTransport,
  getRpcTransport,
  InvalidArgument,
  toLogger,
  type Logger,
  type NotificationListenerOptions,
  type NotifierOptions,
  type RpcServerOptions,
  type Transport,
  type TransportOptions,
} from '../../src/index.js';

// bunyan ships no types; this is the shape of its Logger's level methods and child().
interface BunyanLogger {
  info(fields: object, ...params: unknown[]): void;
  debug(fields: object, ...params: unknown[]): void;
  warn(fields: object, ...params: unknown[]): void;
  error(fields: object, ...params: unknown[]): void;
  child(options: object, simple?: boolean): BunyanLogger;
}
const bunyan = createRequire(import.meta.url)('bunyan') as { createLogger(options: { name: string; streams: unknown[] }): BunyanLogger };

const nowhere = () => new Writable({ write: (_chunk, _enc, done) => done() });
const pinoLogger = pino(nowhere());
const winstonLogger = winston.createLogger({ transports: [new winston.transports.Stream({ stream: nowhere() })] });
const bunyanLogger = bunyan.createLogger({ name: 'types', streams: [{ stream: nowhere() }] });

describe('logger option types', () => {
  it('getRpcTransport / getNotificationTransport take pino, bunyan, winston and console loggers', () => {
    expectTypeOf(getRpcTransport).toBeCallableWith('memory://', { logger: pinoLogger });
    expectTypeOf(getRpcTransport).toBeCallableWith('memory://', { logger: winstonLogger });
    expectTypeOf(getRpcTransport).toBeCallableWith('memory://', { logger: bunyanLogger });
    expectTypeOf(getNotificationTransport).toBeCallableWith('memory://', { logger: console });
    // @ts-expect-error a number is no logger
    expectTypeOf(getRpcTransport).toBeCallableWith('memory://', { logger: 42 });
    // @ts-expect-error one level method is not enough
    expectTypeOf(getRpcTransport).toBeCallableWith('memory://', { logger: { info() {} } });
  });

  it('server, listener and notifier options take them too; the transport exposes a tidings Logger', () => {
    for (const foreign of [pinoLogger, winstonLogger, bunyanLogger, console]) {
      expectTypeOf(foreign).toExtend<NonNullable<TransportOptions['logger']>>();
      expectTypeOf(foreign).toExtend<NonNullable<RpcServerOptions['logger']>>();
      expectTypeOf(foreign).toExtend<NonNullable<NotificationListenerOptions['logger']>>();
      expectTypeOf(foreign).toExtend<NonNullable<NotifierOptions['logger']>>();
    }
    expectTypeOf<Transport['logger']>().toEqualTypeOf<Logger>();
  });

  it('the adapters take each library as it is and return a Logger', () => {
    expectTypeOf(fromPino(pinoLogger)).toEqualTypeOf<Logger>();
    expectTypeOf(fromBunyan(bunyanLogger)).toEqualTypeOf<Logger>();
    expectTypeOf(fromWinston(winstonLogger)).toEqualTypeOf<Logger>();
    expectTypeOf(fromConsole(console, { level: 'debug' })).toEqualTypeOf<Logger>();
    expectTypeOf(toLogger(pinoLogger)).toEqualTypeOf<Logger>();
    // @ts-expect-error console has no child(): it is not an object-first logger
    expect(() => fromPino(console)).toThrow(InvalidArgument);
    // @ts-expect-error not a level
    expect(() => fromConsole(console, { level: 'trace' })).toThrow(InvalidArgument);
  });
});
