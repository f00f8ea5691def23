// Redis unreachable from the start (a closed loopback port): a call rejects after its timeout, and
// then closing the transport ends at once, in process and in the CLI. Before the fix the reply
// reader's BLMPOP waited in ioredis' offline queue forever, and so did close() and `tidings call`.
import { describe, expect, it } from 'vitest';
import { getRpcClient, getRpcTransport, MessagingTimeout, Target } from '../../src/index.js';
import { uniqueName } from '../../src/testing/wait.js';
import { measured } from '../support/broker-gone.js';
import { freePorts } from '../support/redis-servers.js';
import { requireBuiltBinary, runBin } from '../unit/cli/bin.js';

const CALL_TIMEOUT_MS = 3000;
const DEADLINE_MS = 2000;

describe('Redis unreachable', () => {
  it('a call times out, then close({ deadlineMs }) resolves within the deadline', async () => {
    const [port] = await freePorts(1);
    const transport = await getRpcTransport(`redis://127.0.0.1:${port}/`);
    const client = getRpcClient(transport, new Target({ topic: uniqueName('gone') }), { timeout: CALL_TIMEOUT_MS });
    await expect(client.call({}, 'ping', {})).rejects.toBeInstanceOf(MessagingTimeout);
    // The bound is the deadline itself: with nothing running, closing waits for nothing Redis must answer.
    const close = await measured(() => transport.close({ deadlineMs: DEADLINE_MS }), DEADLINE_MS);
    expect(transport.health().connected).toBe(false);
    console.log(`redis unreachable: close({ deadlineMs: ${DEADLINE_MS} }) after a timed-out call took ${close.exitMs} ms`);
  }, 30_000);

  it('tidings call --timeout 3000 exits with the timeout status soon after the timeout', async () => {
    requireBuiltBinary();
    const [port] = await freePorts(1);
    const started = Date.now();
    // runBin fails the test if the process is still running past its bound.
    const result = await runBin(['call', 'ping', '--topic', uniqueName('gone'), '--url', `redis://127.0.0.1:${port}/`, '--timeout', String(CALL_TIMEOUT_MS)], { timeoutMs: CALL_TIMEOUT_MS + 10_000 });
    const tookMs = Date.now() - started;
    console.log(`redis unreachable: tidings call --timeout ${CALL_TIMEOUT_MS} exited after ${tookMs} ms`);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('timeout');
    expect(result.stderr).toContain('Redis is unreachable');
  }, 30_000);
});
