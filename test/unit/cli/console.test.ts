// `tidings console`: its arguments (consoleOptionsFrom and the usage errors, exit 2), its help,
// and the built binary serving the API on memory://, printing the token only with --allow-write,
// and closing on SIGTERM / SIGINT with exit 0.
import { beforeAll, describe, expect, it } from 'vitest';
import { consoleOptionsFrom } from '../../../src/cli/console.js';
import { runCli } from '../../../src/cli/run-cli.js';
import { waitFor } from '../../../src/testing/wait.js';
import { captureIO } from '../../support/cli-io.js';
import { finished, requireBuiltBinary, startBin } from './bin.js';

describe('tidings console arguments', () => {
  it('maps every option onto ConsoleOptions', () => {
    expect(
      consoleOptionsFrom({
        port: '0',
        host: '::1',
        topic: ['compute', 'scheduler'],
        'notification-topic': ['notifications'],
        pool: ['billing'],
        expect: ['compute=3', 'scheduler=0'],
        'allow-write': true,
        'refresh-ms': '500',
      }),
    ).toEqual({ port: 0, host: '::1', topics: ['compute', 'scheduler'], notificationTopics: ['notifications'], pools: ['billing'], expectedServers: { compute: 3, scheduler: 0 }, allowWrite: true, refreshMs: 500 });
    expect(consoleOptionsFrom({})).toEqual({});
  });

  it.each([
    [['--port', 'http'], /--port must be an integer from 0 to 65535/],
    [['--port', '70000'], /--port must be an integer/],
    [['--port', '-1'], /--port/],
    [['--host', ''], /--host must not be empty/],
    [['--expect', 'compute'], /--expect must be <topic>=<count>/],
    [['--expect', 'compute=many'], /--expect must be <topic>=<count>/],
    [['--refresh-ms', '0'], /--refresh-ms must be a positive integer/],
    [['--refresh-ms', '100'], /Invalid refreshMs/],
    [['--topic', 'a b'], /Invalid topics/],
    [['extra'], /unexpected argument "extra"/],
    [['--bogus'], /Unknown option '--bogus'/],
  ])('%j is bad input: exit 2 and one line saying why', async (args, why) => {
    const io = captureIO();
    expect(await runCli(['console', '--port', '0', ...args], io)).toBe(2);
    expect(io.errors.join('\n')).toMatch(why);
  });

  it('is listed in the top-level help and has its own', async () => {
    const top = captureIO();
    expect(await runCli(['--help'], top)).toBe(0);
    expect(top.lines.join('\n')).toMatch(/^\s+console\s+serve a web console/m);
    const help = captureIO();
    expect(await runCli(['console', '--help'], help)).toBe(0);
    const text = help.lines.join('\n');
    for (const flag of ['--port', '--host', '--topic', '--notification-topic', '--pool', '--expect', '--allow-write', '--refresh-ms', 'SIGINT/SIGTERM', 'read-only']) expect(text).toContain(flag);
  });
});

describe('tidings console (the built binary)', () => {
  beforeAll(requireBuiltBinary);

  it.each([
    ['SIGTERM', true],
    ['SIGINT', false],
  ] as const)('serves the API, prints the token only when writable, and exits 0 on %s', async (signal, allowWrite) => {
    const token = 'cli-test-token-0123456789abcdef';
    const args = ['console', '--port', '0', '--topic', 'demo', '--url', 'memory://'];
    const run = startBin(allowWrite ? [...args, '--allow-write'] : args, { TIDINGS_CONSOLE_TOKEN: token });
    try {
      const line = await waitFor(() => /console on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(run.stderr()), { timeoutMs: 15_000, message: `"console on" on stderr (got: ${run.stderr()})` });
      const url = line[1];
      const overview = await fetch(`${url}api/overview`);
      expect(overview.status).toBe(200);
      expect(await overview.json()).toMatchObject({ driver: 'memory', writable: allowWrite, topics: ['demo'] });
      expect(run.stderr().includes(`token (X-Tidings-Token): ${token}`)).toBe(allowWrite);
      run.child.kill(signal);
      const r = await finished(run, 15_000, 'tidings console');
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`${signal}: closing the console`);
      await expect(fetch(`${url}api/overview`)).rejects.toThrow();
    } finally {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    }
  }, 30_000);
});
