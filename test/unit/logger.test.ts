// Loggers: silent default, memory logger for tests, JSON-lines console logger, errorReplacer.
import { describe, expect, it } from 'vitest';
import { ConnectionError } from '../../src/core/errors.js';
import { createConsoleLogger, createMemoryLogger, errorFields, errorReplacer, isTidingsLogger, silentLogger } from '../../src/core/logger.js';

describe('silentLogger', () => {
  it('drops everything and its child is itself', () => {
    expect(() => {
      silentLogger.debug('x');
      silentLogger.info('x', { a: 1 });
      silentLogger.warn('x');
      silentLogger.error('x', { err: new Error('e') });
    }).not.toThrow();
    expect(silentLogger.child({ a: 1 })).toBe(silentLogger);
  });
});

describe('createMemoryLogger', () => {
  it('records level, message and fields', () => {
    const log = createMemoryLogger();
    log.info('hello', { n: 1 });
    log.debug('dbg');
    expect(log.records).toEqual([
      { level: 'info', msg: 'hello', fields: { n: 1 } },
      { level: 'debug', msg: 'dbg', fields: {} },
    ]);
  });

  it('children add bindings, share the records, and do not leak bindings to the parent', () => {
    const log = createMemoryLogger({ app: 'a' });
    const child = log.child({ driver: 'memory' });
    const grandchild = child.child({ topic: 't', driver: 'override' });
    child.warn('w', { x: 1 });
    grandchild.error('e');
    log.info('root');
    expect(log.records).toEqual([
      { level: 'warn', msg: 'w', fields: { app: 'a', driver: 'memory', x: 1 } },
      { level: 'error', msg: 'e', fields: { app: 'a', driver: 'override', topic: 't' } },
      { level: 'info', msg: 'root', fields: { app: 'a' } },
    ]);
    expect((child as ReturnType<typeof createMemoryLogger>).records).toBe(log.records);
  });
});

describe('createConsoleLogger', () => {
  function capture(level?: 'debug' | 'info' | 'warn' | 'error') {
    const lines: string[] = [];
    const log = createConsoleLogger({ level, sink: (l) => lines.push(l), bindings: { svc: 's' } });
    return { log, lines, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
  }

  it('writes one JSON line per record with level, time, msg, bindings and fields', () => {
    const { log, lines, parsed } = capture();
    log.info('started', { port: 1 });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain('\n');
    const [rec] = parsed();
    expect(rec).toMatchObject({ level: 'info', msg: 'started', svc: 's', port: 1 });
    expect(new Date(rec.time as string).toISOString()).toBe(rec.time);
  });

  it('filters below the level (default info)', () => {
    const def = capture();
    def.log.debug('hidden');
    def.log.info('shown');
    expect(def.parsed().map((r) => r.msg)).toEqual(['shown']);
    const warn = capture('warn');
    warn.log.info('no');
    warn.log.warn('yes');
    warn.log.error('yes too');
    expect(warn.parsed().map((r) => r.level)).toEqual(['warn', 'error']);
    const dbg = capture('debug');
    dbg.log.debug('d');
    expect(dbg.lines).toHaveLength(1);
  });

  it('children keep the level and sink and merge bindings', () => {
    const { log, parsed } = capture('warn');
    const child = log.child({ driver: 'amqp' });
    child.info('filtered');
    child.warn('kept', { k: 1 });
    expect(parsed()).toEqual([expect.objectContaining({ msg: 'kept', svc: 's', driver: 'amqp', k: 1 })]);
  });

  it('serialises errors through errorReplacer', () => {
    const { log, parsed } = capture();
    log.error('failed', { err: new ConnectionError('down') });
    expect(parsed()[0].err).toEqual({ name: 'ConnectionError', message: 'down', code: 'CONNECTION_ERROR' });
  });

  it('never throws on fields JSON cannot encode (BigInt, cycles)', () => {
    const { log, lines } = capture();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => log.warn('odd', { big: 1n, cyclic })).not.toThrow();
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toMatchObject({ level: 'warn', msg: 'odd' });
  });
});

describe('errorReplacer', () => {
  it('turns Errors into {name, message, code?} and leaves other values alone', () => {
    expect(errorReplacer('', new TypeError('t'))).toEqual({ name: 'TypeError', message: 't' });
    expect(errorReplacer('', new ConnectionError('c'))).toEqual({ name: 'ConnectionError', message: 'c', code: 'CONNECTION_ERROR' });
    const v = { a: 1 };
    expect(errorReplacer('k', v)).toBe(v);
    expect(JSON.parse(JSON.stringify({ nested: { e: new Error('x') } }, errorReplacer))).toEqual({ nested: { e: { name: 'Error', message: 'x' } } });
  });
});

describe('errorFields', () => {
  it('adds stack and Error causes (a bounded chain) only with detail', () => {
    const root = new ConnectionError('down', { cause: new Error('ECONNREFUSED', { cause: 'a string cause' }) });
    expect(errorFields(root)).toEqual({ name: 'ConnectionError', message: 'down', code: 'CONNECTION_ERROR' });
    const detailed = errorFields(root, true);
    expect(detailed.stack).toContain('ConnectionError: down');
    // A non-Error cause may hold anything, so it is left out.
    expect(detailed.cause).toEqual({ name: 'Error', message: 'ECONNREFUSED', stack: expect.stringContaining('ECONNREFUSED') });
    const loop = new Error('loop');
    (loop as { cause?: unknown }).cause = loop;
    let depth = 0;
    for (let e = errorFields(loop, true); e.cause; e = e.cause as Record<string, unknown>) depth++;
    expect(depth).toBe(3);
  });
});

describe('isTidingsLogger', () => {
  it("is true for tidings' own loggers and their children, false for look-alikes", () => {
    expect(isTidingsLogger(silentLogger)).toBe(true);
    expect(isTidingsLogger(createMemoryLogger().child({ a: 1 }))).toBe(true);
    expect(isTidingsLogger(createConsoleLogger({ sink: () => {} }).child({ a: 1 }))).toBe(true);
    expect(isTidingsLogger({ ...silentLogger })).toBe(false);
    expect(isTidingsLogger(null)).toBe(false);
  });
});
