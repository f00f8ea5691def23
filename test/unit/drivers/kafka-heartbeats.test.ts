// How a kafkajs listener's consumer waits for the driver (back-pressure, a handover, a requeue
// backoff): it heartbeats meanwhile, and a heartbeat saying the group is rebalancing ends the wait
// by throwing out of eachBatch, so kafkajs rejoins at once instead of when the wait is over.
import { describe, expect, it } from 'vitest';
import { withHeartbeats } from '../../../src/drivers/kafka/kafkajs-client.js';

const later = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe('withHeartbeats (kafkajs adapter)', () => {
  it('heartbeats every interval until the wait is over', async () => {
    let beats = 0;
    await withHeartbeats(later(130), async () => void beats++, 20);
    expect(beats).toBeGreaterThanOrEqual(3);
    expect(beats).toBeLessThanOrEqual(7);
  });

  it('ignores a failed heartbeat that is not a rebalance (the next one may work)', async () => {
    let beats = 0;
    await withHeartbeats(later(80), async () => {
      beats++;
      throw Object.assign(new Error('Connection timeout'), { type: 'UNKNOWN' });
    }, 10);
    expect(beats).toBeGreaterThanOrEqual(2);
  });

  for (const type of ['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'NOT_COORDINATOR_FOR_GROUP']) {
    it(`throws ${type} at once, long before the wait is over`, async () => {
      const rebalance = Object.assign(new Error('The group is rebalancing'), { type });
      const started = Date.now();
      await expect(withHeartbeats(later(5000), () => Promise.reject(rebalance), 10)).rejects.toBe(rebalance);
      expect(Date.now() - started).toBeLessThan(1000);
    });
  }
});
