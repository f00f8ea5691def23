import { describe, it, expect } from 'vitest';
import { DEFAULTS, resolveOptions } from '../../../../src/drivers/amqp/options.js';
import { InvalidArgument, InvalidTransportURL } from '../../../../src/core/errors.js';
import { TransportURL } from '../../../../src/core/transport-url.js';

const parse = (url: string, opts: Record<string, unknown> = {}) => resolveOptions(TransportURL.parse(url), opts);

describe('amqp options', () => {
  it('has oslo 14 defaults', () => {
    expect(Object.isFrozen(DEFAULTS)).toBe(true);
    const o = parse('rabbit://');
    expect(o).toMatchObject({
      durableQueues: false,
      autoDelete: false,
      haQueues: false,
      quorumQueue: false,
      transientQueuesTtl: 1_800_000,
      heartbeatTimeout: 60_000,
      retryInterval: 1000,
      retryBackoff: 2000,
      intervalMax: 30_000,
      reconnectDelay: 1000,
      failoverStrategy: 'round-robin',
      missingConsumerRetryTimeout: 60_000,
      dedupWindow: 4096,
      ssl: false,
      directMandatoryFlag: true,
      maxMessageBytes: 16 * 1024 * 1024,
    });
    // Unset (not oslo's 0): a listener then takes the façade's prefetch hint; 0 given stays unlimited.
    expect(o.prefetchCount).toBeUndefined();
    expect(parse('rabbit://h/?rabbit_qos_prefetch_count=0').prefetchCount).toBe(0);
  });

  it('defaults to guest:guest@localhost:5672 and vhost / without hosts', () => {
    const o = parse('rabbit://');
    expect(o.hosts).toEqual([{ hostname: 'localhost', port: 5672, username: 'guest' }]);
    expect(o.hosts[0].password).toBe('guest');
    expect(o.vhost).toBe('/');
  });

  it('maps vhosts as oslo: "/" and "" are the default vhost, "//" is "/"', () => {
    expect(parse('rabbit://h:5672/').vhost).toBe('/');
    expect(parse('rabbit://h:5672//').vhost).toBe('/');
    expect(parse('rabbit://h:5672/prod').vhost).toBe('prod');
    expect(parse('rabbit://h:5672/a%2Fb').vhost).toBe('a/b');
  });

  it('keeps several hosts with their own credentials and default ports', () => {
    const o = parse('rabbit://u1:p1@h1:5673,u2:p2@h2/');
    expect(o.hosts.map((h) => [h.hostname, h.port, h.username, h.password])).toEqual([
      ['h1', 5673, 'u1', 'p1'],
      ['h2', 5672, 'u2', 'p2'],
    ]);
  });

  it('maps oslo query names onto options (seconds become ms)', () => {
    const o = parse(
      'rabbit://h/?heartbeat_timeout_threshold=30&rabbit_qos_prefetch_count=10&amqp_durable_queues=true&rabbit_quorum_queue=true' +
        '&rabbit_transient_queues_ttl=60&kombu_failover_strategy=shuffle&ssl_ca_file=/ca.pem&ssl_cert_file=/c.pem&ssl_key_file=/k.pem' +
        '&rabbit_retry_interval=2&rabbit_retry_backoff=0&rabbit_interval_max=10&kombu_reconnect_delay=0.5&rabbit_quroum_max_memory_length=5',
    );
    expect(o).toMatchObject({
      heartbeatTimeout: 30_000,
      prefetchCount: 10,
      durableQueues: true,
      quorumQueue: true,
      transientQueuesTtl: 60_000,
      failoverStrategy: 'shuffle',
      sslCaFile: '/ca.pem',
      sslCertFile: '/c.pem',
      sslKeyFile: '/k.pem',
      retryInterval: 2000,
      retryBackoff: 0,
      intervalMax: 10_000,
      reconnectDelay: 500,
      quorumMaxMemoryLength: 5,
    });
  });

  it('lets driverOptions override the URL query', () => {
    const o = parse('rabbit://h/?rabbit_qos_prefetch_count=10', { prefetchCount: 3, dedupWindow: 100 });
    expect(o.prefetchCount).toBe(3);
    expect(o.dedupWindow).toBe(100);
  });

  it('amqps:// implies TLS and port 5671', () => {
    const o = parse('amqps://h/');
    expect(o.ssl).toBe(true);
    expect(o.hosts[0].port).toBe(5671);
  });

  it('accepts valid oslo names that have no effect here', () => {
    expect(() => parse('rabbit://h/?heartbeat_rate=3&rpc_conn_pool_size=30')).not.toThrow();
  });

  it('fails on an unknown query key with InvalidTransportURL naming the key', () => {
    expect(() => parse('rabbit://h/?no_such_option=1')).toThrow(InvalidTransportURL);
    expect(() => parse('rabbit://h/?no_such_option=1')).toThrow(/no_such_option/);
  });

  it('fails on bad values naming the field, expected and received', () => {
    const err = (() => {
      try {
        parse('rabbit://h/?amqp_durable_queues=maybe');
      } catch (e) {
        return e;
      }
    })() as InvalidArgument;
    expect(err).toBeInstanceOf(InvalidArgument);
    expect(err.field).toBe('amqp_durable_queues');
    expect(err.message).toMatch(/boolean/);
    expect(err.message).toMatch(/maybe/);
    expect(() => parse('rabbit://h/?rabbit_qos_prefetch_count=-1')).toThrow(InvalidArgument);
    expect(() => parse('rabbit://h/?kombu_failover_strategy=random')).toThrow(/round-robin/);
    expect(() => parse('rabbit://h/', { prefetchCount: 1.5 })).toThrow(/driverOptions.prefetchCount/);
    expect(() => parse('rabbit://h/', { heartbeatTimeout: '60' })).toThrow(InvalidArgument);
    expect(() => parse('rabbit://h/', { bogus: 1 })).toThrow(/driverOptions.bogus/);
  });

  it('refuses ha and quorum queues together, as oslo does', () => {
    expect(() => parse('rabbit://h/?rabbit_ha_queues=true&rabbit_quorum_queue=true')).toThrow(InvalidArgument);
  });

  it('rabbit_stream_fanout needs rabbit_transient_quorum_queue and a prefetch, as oslo: InvalidArgument naming both options', () => {
    expect(parse('rabbit://h/?rabbit_stream_fanout=true&rabbit_transient_quorum_queue=true')).toMatchObject({ streamFanout: true, transientQuorumQueue: true });
    expect(parse('rabbit://h/?rabbit_stream_fanout=true&rabbit_transient_quorum_queue=true&rabbit_qos_prefetch_count=10').prefetchCount).toBe(10);
    expect(() => parse('rabbit://h/?rabbit_stream_fanout=true')).toThrow(InvalidArgument);
    expect(() => parse('rabbit://h/?rabbit_stream_fanout=true')).toThrow(/streamFanout.*rabbit_stream_fanout needs rabbit_transient_quorum_queue=true/);
    expect(() => parse('rabbit://h/', { streamFanout: true })).toThrow(/transientQuorumQueue/);
    expect(() => parse('rabbit://h/?rabbit_stream_fanout=true&rabbit_transient_quorum_queue=true&rabbit_qos_prefetch_count=0')).toThrow(InvalidArgument);
    expect(() => parse('rabbit://h/', { streamFanout: true, transientQuorumQueue: true, prefetchCount: 0 })).toThrow(/prefetchCount.*streamFanout.*rabbit_stream_fanout needs rabbit_qos_prefetch_count > 0/);
  });

  it('refuses auto-delete quorum queues at once (RabbitMQ would refuse the first declare)', () => {
    expect(() => parse('rabbit://h/?amqp_auto_delete=true&rabbit_quorum_queue=true')).toThrow(InvalidArgument);
    expect(() => parse('rabbit://h/', { autoDelete: true, quorumQueue: true })).toThrow(/not combined with autoDelete/);
  });

  it("reads oslo 14's quorum options under oslo's spelling and the corrected one; both given must agree", () => {
    const oslo = parse('rabbit://h/?rabbit_quorum_queue=true&rabbit_quorum_delivery_limit=3&rabbit_quroum_max_memory_length=10&rabbit_quroum_max_memory_bytes=4096');
    expect(oslo).toMatchObject({ quorumQueue: true, quorumDeliveryLimit: 3, quorumMaxMemoryLength: 10, quorumMaxMemoryBytes: 4096 });
    const corrected = parse('rabbit://h/?rabbit_quorum_max_memory_length=10&rabbit_quorum_max_memory_bytes=4096');
    expect(corrected).toMatchObject({ quorumMaxMemoryLength: 10, quorumMaxMemoryBytes: 4096 });
    expect(parse('rabbit://h/?rabbit_quroum_max_memory_length=10&rabbit_quorum_max_memory_length=10').quorumMaxMemoryLength).toBe(10);
    for (const [a, b] of [
      ['rabbit_quroum_max_memory_length', 'rabbit_quorum_max_memory_length'],
      ['rabbit_quorum_max_memory_bytes', 'rabbit_quroum_max_memory_bytes'],
    ]) {
      const url = `rabbit://user:s3cr3t@h/?${a}=10&${b}=20`;
      expect(() => parse(url)).toThrow(InvalidTransportURL);
      expect(() => parse(url)).toThrow(new RegExp(`"${a}" and "${b}", two names of one option, to different values`));
      expect(() => parse(url)).not.toThrow(/s3cr3t/);
    }
  });

  it('keeps passwords out of JSON and inspection of the options', async () => {
    const o = parse('rabbit://user:s3cr3t@h/');
    expect(o.hosts[0].password).toBe('s3cr3t');
    expect(JSON.stringify(o)).not.toContain('s3cr3t');
    const { inspect } = await import('node:util');
    expect(inspect(o, { depth: 5 })).not.toContain('s3cr3t');
  });

  it('never puts a password in an error message', () => {
    try {
      parse('rabbit://user:s3cr3t@h/?bogus=1');
      expect.unreachable();
    } catch (e) {
      expect(String((e as Error).message)).not.toContain('s3cr3t');
    }
  });
});
