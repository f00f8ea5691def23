// The console's bounded memory: traffic buckets older than the history are dropped and a bucket
// keeps at most 512 latencies (percentiles from a reservoir); pool samples older than the history
// are dropped too, and a driver that cannot inspect pools stops the sampler.
import diagnostics from 'node:diagnostics_channel';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NOTIFY_CHANNELS, NotSupportedError, silentLogger } from '../../../src/index.js';
import { PoolSampler, type DriverInspector } from '../../../src/console/inspect.js';
import { TRAFFIC_BUCKET_MS, TrafficRecorder } from '../../../src/console/traffic.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('TrafficRecorder', () => {
  it('keeps buckets of the last historyMs only, and percentiles over a bounded sample', () => {
    let now = 1_000 * TRAFFIC_BUCKET_MS;
    const recorder = new TrafficRecorder(60_000, () => now);
    recorder.start();
    const send = diagnostics.channel(NOTIFY_CHANNELS.send);
    try {
      for (let i = 1; i <= 5_000; i++) send.publish({ durationMs: i % 100 });
      let view = recorder.view();
      expect(view.buckets).toHaveLength(1);
      expect(view.buckets[0]).toMatchObject({ at: now, notifications: 5_000, errors: 0 });
      expect(view.buckets[0].p50).toBeGreaterThan(30);
      expect(view.buckets[0].p50).toBeLessThan(70);
      expect((recorder as unknown as { buckets: Array<{ latencies: number[] }> }).buckets[0].latencies.length).toBe(512);

      send.publish({ durationMs: 1, error: new Error('x') });
      now += 30_000;
      send.publish({ durationMs: 1 });
      expect(recorder.view().buckets.map((b) => b.notifications)).toEqual([5_001, 1]);
      now += 60_000;
      view = recorder.view();
      // The first bucket ended more than a minute ago; the second did not.
      expect(view.buckets.map((b) => b.notifications)).toEqual([1]);
      now += 60_000;
      expect(recorder.view().buckets).toEqual([]);
    } finally {
      recorder.stop();
    }
    send.publish({ durationMs: 1 });
    expect(recorder.view().buckets).toEqual([]);
  });
});

describe('PoolSampler', () => {
  it('samples every interval, keeps historyMs of samples, and stops for a driver that cannot inspect', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    let backlog = 0;
    const inspector = { inspectPools: async () => [{ address: 't.info', pool: 'p', isDefault: false, backlog: backlog++, consumers: 1 }] } as unknown as DriverInspector;
    const sampler = new PoolSampler(inspector, ['t'], [], 1_000, 10_000, silentLogger);
    sampler.start();
    await vi.advanceTimersByTimeAsync(30_500);
    const kept = sampler.history('t')!;
    expect(kept.length).toBeGreaterThanOrEqual(10);
    expect(kept.length).toBeLessThanOrEqual(11);
    expect(kept[0].at).toBeGreaterThanOrEqual(Date.now() - 10_000);
    expect(kept.at(-1)).toMatchObject({ address: 't.info', pool: 'p', consumers: 1, backlog: 30 });
    expect(sampler.history('other')).toBeUndefined();
    await sampler.stop();

    let asked = 0;
    const unable = { inspectPools: async () => { asked++; throw new NotSupportedError('no'); } } as unknown as DriverInspector;
    const idle = new PoolSampler(unable, ['t'], [], 1_000, 10_000, silentLogger);
    idle.start();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(asked).toBe(1);
    expect(idle.history('t')).toEqual([]);
    await idle.stop();
  });
});
