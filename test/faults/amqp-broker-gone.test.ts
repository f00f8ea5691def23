// Stopping on RabbitMQ when the broker is gone: a TCP proxy stands between tidings and the shared
// RabbitMQ, and killing it (every socket closed, no longer listening, so reconnects are refused)
// is the broker going away; the shared broker itself is never touched. `tidings serve` told
// SIGTERM then exits within a bound without spinning, and in process an RPC server, a
// notification listener and a caller back off while they wait and close within the deadline.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '../../src/testing/wait.js';
import { AmqpFrameProxy } from '../support/amqp-frame-proxy.js';
import { idleWithBrokerGone, serveAndListenThen, serveThenBrokerGone } from '../support/broker-gone.js';
import { requireRabbitMQ } from '../support/brokers.js';
import { deleteRabbitObjectsWithPrefix } from '../support/rabbit-admin.js';
import { requireBuiltBinary } from '../unit/cli/bin.js';

const PREFIX = uniqueName('t-gone');
/** How long stopping may take with the broker gone. */
const EXIT_BOUND_MS = 10_000;
/** CPU seconds stopping may burn. */
const CPU_BOUND_S = 2;
/** The deadline given to close(); the bound adds a margin for a busy 2-core machine. */
const DEADLINE_MS = 2000;
const CLOSE_BOUND_MS = DEADLINE_MS + 3000;

const proxies: AmqpFrameProxy[] = [];

/** A proxy to the shared RabbitMQ, and the URL through it. */
async function proxied(): Promise<{ proxy: AmqpFrameProxy; url: string }> {
  const proxy = await AmqpFrameProxy.start();
  proxies.push(proxy);
  return { proxy, url: `rabbit://guest:guest@127.0.0.1:${proxy.port}/` };
}

beforeAll(async () => {
  requireBuiltBinary();
  await requireRabbitMQ();
});

afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
  await deleteRabbitObjectsWithPrefix(PREFIX);
}, 60_000);

describe('RabbitMQ with the broker gone (its proxy killed)', () => {
  it('tidings serve: the broker goes, SIGTERM 3 s later; exits within the bound, CPU stays small', async () => {
    const { proxy, url } = await proxied();
    await serveThenBrokerGone('rabbitmq', { TIDINGS_TRANSPORT_URL: url }, () => proxy.close(), {
      exitBoundMs: EXIT_BOUND_MS,
      cpuBoundS: CPU_BOUND_S,
      sigtermAfterMs: 3000,
      topic: `${PREFIX}-serve`,
    });
  }, 60_000);

  it('in process: the broker went earlier; waiting backs off, close({deadlineMs}) of server, listener and caller ends within the deadline', async () => {
    const { proxy, url } = await proxied();
    const { idleCpuMs, close } = await serveAndListenThen(url, `${PREFIX}-inproc`, async () => {
      await proxy.close();
      // Reconnects back off while the broker is gone: an idle wait costs little CPU.
      return idleWithBrokerGone();
    }, { deadlineMs: DEADLINE_MS, boundMs: CLOSE_BOUND_MS, cpuBoundS: CPU_BOUND_S });
    console.log(`broker gone (rabbitmq, in process): idle 3 s used ${idleCpuMs} ms of CPU; close({ deadlineMs: ${DEADLINE_MS} }) took ${close.exitMs} ms and ${close.cpuMs} ms of CPU`);
  }, 60_000);

  it('in process: the broker stops answering (TCP open, nothing comes back); close() ends within shutdown_timeout_ms per connection, not at the heartbeat', async () => {
    const { proxy, url } = await proxied();
    // Before the fix each cancel and channel close waited for the heartbeat to give up (60 s by default).
    const shutdownMs = 2000;
    const { close } = await serveAndListenThen(`${url}?shutdown_timeout_ms=${shutdownMs}`, `${PREFIX}-frozen`, async () => {
      expect(proxy.freeze()).toBeGreaterThan(0);
      return 0;
    }, { deadlineMs: DEADLINE_MS, boundMs: 2 * shutdownMs + CLOSE_BOUND_MS, cpuBoundS: CPU_BOUND_S });
    console.log(`broker frozen (rabbitmq, in process): close({ deadlineMs: ${DEADLINE_MS} }) with shutdown_timeout_ms=${shutdownMs} took ${close.exitMs} ms and ${close.cpuMs} ms of CPU`);
  }, 60_000);
});

