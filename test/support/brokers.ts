// Broker reachability for integration tests: fail loudly (never skip) naming the broker and how to start it.
import { connect } from 'node:net';

export const RABBIT_URL = process.env.TIDINGS_RABBIT_URL ?? 'rabbit://guest:guest@127.0.0.1:5672/';
export const REDIS_URL = process.env.TIDINGS_REDIS_URL ?? 'redis://127.0.0.1:6379/';

function probe(host: string, port: number, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Throws (failing the suite) when RabbitMQ does not answer on 127.0.0.1:5672. */
export async function requireRabbitMQ(): Promise<void> {
  if (!(await probe('127.0.0.1', 5672))) {
    throw new Error('RabbitMQ is not reachable on 127.0.0.1:5672. Start it with `rabbitmq-server -detached` (install: apt-get install -y rabbitmq-server).');
  }
}

/** Throws (failing the suite) when Redis does not answer on 127.0.0.1:6379. */
export async function requireRedis(): Promise<void> {
  if (!(await probe('127.0.0.1', 6379))) {
    throw new Error('Redis is not reachable on 127.0.0.1:6379. Start it with `redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no`.');
  }
}
