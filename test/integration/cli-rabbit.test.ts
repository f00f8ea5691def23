// The `tidings` binary across processes over RabbitMQ: serve in one process; call, cast, notify
// and listen from others; listen as the head of a pipeline (a reader that leaves early or does
// not read). Unique topics per test file run.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Notifier, getNotificationTransport } from '../../src/index.js';
import { deleteQueues, queueDepth } from '../interop/support/amqp-admin.js';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { waitFor } from '../../src/testing/wait.js';
import { finished, lines, requireBuiltBinary, runBin, startBin, startShell } from '../unit/cli/bin.js';

const env = { TIDINGS_TRANSPORT_URL: RABBIT_URL };
const topic = `t-${randomUUID()}`;
const serverName = `s-${randomUUID().slice(0, 8)}`;
let serve: ReturnType<typeof startBin> | undefined;

beforeAll(async () => {
  await requireRabbitMQ();
  requireBuiltBinary();
  serve = startBin(['serve', '--topic', topic, '--server', serverName], env);
  // Ready when a ping is answered (each attempt bounded by its own --timeout).
  await waitFor(
    async () => {
      if (serve!.child.exitCode !== null) throw new Error(`tidings serve exited early: ${serve!.stderr()}`);
      const r = await runBin(['call', 'ping', '--topic', topic, '--timeout', '1000'], { env });
      return r.code === 0 && r.stdout.trim() === '"pong"';
    },
    { timeoutMs: 45_000, intervalMs: 200, message: 'tidings serve answering ping over RabbitMQ' },
  );
}, 60_000);

afterAll(async () => {
  if (serve && serve.child.exitCode === null) {
    serve.child.kill('SIGKILL');
    await serve.done;
  }
});

describe('tidings serve + call/cast over RabbitMQ', () => {
  it('serve announces itself on stderr with the password redacted', () => {
    expect(serve!.stderr()).toMatch(new RegExp(`serving on rabbit://guest:\\*\\*\\*@127\\.0\\.0\\.1:5672/ topic=${topic} server=${serverName}`));
    expect(serve!.stderr()).not.toContain('guest:guest');
    expect(serve!.stderr()).not.toContain('warning');
  });

  it('call echo - reads its arguments from stdin', async () => {
    const args = { from: 'stdin', n: [1, 2] };
    const r = await runBin(['call', 'echo', '-', '--topic', topic], { env, input: JSON.stringify(args) + '\n' });
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(JSON.parse(r.stdout)).toEqual(args);
  });

  it('call with its stdout pipe closed before the reply: exit 0, nothing on stderr', async () => {
    const run = startBin(['call', 'echo', '{"x": 1}', '--topic', topic], env, { pausedStdout: true });
    run.child.stdout!.destroy();
    const r = await run.done;
    expect([r.code, r.signal, r.stderr]).toEqual([0, null, '']);
  });

  it('call echo prints the arguments back as JSON on stdout', async () => {
    const args = { hello: 'world', n: [1, 2, 3] };
    const r = await runBin(['call', 'echo', JSON.stringify(args), '--topic', topic], { env });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(args);
  });

  it('call add returns the sum; --server reaches the named server; --context arrives', async () => {
    const [add, who] = await Promise.all([
      runBin(['call', 'add', '{"a": 2, "b": 40}', '--topic', topic], { env }),
      runBin(['call', 'whoami', '--topic', topic, '--server', serverName, '--context', '{"user": "u1"}'], { env }),
    ]);
    expect([add.code, add.stdout.trim()]).toEqual([0, '42']);
    expect(who.code).toBe(0);
    const me = JSON.parse(who.stdout);
    expect(me.server).toBe(serverName);
    expect(me.topic).toBe(topic);
    expect(me.ctx.user).toBe('u1');
  });

  it('a remote failure exits 4 with one stderr line naming the remote class and message', async () => {
    const r = await runBin(['call', 'fail', '{"message": "as requested"}', '--topic', topic], { env });
    expect(r.code).toBe(4);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/^tidings call: remote error DeliberateFailure: as requested \(module tidings\.cli\)$/m);
    expect(r.stdout).toBe('');
  });

  it('a TypeError raised remotely arrives as TypeError (exit 4)', async () => {
    const r = await runBin(['call', 'add', '{"a": "x"}', '--topic', topic], { env });
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/^tidings call: remote error TypeError: add expects numbers/);
  });

  it('an unknown method exits 4 naming NoSuchMethod', async () => {
    const r = await runBin(['call', 'nosuch', '--topic', topic], { env });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('remote error NoSuchMethod');
  });

  it('a call slower than --timeout exits 3', async () => {
    const r = await runBin(['call', 'sleep', '{"ms": 3000}', '--topic', topic, '--timeout', '500'], { env });
    expect(r.code).toBe(3);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/^tidings call: timeout: /);
  });

  it('cast and fanout cast exit 0 once RabbitMQ accepted them', async () => {
    const [cast, fanout] = await Promise.all([
      runBin(['cast', 'echo', '{"x": 1}', '--topic', topic], { env }),
      runBin(['cast', 'echo', '{"x": 2}', '--topic', topic, '--fanout'], { env }),
    ]);
    expect([cast.code, cast.stderr, cast.stdout]).toEqual([0, '', '']);
    expect([fanout.code, fanout.stderr, fanout.stdout]).toEqual([0, '', '']);
  });
});

describe('tidings notify + listen over RabbitMQ', () => {
  it('listen --count 2 prints the two notifications sent by tidings notify, then exits 0', async () => {
    const ntopic = `t-${randomUUID()}`;
    const listen = startBin(['listen', '--topic', ntopic, '--pool', `p-${randomUUID().slice(0, 8)}`, '--count', '2', '--timeout', '30000'], env);
    try {
      await waitFor(() => listen.stderr().includes('listening on '), { timeoutMs: 20_000, message: `tidings listen to subscribe (stderr: ${listen.stderr()})` });
      const sent = [
        await runBin(['notify', 'compute.instance.create.end', '-', '--topic', ntopic, '--publisher-id', 'compute.host1'], { env, input: '{"id": 1}' }),
        await runBin(['notify', 'compute.instance.delete.end', '{"id": 2}', '--topic', ntopic, '--priority', 'error', '--context', '{"user": "u2"}'], { env }),
      ];
      for (const r of sent) expect([r.code, r.stderr]).toEqual([0, '']);
      const result = await listen.done;
      expect(result.code).toBe(0);
      const got = lines(result.stdout).map((l) => JSON.parse(l));
      expect(got).toHaveLength(2);
      const byType = Object.fromEntries(got.map((n) => [n.event_type, n]));
      expect(byType['compute.instance.create.end']).toMatchObject({ priority: 'info', publisher_id: 'compute.host1', payload: { id: 1 } });
      expect(byType['compute.instance.delete.end']).toMatchObject({ priority: 'error', payload: { id: 2 }, ctx: { user: 'u2' } });
      expect(typeof byType['compute.instance.create.end'].message_id).toBe('string');
    } finally {
      if (listen.child.exitCode === null) listen.child.kill('SIGKILL');
    }
  });
});

describe('tidings listen at the head of a pipeline', () => {
  const pad = 'x'.repeat(1000);
  let transport: Awaited<ReturnType<typeof getNotificationTransport>>;
  const queues: string[] = [];

  beforeAll(async () => {
    transport = await getNotificationTransport(RABBIT_URL);
  });

  afterAll(async () => {
    await transport?.cleanup();
    await deleteQueues(queues);
  });

  /** A listen command on a fresh topic and pool (the pool is the queue's name). */
  function fresh(): { ntopic: string; pool: string; notifier: Notifier } {
    const ntopic = `t-${randomUUID()}`;
    const pool = `p-${randomUUID()}`;
    queues.push(pool);
    return { ntopic, pool, notifier: new Notifier(transport, { publisherId: 'cli-test', driver: 'messagingv2', topics: [ntopic] }) };
  }

  /** Stack traces and unhandled errors look like this on stderr. */
  const crash = /^\s+at |EPIPE|Unhandled|Error:/m;

  it('listen | head -1: head gets one line, listen stops its listener, cleans up and exits 0', async () => {
    const { ntopic, pool, notifier } = fresh();
    // The subshell reports listen's own exit status, which the pipeline would hide behind head's.
    const run = startShell(`(tidings listen --verbose --topic ${ntopic} --pool ${pool}; echo "tidings exited $?" >&2) | head -1`, env);
    await waitFor(() => run.stderr().includes('listening on '), { timeoutMs: 20_000, message: `tidings listen to subscribe (stderr: ${run.stderr()})` });
    // listen learns that head left when it writes the next line: keep notifications coming.
    let n = 0;
    const deadline = Date.now() + 30_000;
    while (run.child.exitCode === null && Date.now() < deadline) await notifier.info({}, 'cli.test', { n: n++, pad });
    const r = await finished(run, 10_000, 'the pipeline');
    expect(lines(r.stdout)).toHaveLength(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ event_type: 'cli.test', payload: { n: 0 } });
    expect(r.stderr).toMatch(/^tidings exited 0$/m);
    expect(r.stderr).toContain('AMQP driver cleaned up');
    expect(r.stderr).not.toMatch(crash);
    await waitFor(async () => (await queueDepth(pool))?.consumerCount === 0, { timeoutMs: 10_000, message: 'no consumer left on the pool queue' });
  });

  it('stdout pipe destroyed by the reader: exit 0, and what was not printed stays on the broker', async () => {
    const { ntopic, pool, notifier } = fresh();
    const run = startBin(['listen', '--verbose', '--topic', ntopic, '--pool', pool], env, { pausedStdout: true });
    await waitFor(() => run.stderr().includes('listening on '), { timeoutMs: 20_000, message: `tidings listen to subscribe (stderr: ${run.stderr()})` });
    const closed = new Promise<void>((resolve) => run.child.stdout!.once('close', resolve));
    run.child.stdout!.once('data', () => run.child.stdout!.destroy());
    await notifier.info({}, 'cli.test', { n: 0 });
    await closed;
    const unread = 20;
    for (let n = 1; n <= unread; n++) await notifier.info({}, 'cli.test', { n, pad });
    const r = await finished(run, 20_000, 'tidings listen');
    expect([r.code, r.signal]).toEqual([0, null]);
    expect(r.stderr).toContain('AMQP driver cleaned up');
    expect(r.stderr).not.toMatch(crash);
    // The line that failed was requeued, the rest returned unacknowledged: none of them is lost.
    await waitFor(
      async () => {
        const depth = await queueDepth(pool);
        if (depth?.consumerCount === 0 && depth.messageCount === unread) return true;
        throw new Error(`pool queue: ${JSON.stringify(depth)}`);
      },
      { timeoutMs: 10_000, message: `${unread} ready notifications and no consumer on the pool queue` },
    );
  });

  it('a reader that does not read holds listen back: the broker keeps the notifications until reading resumes', async () => {
    const { ntopic, pool, notifier } = fresh();
    const total = 2000;
    const prefetch = 50;
    const url = `${RABBIT_URL}${RABBIT_URL.includes('?') ? '&' : '?'}rabbit_qos_prefetch_count=${prefetch}`;
    const run = startBin(['listen', '--topic', ntopic, '--pool', pool, '--count', String(total)], { TIDINGS_TRANSPORT_URL: url }, { pausedStdout: true });
    try {
      await waitFor(() => run.stderr().includes('listening on '), { timeoutMs: 20_000, message: `tidings listen to subscribe (stderr: ${run.stderr()})` });
      for (let n = 0; n < total; n += 100) {
        await Promise.all(Array.from({ length: Math.min(100, total - n) }, (_, i) => notifier.info({}, 'cli.test', { n: n + i, pad })));
      }
      // Wait until listen is stuck (the ready count no longer moves); without back-pressure it
      // would have taken, acknowledged and buffered every notification by then.
      let last = -1;
      const ready = await waitFor(
        async () => {
          const now = (await queueDepth(pool))?.messageCount ?? -1;
          const settled = now === last && now < total;
          last = now;
          return settled ? now + 1 : 0;
        },
        { timeoutMs: 30_000, intervalMs: 300, message: 'the ready count of the pool queue to settle' },
      ).then((v) => v - 1);
      // Taken at most: the prefetch window, plus what fits in the stdout pipe (64 KiB) and the
      // reader's stream buffer while nobody reads: about 110 lines of ~1.1 KB.
      expect(ready).toBeGreaterThanOrEqual(total - prefetch - 250);
      run.resumeStdout();
      const r = await finished(run, 60_000, 'tidings listen --count');
      expect([r.code, r.stderr.includes('listening on ')]).toEqual([0, true]);
      const got = lines(r.stdout).map((l) => (JSON.parse(l) as { payload: { n: number } }).payload.n);
      expect(got).toHaveLength(total);
      expect(new Set(got).size).toBe(total);
    } finally {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    }
  }, 120_000);
});

describe('tidings serve shutdown', () => {
  it('stops gracefully on SIGTERM and exits 0', async () => {
    const stopTopic = `t-${randomUUID()}`;
    const s = startBin(['serve', '--topic', stopTopic], env);
    try {
      await waitFor(() => s.stderr().includes('serving on '), { timeoutMs: 20_000, message: `tidings serve to start (stderr: ${s.stderr()})` });
      s.child.kill('SIGTERM');
      const r = await s.done;
      expect(r.code).toBe(0);
      expect(r.stderr).toContain('SIGTERM: stopping');
      expect(r.stderr).toMatch(/stopped\n$/);
    } finally {
      if (s.child.exitCode === null) s.child.kill('SIGKILL');
    }
  });
});
