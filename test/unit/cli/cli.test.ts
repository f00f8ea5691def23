// The `tidings` binary on memory://: help texts, the demo, bad input / timeouts reported as
// one stderr line with the documented exit status, memory:// warnings, and a closed stdout.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../src/testing/wait.js';
import { finished, lines, requireBuiltBinary, runBin, startBin, startShell } from './bin.js';

const COMMANDS = ['call', 'cast', 'notify', 'listen', 'serve', 'demo'];
const VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const IN_PROCESS_WARNING = /^warning: memory:\/\/ is in-process: .*; pass --url or set \$TIDINGS_TRANSPORT_URL to a broker/;

beforeAll(() => requireBuiltBinary());

describe('tidings --help', () => {
  it('prints the top-level help listing every command', async () => {
    const r = await runBin(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: tidings <command>');
    for (const c of COMMANDS) expect(r.stdout).toMatch(new RegExp(`^  ${c}\\s`, 'm'));
  });

  it('without a command prints the help on stderr and exits 2', async () => {
    const r = await runBin([]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Usage: tidings <command>');
  });

  it.each(COMMANDS)('tidings %s --help prints the command usage', async (command) => {
    const r = await runBin([command, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Usage: tidings ${command}`);
    expect(r.stderr).toBe('');
  });

  it.each(['--version', '-V'])('tidings %s prints the package version on stdout', async (flag) => {
    const r = await runBin([flag]);
    expect([r.code, r.stdout, r.stderr]).toEqual([0, `${VERSION}\n`, '']);
  });

  it('tidings help <command> is the same text as <command> --help', async () => {
    const [a, b] = await Promise.all([runBin(['help', 'listen']), runBin(['listen', '-h'])]);
    expect(a.code).toBe(0);
    expect(a.stdout).toBe(b.stdout);
  });
});

describe('tidings demo', () => {
  it('runs RPC and notifications end to end on memory:// and exits 0', async () => {
    const r = await runBin(['demo'], { timeoutMs: 30_000 });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = r.stdout;
    expect(out).toContain('tidings demo: RPC and notifications end to end on memory://');
    expect(out).toContain('call add {"a":2,"b":3} -> 5');
    expect(out).toContain('call whoami with server=host-b -> "host-b"');
    expect(out).toMatch(/cast record \{"event":"hello"\} -> handled once, by host-[ab]\n/);
    expect(out).toContain('fanout cast record {"event":"everyone"} -> handled by every server: host-a, host-b');
    expect(out).toContain('threw InsufficientFunds (instanceof InsufficientFunds: true)');
    expect(out).toContain('call nosuch -> threw NoSuchMethod');
    expect(out).toContain('call slow with timeout=200 -> threw MessagingTimeout');
    expect(out).toMatch(/pool "billing": billing-1 got \d, billing-2 got \d -> each notification once per pool/);
    expect(out).toContain('pool "audit": audit-1 got 6 -> every pool gets its own copy');
    expect(out).toMatch(/batch listener \(batchSize 5, batchTimeout 100 ms\) got 6 sample notifications in batches of [\d +]+\n/);
    expect(out).toContain('demo finished: every step behaved as described');
  });
});

describe('bad input: exit 2 and one line on stderr', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['bad JSON args', ['call', 'echo', '{bad', '--topic', 't'], /^tidings call: json-args is not valid JSON/],
    ['JSON args that are not an object', ['call', 'echo', '[1,2]', '--topic', 't'], /^tidings call: json-args must be a JSON object/],
    ['bad --context', ['cast', 'echo', '{}', '--topic', 't', '--context', 'nope'], /^tidings cast: --context is not valid JSON/],
    ['a --context key that reaches a prototype', ['cast', 'echo', '{}', '--topic', 't', '--context', '{"__proto__": {"is_admin": true}}'], /^tidings cast: --context must not have the key "__proto__"/],
    ['a --context key "constructor"', ['notify', 'a.b', '--context', '{"user": "u", "constructor": 1}'], /^tidings notify: --context must not have the key "constructor"/],
    ['missing --topic on call', ['call', 'echo', '{}'], /^tidings call: missing --topic/],
    ['missing --topic on serve', ['serve'], /^tidings serve: missing --topic/],
    ['missing method', ['call', '--topic', 't'], /^tidings call: missing <method>/],
    ['unknown option', ['call', 'echo', '--topic', 't', '--nope'], /^tidings call: Unknown option '--nope'/],
    ['fanout with call', ['call', 'echo', '--topic', 't', '--fanout'], /^tidings call: --fanout cannot be used with call/],
    ['bad --timeout', ['call', 'echo', '--topic', 't', '--timeout', 'soon'], /^tidings call: --timeout must be a positive integer/],
    ['bad priority', ['notify', 'a.b', '--priority', 'loud'], /^tidings notify: --priority must be one of audit, debug/],
    ['bad notification payload', ['notify', 'a.b', '{x'], /^tidings notify: json-payload is not valid JSON/],
    ['bad --count', ['listen', '--count', '0'], /^tidings listen: --count must be a positive integer/],
    ['unknown command', ['frobnicate'], /^tidings: unknown command "frobnicate"/],
  ];

  it.each(cases)('%s', async (_name, args, expected) => {
    const r = await runBin(args);
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(expected);
    expect(r.stdout).toBe('');
  });

  it.each([
    ['a bad port', 'rabbit://admin:s3cret-pw@broker.example:notaport/', /Invalid transport URL rabbit:\/\/admin:\*\*\*@broker\.example:notaport\//],
    ['an unknown scheme', 'carrierpigeon://admin:s3cret-pw@loft/', /Unknown transport URL scheme "carrierpigeon" in carrierpigeon:\/\/admin:\*\*\*@loft\//],
  ])('a URL with %s is refused with its password redacted', async (_name, url, expected) => {
    for (const args of [
      ['call', 'echo', '--topic', 't', '--url', url],
      ['notify', 'a.b', '--url', url],
    ]) {
      const r = await runBin(args);
      expect(r.code).toBe(2);
      expect(lines(r.stderr)).toHaveLength(1);
      expect(r.stderr).toMatch(expected);
      expect(r.stderr).not.toContain('s3cret-pw');
    }
  });

  it('refuses credentials without a host (exit 2) instead of trying localhost, secret not shown', async () => {
    const r = await runBin(['call', 'ping', '--topic', 't', '--url', 'rabbit://user:secret@']);
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/^tidings call: Invalid transport URL rabbit:\/\/user:\*\*\*@: the host part has credentials but no host/);
    expect(r.stderr).not.toContain('secret');
    expect(r.stdout).toBe('');
  });

  it('refuses a password with an unencoded "@" and "/" (exit 2), asking to percent-encode it', async () => {
    const r = await runBin(['cast', 'echo', '--topic', 't', '--url', 'amqp://user:p@ss/w0rd@127.0.0.1:5672/']);
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toContain('amqp://user:***@127.0.0.1:5672/');
    expect(r.stderr).toContain('encodeURIComponent');
    for (const piece of ['p@ss', 'w0rd']) expect(r.stderr).not.toContain(piece);
  });

  it('takes the URL from $TIDINGS_TRANSPORT_URL, redacted in errors too', async () => {
    const r = await runBin(['cast', 'echo', '--topic', 't'], { env: { TIDINGS_TRANSPORT_URL: 'nosuch://u:s3cret-pw@h/' } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('nosuch://u:***@h/');
    expect(r.stderr).not.toContain('s3cret-pw');
  });
});

describe('call on memory:// fails at once: no other process can answer', () => {
  it.each([
    ['implicitly (no --url, no $TIDINGS_TRANSPORT_URL)', [], {}, 'memory:// (used without --url or $TIDINGS_TRANSPORT_URL) is in-process'],
    ['from --url', ['--url', 'memory://'], {}, 'memory:// is in-process'],
    ['from $TIDINGS_TRANSPORT_URL', [], { TIDINGS_TRANSPORT_URL: 'memory://' }, 'memory:// is in-process'],
  ])('%s: exit 2 with one line saying how to point at a broker', async (_name, extra, env, said) => {
    // No --timeout: the default reply deadline (30 s) is longer than runBin's 20 s limit.
    const r = await runBin(['call', 'ping', '--topic', 'nobody-serves-this', ...extra], { env });
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toEqual([
      `tidings call: ${said}: no server in another process can answer a call; pass --url or set $TIDINGS_TRANSPORT_URL to a broker, e.g. rabbit://guest:guest@127.0.0.1:5672/`,
    ]);
    expect(r.stdout).toBe('');
  });
});

describe('URL schemes no driver is registered for: exit 2 and one line on stderr', () => {
  const commands: Array<[string, string[]]> = [
    ['call', ['call', 'ping', '--topic', 't']],
    ['cast', ['cast', 'ping', '--topic', 't']],
    ['notify', ['notify', 'a.b']],
    ['listen', ['listen']],
    ['serve', ['serve', '--topic', 't']],
  ];
  it.each(['nats://127.0.0.1:4222/', 'nats://u:s3cret-pw@127.0.0.1:4223/'])('%s', async (url) => {
    const results = await Promise.all(commands.map(([, args]) => runBin([...args, '--url', url])));
    results.forEach((r, i) => {
      expect(r.code, `${commands[i][0]}: ${r.stderr}`).toBe(2);
      expect(lines(r.stderr)).toHaveLength(1);
      expect(r.stderr).toMatch(new RegExp(`^tidings ${commands[i][0]}: Unknown transport URL scheme "nats" in nats://.*known schemes: memory, rabbit, kombu, amqp, amqps, redis, rediss, kafka`));
      expect(r.stderr).not.toContain('s3cret-pw');
      expect(r.stdout).toBe('');
    });
  });
});

describe('JSON arguments from stdin (-)', () => {
  it.each([
    ['cast args', ['cast', 'echo', '-', '--topic', 't'], '{"a": '],
    ['notify payload', ['notify', 'a.b', '-'], '[1, 2'],
  ])('%s: bad JSON on stdin is bad input (exit 2)', async (_name, args, input) => {
    const r = await runBin(args, { input });
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/^tidings (cast|notify): json-(args|payload) \(from stdin\) is not valid JSON/);
  });

  it('cast: JSON on stdin that is not an object is bad input (exit 2)', async () => {
    const r = await runBin(['cast', 'echo', '-', '--topic', 't'], { input: '[1, 2]' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^tidings cast: json-args \(from stdin\) must be a JSON object/);
  });

  it.each([
    ['cast', ['cast', 'echo', '-', '--topic', 't'], 'json-args'],
    ['notify', ['notify', 'a.b', '-'], 'json-payload'],
  ])('%s: empty stdin is bad input (exit 2) with a clear message', async (command, args, what) => {
    for (const input of [undefined, '', ' \n']) {
      const r = await runBin(args, { input });
      expect(r.code).toBe(2);
      expect(lines(r.stderr)).toEqual([`tidings ${command}: ${what} is "-" but stdin is empty: pipe the JSON in, e.g. echo '{"a": 1}' | tidings ...`]);
    }
  });

  it('valid JSON on stdin is sent (exit 0, only the memory:// warning)', async () => {
    const [cast, notify] = await Promise.all([
      runBin(['cast', 'echo', '-', '--topic', 't'], { input: '{"a": 1}\n' }),
      runBin(['notify', 'a.b', '-'], { input: '"a scalar payload"' }),
    ]);
    for (const r of [cast, notify]) {
      expect(r.code).toBe(0);
      expect(lines(r.stderr)).toHaveLength(1);
      expect(r.stderr).toMatch(IN_PROCESS_WARNING);
    }
  });
});

describe('timeouts: exit 3 and one line on stderr', () => {
  it('listen --count with too few notifications before --timeout exits 3', async () => {
    const r = await runBin(['listen', '--count', '1', '--timeout', '300']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^listening on memory:\/\/ topic=notifications/m);
    expect(r.stderr).toMatch(/^tidings listen: timeout: received 0 of 1 notifications within 300 ms$/m);
    expect(r.stdout).toBe('');
  });

  it('listen --timeout without --count ends normally', async () => {
    const r = await runBin(['listen', '--timeout', '200', '--priority', 'info,error']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('priorities=info,error');
  });
});

describe('successful one-shot commands on memory://', () => {
  it('cast and notify exit 0 once the (in-process) broker accepted the message, with one warning that no other process receives it', async () => {
    const [cast, notify] = await Promise.all([
      runBin(['cast', 'echo', '{"a":1}', '--topic', 't-cast']),
      runBin(['notify', 'compute.instance.create.end', '{"id":1}', '--priority', 'warn', '--publisher-id', 'test.host']),
    ]);
    expect([cast.code, cast.stdout]).toEqual([0, '']);
    expect(lines(cast.stderr)).toEqual([
      'warning: memory:// is in-process: nothing outside this process receives this cast; pass --url or set $TIDINGS_TRANSPORT_URL to a broker, e.g. rabbit://guest:guest@127.0.0.1:5672/',
    ]);
    expect([notify.code, notify.stdout]).toEqual([0, '']);
    expect(lines(notify.stderr)).toEqual([
      'warning: memory:// is in-process: nothing outside this process receives this notification; pass --url or set $TIDINGS_TRANSPORT_URL to a broker, e.g. rabbit://guest:guest@127.0.0.1:5672/',
    ]);
  });
});

describe('long-running commands stop gracefully on a signal', () => {
  it.each([
    ['serve', ['serve', '--topic', 't-signal', '--server', 'host-1'], 'serving on memory:// topic=t-signal server=host-1', 'SIGTERM'],
    ['listen', ['listen', '--topic', 't-signal', '--pool', 'p1'], 'listening on memory:// topic=t-signal', 'SIGINT'],
  ] as const)('%s warns once that memory:// is in-process, exits 0 after announcing itself and receiving a signal', async (name, args, ready, signal) => {
    const run = startBin(args);
    try {
      await waitFor(() => run.stderr().includes(ready), { timeoutMs: 15_000, message: `"${ready}" on stderr (got: ${run.stderr()})` });
      run.child.kill(signal);
      const r = await run.done;
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('');
      const warnings = lines(r.stderr).filter((l) => l.startsWith('warning:'));
      expect(warnings).toEqual([
        `warning: memory:// is in-process: nothing outside this process can reach this ${name === 'serve' ? 'server' : 'listener'}; pass --url or set $TIDINGS_TRANSPORT_URL to a broker, e.g. rabbit://guest:guest@127.0.0.1:5672/`,
      ]);
    } finally {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    }
  });
});

describe('a reader that closes stdout early ends the command quietly (exit 0)', () => {
  it('tidings demo | head -1: exit 0 and no stack trace', async () => {
    // The subshell reports the binary's own exit status, which a pipeline would hide behind head's.
    const run = startShell('(tidings demo; echo "tidings exited $?" >&2) | head -1');
    const r = await finished(run, 30_000, 'tidings demo | head -1');
    expect(r.stdout).toBe('tidings demo: RPC and notifications end to end on memory://\n');
    expect(lines(r.stderr)).toEqual(['tidings exited 0']);
  });

  it('demo with its stdout pipe destroyed after the first output: exit 0, nothing on stderr', async () => {
    const run = startBin(['demo'], {}, { pausedStdout: true });
    run.child.stdout!.once('data', () => run.child.stdout!.destroy());
    const r = await finished(run, 30_000, 'tidings demo');
    expect([r.code, r.signal, r.stderr]).toEqual([0, null, '']);
  });
});
