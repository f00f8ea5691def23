// How a kafkajs listener's consumer waits for the driver (back-pressure, a handover, a requeue
// backoff): it heartbeats meanwhile, and a heartbeat saying the group is rebalancing ends the wait
// by throwing out of eachBatch, so kafkajs rejoins at once instead of when the wait is over.
import { describe, expect, it } from 'vitest';
import { withHeartbeats } from '../../../src/drivers/kafka/client/kafkajs.js';
import { deferred, waitFor } from '../../../src/testing/wait.js';

describe('withHeartbeats (kafkajs adapter)', () => {
  it('heartbeats while the wait lasts, and resolves when it ends', async () => {
    const done = deferred<void>();
    let beats = 0;
    const waiting = withHeartbeats(done.promise, async () => void beats++, 10);
    await waitFor(() => beats >= 3, { message: 'three heartbeats during the wait' });
    done.resolve();
    await expect(waiting).resolves.toBeUndefined();
  });

  it('ignores a failed heartbeat that is not a rebalance (the next one may work)', async () => {
    const done = deferred<void>();
    let beats = 0;
    const waiting = withHeartbeats(done.promise, async () => {
      beats++;
      throw Object.assign(new Error('Connection timeout'), { type: 'UNKNOWN' });
    }, 10);
    await waitFor(() => beats >= 3, { message: 'heartbeats after failed ones' });
    done.resolve();
    await expect(waiting).resolves.toBeUndefined();
  });

  for (const type of ['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'NOT_COORDINATOR_FOR_GROUP']) {
    it(`throws ${type} out of a wait that never ends`, async () => {
      const rebalance = Object.assign(new Error('The group is rebalancing'), { type });
      await expect(withHeartbeats(new Promise<void>(() => undefined), () => Promise.reject(rebalance), 10)).rejects.toBe(rebalance);
    });
  }
});
