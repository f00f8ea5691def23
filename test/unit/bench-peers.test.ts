// The peers bench's table (bench/run-peers.ts): medians of the rounds, each row's ratio to tidings
// on the same broker, and the flags that choose sides and scenarios. No speed is asserted.
import { describe, expect, it } from 'vitest';
import { PEERS, defaultWarmup, formatPeersTable, main, medianOf, pick, type PeerRuns } from '../../bench/run-peers.js';

const peer = (name: string) => PEERS.find((p) => p.name === name)!;

describe('bench:peers table', () => {
  it('takes each side the median of its rounds and its ratio to tidings on the same broker; a failed round does not count', () => {
    const runs: PeerRuns = {
      'tidings-rabbit': { 'call-sequential': [{ opsPerSec: 1600 }, { opsPerSec: 1700 }, { opsPerSec: 1650 }], cast: [{ opsPerSec: 9000 }] },
      'nest-rmq': { 'call-sequential': [{ opsPerSec: 1800 }, { error: 'exited 1' }, { opsPerSec: 1600 }, { opsPerSec: 1750 }], cast: [{ error: 'exited 1' }] },
      'oslo-python': { 'call-sequential': [{ opsPerSec: 330 }] },
      'tidings-redis': { 'call-sequential': [{ opsPerSec: 3322 }] },
      'moleculer-redis': { 'call-sequential': [{ opsPerSec: 4061 }] },
    };
    expect(medianOf(runs['nest-rmq']['call-sequential'])).toBe(1750);
    expect(medianOf(runs['nest-rmq'].cast)).toBeUndefined();
    const lines = formatPeersTable(['tidings-rabbit', 'nest-rmq', 'oslo-python', 'tidings-redis', 'moleculer-redis'].map(peer), ['call-sequential', 'cast', 'notify-publish'], runs);
    expect(lines[0]).toBe('| side | broker | calls/s, sequential | casts/s | notifications published/s |');
    expect(lines[1]).toBe('| --- | --- | ---: | ---: | ---: |');
    expect(lines.slice(2)).toEqual([
      '| tidings, RabbitMQ | RabbitMQ | 1,650 (1.00) | 9,000 (1.00) | - |',
      // Every cast run failed: "failed"; NestJS has no notifications: "-".
      '| NestJS microservices, RMQ transport | RabbitMQ | 1,750 (1.06) | failed | - |',
      '| Python oslo.messaging, threading executor | RabbitMQ | 330 (0.20) | - | - |',
      '| tidings, Redis | Redis | 3,322 (1.00) | - | - |',
      // Redis rows are compared with tidings on Redis, not on RabbitMQ.
      '| Moleculer, Redis transporter | Redis | 4,061 (1.22) | - | - |',
    ]);
  });

  it('prints a median without a ratio when tidings on that broker did not run', () => {
    const lines = formatPeersTable([peer('moleculer-amqp')], ['call-concurrent'], { 'moleculer-amqp': { 'call-concurrent': [{ opsPerSec: 11243 }] } });
    expect(lines.at(-1)).toBe('| Moleculer, AMQP transporter (prefetch 64, noDelay) | RabbitMQ | 11,243 |');
  });

  it('refuses an unknown side or scenario, naming the known ones, before running anything', async () => {
    expect(pick('--peers', undefined, ['a', 'b'])).toEqual(['a', 'b']);
    expect(pick('--peers', 'b, a', ['a', 'b'])).toEqual(['b', 'a']);
    await expect(main(['--peers', 'tidings-rabbit,zeromq'], () => {})).rejects.toThrow(/--peers: unknown "zeromq"; known: tidings-rabbit, raw-oslo, raw-oslo-noconfirm, nest-rmq, moleculer-amqp, oslo-python, tidings-redis, raw-ioredis, nest-redis, moleculer-redis/);
    await expect(main(['--scenarios', 'call-sequential,warp'], () => {})).rejects.toThrow(/--scenarios: unknown "warp"; known: call-sequential, call-concurrent, cast, notify-publish, consume-plain/);
    await expect(main(['--rounds', '0'], () => {})).rejects.toThrow('--rounds must be a positive integer, received "0"');
  });

  it('warms every run up to steady state by default: 2,000 operations, a fifth of a shorter run', () => {
    expect(defaultWarmup(10_000)).toBe(2000);
    expect(defaultWarmup(50_000)).toBe(2000);
    expect(defaultWarmup(5000)).toBe(1000);
    expect(defaultWarmup(200)).toBe(40);
  });

  it('every side names a reference on its own broker, and the peers run only the scenarios they have', () => {
    for (const p of PEERS) {
      expect(peer(p.reference).broker, p.name).toBe(p.broker);
      expect(p.reference, p.name).toMatch(/^tidings-/);
    }
    expect(peer('nest-rmq').scenarios).toEqual(['call-sequential', 'call-concurrent', 'cast']);
    // raw-oslo without confirms: its own switch, on the scenarios where publishing is timed.
    const noConfirm = peer('raw-oslo-noconfirm');
    expect(noConfirm.scenarios).toEqual(['call-sequential', 'call-concurrent', 'cast', 'notify-publish']);
    expect(noConfirm.command('cast', 100, 10, { rabbit: 'rabbit://u:p@h:1/', redis: 'redis://h:2/' }).env).toEqual({ TIDINGS_TRANSPORT_URL: 'rabbit://u:p@h:1/', TIDINGS_BENCH_OSLO_NO_CONFIRMS: '1' });
    expect(peer('raw-oslo').command('cast', 100, 10, { rabbit: 'rabbit://u:p@h:1/', redis: 'redis://h:2/' }).env).toEqual({ TIDINGS_TRANSPORT_URL: 'rabbit://u:p@h:1/' });
    expect(peer('oslo-python').command('cast', 100, 10, { rabbit: 'rabbit://u:p@h:1/', redis: 'redis://h:2/' }).args).toEqual(['bench/peers/oslo_bench.py', '--scenario', 'cast', '--count', '100', '--warmup', '10', '--url', 'rabbit://u:p@h:1/']);
    // amqplib peers get the same broker as an amqp:// URL.
    expect(peer('moleculer-amqp').command('cast', 100, 10, { rabbit: 'rabbit://u:p@h:1/v', redis: 'redis://h:2/' }).env.PEERS_AMQP_URL).toBe('amqp://u:p@h:1/v');
  });
});
