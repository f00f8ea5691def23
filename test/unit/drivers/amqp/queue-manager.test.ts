// oslo's QManager counter as tidings keeps it: shared by one process group, restarted by another.
import { existsSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { QueueManager } from '../../../../src/drivers/amqp/queue-manager.js';

const host = `t-qm-${randomUUID().slice(0, 8)}`;
const file = `/dev/shm/${host}_proc_qmanager`;

describe('QueueManager (use_queue_manager)', () => {
  afterEach(() => rmSync(file, { force: true }));

  it('counts per hostname and process name across instances, in oslo\'s file format', () => {
    const a = new QueueManager(host, 'proc');
    const b = new QueueManager(host, 'proc');
    expect([a.next(), b.next(), a.next()]).toEqual([`${host}:proc:1`, `${host}:proc:2`, `${host}:proc:3`]);
    const [pg, counter, start] = readFileSync(file, 'utf8').split(':').map(Number);
    expect(counter).toBe(3);
    expect(pg).toBeGreaterThan(0);
    expect(Number.isInteger(start)).toBe(true);
  });

  it('starts over at 1 when the file was written by another process group (the service restarted)', () => {
    writeFileSync(file, '999999999:41:12345');
    expect(new QueueManager(host, 'proc').next()).toBe(`${host}:proc:1`);
  });

  it('waits a bounded time for a held lock (InvalidState), and takes over a stale one left by a dead process', () => {
    const lock = `${file}.lock`;
    writeFileSync(lock, '');
    try {
      expect(() => new QueueManager(host, 'proc').next()).toThrow(/lock .* is held by another process/);
      const old = new Date(Date.now() - 60_000);
      utimesSync(lock, old, old);
      expect(new QueueManager(host, 'proc').next()).toBe(`${host}:proc:1`);
      expect(existsSync(lock)).toBe(false);
    } finally {
      rmSync(lock, { force: true });
    }
  }, 10_000);
});
