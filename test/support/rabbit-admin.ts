// Direct RabbitMQ access for tests, bypassing tidings: sweeping what a run left (oslo declares
// topic and notification queues without auto-delete or expiry, and no driver should delete them
// on cleanup) and publishing raw bodies to inject malformed messages.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { connect } from 'amqplib';

const run = promisify(execFile);

/** Runs `rabbitmqctl <args>` and resolves with its stdout: the shared node's by default, a private node's `ctl`. */
export type RabbitCtl = (args: readonly string[]) => Promise<string>;

const sharedCtl: RabbitCtl = async (args) => (await run('rabbitmqctl', [...args], { timeout: 60_000 })).stdout;

/** Names of the queues (or exchanges) on vhost `/` that start with `prefix`, via rabbitmqctl. */
export async function listRabbitNames(kind: 'queues' | 'exchanges', prefix: string, ctl: RabbitCtl = sharedCtl): Promise<string[]> {
  const stdout = await ctl(['-q', `list_${kind}`, 'name']);
  return stdout
    .split('\n')
    .map((line) => line.trim())
    .filter((name) => name.startsWith(prefix));
}

/** A queue as `rabbitmqctl list_queues --formatter json` shows it; `arguments` as [name, type, value] triples. */
export interface RabbitQueueInfo {
  name: string;
  type: string;
  arguments: Array<[string, string, unknown]>;
  durable: boolean;
  auto_delete: boolean;
}

/** The queues on vhost `/` whose name `pick` accepts, by name, via rabbitmqctl. */
export async function listRabbitQueues(pick: (name: string) => boolean): Promise<Map<string, RabbitQueueInfo>> {
  const { stdout } = await run('rabbitmqctl', ['-q', 'list_queues', 'name', 'type', 'arguments', 'durable', 'auto_delete', '--formatter', 'json'], { timeout: 60_000 });
  return new Map((JSON.parse(stdout) as RabbitQueueInfo[]).filter((q) => pick(q.name)).map((q) => [q.name, q]));
}

/** The declare arguments of a queue as an object (`{}` for a missing queue). */
export const queueArgs = (q: RabbitQueueInfo | undefined): Record<string, unknown> => Object.fromEntries((q?.arguments ?? []).map(([k, , v]) => [k, v]));

/** Deletes every queue and exchange whose name starts with `prefix`; returns what it removed. */
export async function deleteRabbitObjectsWithPrefix(prefix: string, url = 'amqp://guest:guest@127.0.0.1:5672/', ctl: RabbitCtl = sharedCtl): Promise<{ queues: string[]; exchanges: string[] }> {
  if (prefix.length < 6) throw new Error(`refusing to sweep RabbitMQ with the short prefix ${JSON.stringify(prefix)}`);
  const queues = await listRabbitNames('queues', prefix, ctl);
  const exchanges = await listRabbitNames('exchanges', prefix, ctl);
  if (!queues.length && !exchanges.length) return { queues, exchanges };
  const conn = await connect(url);
  try {
    const ch = await conn.createChannel();
    for (const q of queues) await ch.deleteQueue(q);
    for (const x of exchanges) await ch.deleteExchange(x);
    await ch.close();
  } finally {
    await conn.close();
  }
  return { queues, exchanges };
}

/** Deletes the named queues (missing ones are fine: RabbitMQ answers delete-ok). */
export async function deleteRabbitQueues(queues: readonly string[], url = 'amqp://guest:guest@127.0.0.1:5672/'): Promise<void> {
  if (!queues.length) return;
  const conn = await connect(url);
  try {
    const ch = await conn.createChannel();
    for (const q of queues) await ch.deleteQueue(q);
    await ch.close();
  } finally {
    await conn.close();
  }
}

/** Publishes `body` as-is (content type JSON, like oslo) for tests that inject malformed messages; `headers` forges AMQP headers. */
export async function publishRawToRabbit(exchange: string, routingKey: string, body: string, url = 'amqp://guest:guest@127.0.0.1:5672/', headers?: Record<string, unknown>): Promise<void> {
  const conn = await connect(url);
  try {
    const ch = await conn.createConfirmChannel();
    ch.publish(exchange, routingKey, Buffer.from(body), { contentType: 'application/json', contentEncoding: 'utf-8', deliveryMode: 2, headers });
    await ch.waitForConfirms();
    await ch.close();
  } finally {
    await conn.close();
  }
}
