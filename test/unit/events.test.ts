// The façades' event emitter: typed eventemitter3 whose emit() logs a throwing listener instead
// of throwing it into the caller (dispatch, replies, sends).
import { describe, expect, it } from 'vitest';
import { GuardedEventEmitter } from '../../src/core/events.js';
import { createMemoryLogger } from '../../src/core/logger.js';

interface Events {
  tick: [n: number, label: string];
  idle: [];
}

describe('GuardedEventEmitter', () => {
  it('passes the arguments to the listeners and reports whether any listened', () => {
    const events = new GuardedEventEmitter<Events>(createMemoryLogger());
    const seen: Array<[number, string]> = [];
    expect(events.emit('tick', 1, 'a')).toBe(false);
    events.on('tick', (n, label) => seen.push([n, label]));
    expect(events.emit('tick', 2, 'b')).toBe(true);
    expect(seen).toEqual([[2, 'b']]);
  });

  it('logs a throwing listener at warn level instead of throwing, and keeps emitting afterwards', () => {
    const logger = createMemoryLogger();
    const events = new GuardedEventEmitter<Events>(logger);
    let calls = 0;
    events.on('idle', () => {
      calls++;
      throw new Error('listener bug');
    });
    expect(() => events.emit('idle')).not.toThrow();
    expect(events.emit('idle')).toBe(true);
    expect(calls).toBe(2);
    expect(logger.records.map((r) => [r.level, r.msg, r.fields.event, (r.fields.err as Error).message])).toEqual([
      ['warn', 'an event listener threw', 'idle', 'listener bug'],
      ['warn', 'an event listener threw', 'idle', 'listener bug'],
    ]);
  });
});
