// A smoke run of `npm run bench:scale` (bench/scale.ts) on memory:// with tiny sizes, and of its
// plot, so neither rots. It checks what the tables and the JSON hold, not any figure.
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main, type ScaleResults } from '../../bench/scale.js';
import { plot } from '../../bench/scale-plot.js';
import { collectionSizes } from '../../bench/scale-probes.js';

describe('bench:scale', () => {
  it('measures topics, a soak and a backlog on memory://, each in a process of its own, and prints their tables', async () => {
    const out: string[] = [];
    const results = await main(['--driver', 'memory', '--mode', 'topics,soak,backlog', '--sizes', '1,3', '--messages', '400', '--calls', '30', '--idle-ms', '50', '--no-save'], (line) => out.push(line));
    expect(results?.driver).toBe('memory');
    const rows = results!.topics!.rows;
    expect(rows.map((r) => r.topics)).toEqual([1, 3]);
    for (const row of rows) {
      // memory:// declares a server's shared, per-server and fanout queues and the pool's queue.
      expect(row.brokerPerPair).toEqual({ queues: 4 });
      expect(row.callsPerSec).toBeGreaterThan(0);
      expect(row.idleWritesPerSec).toBe(0);
    }
    const soaks = results!.soak!.runs;
    expect(soaks.map((s) => s.kind)).toEqual(['notifications', 'calls']);
    for (const soak of soaks) {
      expect(soak.count).toBe(400);
      expect(soak.samples.length).toBeGreaterThanOrEqual(10);
      expect(soak.samples.at(-1)!.pendingReplies).toBe(0);
      expect(soak.watchedCollections).toBeGreaterThan(10);
    }
    expect(results!.backlog!.result).toMatchObject({ messages: 400 });
    const text = out.join('\n');
    expect(text).toContain('**memory: topics**');
    expect(text).toContain('| topics | start servers ms |');
    expect(text).toContain('**memory: soak**');
    expect(text).toContain('**memory: backlog**');
  }, 120_000);

  it('refuses an unknown driver or mode, naming what it takes', async () => {
    await expect(main(['--driver', 'mqtt', '--mode', 'topics'])).rejects.toThrow('--driver takes memory, rabbit, redis, kafka');
    await expect(main(['--driver', 'memory', '--mode', 'sizes'])).rejects.toThrow('--mode takes topics, soak, backlog');
    await expect(main(['--driver', 'memory', '--mode', 'topics', '--sizes', '0'])).rejects.toThrow('--sizes must be a positive integer');
  });

  it('names the collections reachable from its roots by path, values in a collection sharing one path', () => {
    const inner = { pending: new Map([['a', 1]]) };
    const root = { byId: new Map([['x', inner], ['y', { pending: new Map([['b', 2], ['c', 3]]) }]]), list: [1, 2, 3] };
    expect(collectionSizes({ root })).toEqual({ 'root.byId': 2, 'root.byId[].pending': 3, 'root.list': 3 });
  });

  it('bench:scale:plot draws the topics chart and each soak from the results files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'scale-plot-'));
    try {
      const stamp = { date: '2026-11-27T07:00:00.000Z', commit: 'abc1234' };
      const row = (topics: number) => ({
        topics, serversStartMs: topics, listenersStartMs: topics, rssKbPerServer: 10, heapKbPerServer: 5, rssKbPerListener: 10, heapKbPerListener: 5,
        brokerPerPair: { queues: 4 }, timersPerPair: 0, handlesPerPair: 0, idleCpuPct: 0.1, idleWritesPerSec: 0, callsPerSec: 1000, callP50Ms: 1, callP99Ms: 2, stopMs: 1, calls: 10, idleMs: 10, ...stamp,
      });
      const sample = (done: number) => ({ done, rssMb: 100, heapMb: 8, timers: 0, handles: 2, pendingReplies: 0 });
      const results: ScaleResults = {
        bench: 'tidings-scale', driver: 'memory', url: 'memory://', node: process.version,
        topics: { rows: [row(1), row(10), row(100)] },
        soak: { runs: [{ kind: 'calls', count: 100, elapsedMs: 1, perSec: 1, samples: [10, 50, 100].map(sample), warmIndex: 0, rssGrowthPct: 0, heapGrowthPct: 0, timersGrowth: 0, handlesGrowth: 0, grownCollections: {}, watchedCollections: 1, ...stamp }] },
      };
      writeFileSync(join(dir, 'scale-memory.json'), JSON.stringify(results));
      const written = plot(`${dir}/`);
      expect(written.map((f) => f.slice(dir.length + 1)).sort()).toEqual(['scale-soak-memory.svg', 'scale-topics.svg']);
      expect(readdirSync(dir).sort()).toEqual(['scale-memory.json', 'scale-soak-memory.svg', 'scale-topics.svg']);
      const svg = readFileSync(join(dir, 'scale-topics.svg'), 'utf8');
      expect(svg.startsWith('<svg')).toBe(true);
      expect(svg).toContain('Calls with every topic alive');
      expect(svg).toMatch(/<path d="M[\d.]+,[\d.]+ L/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
