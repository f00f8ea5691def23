// The `tidings` binary across processes over RabbitMQ: serve in one process; call, cast, notify
// and listen from others. Unique topics per test file run.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RABBIT_URL, requireRabbitMQ } from '../support/brokers.js';
import { waitFor } from '../support/wait.js';
import { lines, requireBuiltBinary, runBin, startBin } from '../unit/cli/bin.js';

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
        await runBin(['notify', 'compute.instance.create.end', '{"id": 1}', '--topic', ntopic, '--publisher-id', 'compute.host1'], { env }),
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
