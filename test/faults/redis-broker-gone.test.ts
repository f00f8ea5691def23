// Stopping on Redis when the server is gone: `tidings serve` told SIGTERM as its redis-server is
// SIGKILLed exits within a bound without spinning, and in process an RPC server, a notification
// listener and a caller whose Redis died earlier back off while they wait and close within the
// deadline. Uses only this file's own redis-server (killed and restarted here).
import { afterAll, beforeAll, describe, it } from 'vitest';
import { uniqueName } from '../../src/testing/wait.js';
import { idleWithBrokerGone, serveAndListenThen, serveThenBrokerGone } from '../support/broker-gone.js';
import { startRedisServer, type RedisServer } from '../support/redis-servers.js';
import { requireBuiltBinary } from '../unit/cli/bin.js';

/** How long stopping may take with Redis gone (before the fix: ~18 s for `tidings serve`, never for an RPC caller's close). */
const EXIT_BOUND_MS = 10_000;
/** CPU seconds stopping may burn. */
const CPU_BOUND_S = 2;
/** The deadline given to close(); the bound adds a margin for a busy 2-core machine. */
const DEADLINE_MS = 2000;
const CLOSE_BOUND_MS = DEADLINE_MS + 3000;

let redis: RedisServer;

beforeAll(async () => {
  requireBuiltBinary();
  redis = await startRedisServer();
}, 30_000);

afterAll(async () => {
  await redis?.stop();
});

describe('Redis with the server gone', () => {
  it('tidings serve: redis-server SIGKILLed, SIGTERM 3 s later; exits within the bound, CPU stays small', async () => {
    // 3 s of reconnecting first: the readers' reads and the reply reader then wait in ioredis' queue.
    await serveThenBrokerGone('redis', { TIDINGS_TRANSPORT_URL: redis.url }, () => redis.kill('SIGKILL'), { exitBoundMs: EXIT_BOUND_MS, cpuBoundS: CPU_BOUND_S, sigtermAfterMs: 3000 });
  }, 60_000);

  it('in process: Redis died earlier; waiting backs off, close({deadlineMs}) of server, listener and caller ends within the deadline', async () => {
    await redis.restart();
    const { idleCpuMs, close } = await serveAndListenThen(redis.url, uniqueName('gone'), async () => {
      await redis.kill('SIGKILL');
      // Reconnects and reads back off while Redis is gone: an idle wait costs little CPU.
      return idleWithBrokerGone();
    }, { deadlineMs: DEADLINE_MS, boundMs: CLOSE_BOUND_MS, cpuBoundS: CPU_BOUND_S });
    console.log(`broker gone (redis, in process): idle 3 s used ${idleCpuMs} ms of CPU; close({ deadlineMs: ${DEADLINE_MS} }) took ${close.exitMs} ms and ${close.cpuMs} ms of CPU`);
  }, 60_000);
});
