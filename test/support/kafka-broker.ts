// A Kafka-protocol broker for tests: librdkafka's mock cluster (kafka-mock/mock-cluster.c,
// compiled once per source hash), or the real cluster named by KAFKA_BROKERS=host:port,...
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../../src/testing/wait.js';

const SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'kafka-mock', 'mock-cluster.c');
const HEADER = '/usr/include/librdkafka/rdkafka_mock.h';
const INSTALL_HINT = 'Install them with `apt-get install -y librdkafka-dev gcc libc6-dev` (Debian 12: librdkafka 2.0.2).';

/** A topic the broker creates before the first client connects. */
/** Query options that keep group joins and rebalances short on the mock (it waits about sessionTimeout - 1 s). */
export const SHORT_GROUP_QUERY = 'session_timeout_ms=6000&heartbeat_interval_ms=500&rebalance_timeout_ms=10000&kafka_consumer_timeout=0.2&commit_interval_ms=50';

/** RPC fetch wait for calls on the mock (`rpc_max_wait_ms`): it answers an empty fetch only after the whole wait. */
export const MOCK_RPC_MAX_WAIT_MS = 20;

export interface KafkaTopicSpec {
  name: string;
  /** @default 1 */
  partitions?: number;
}

export interface StartKafkaMockOptions {
  /** Number of brokers (ids 1..N). @default 3 */
  brokers?: number;
  /** Topics created at start (and again on restart); others are auto-created with 4 partitions on first produce. */
  topics?: readonly KafkaTopicSpec[];
  /** Reject if the mock has not printed its bootstrap string within this many ms. @default 15000 */
  startTimeoutMs?: number;
  /** Start the mock even when KAFKA_BROKERS names a real cluster (for a test that freezes or kills its own broker). @default false */
  alwaysMock?: boolean;
  /** Lead each new topic's partitions round-robin over the brokers, as Kafka does, instead of the mock's random leaders (`--spread-leaders`; for the bench). @default false */
  spreadLeaders?: boolean;
}

export interface KafkaTestBroker {
  /** `127.0.0.1:port` per broker, broker 1 first. */
  readonly brokers: string[];
  /** `kafka://h1:p1,h2:p2,...` for getNotificationTransport / getRpcTransport. */
  readonly url: string;
  /** True when KAFKA_BROKERS named a real cluster: stop() is a no-op, kill/restart/brokerDown throw. */
  readonly external: boolean;
  /** SIGTERM and wait for exit (SIGKILL past 5 s). Idempotent. */
  stop(): Promise<void>;
  /** SIGKILL and wait for exit: every connection drops at once, all data is gone. */
  kill(): Promise<void>;
  /**
   * Stops the process if running and starts a new one on the same ports with the same
   * pre-created topics. The mock keeps everything in memory: messages, offsets and groups are
   * gone after a restart.
   */
  restart(): Promise<void>;
  /** Creates a topic now (the mock: at once; a real cluster: through the admin API). Not kept across restart(). */
  createTopic(topic: KafkaTopicSpec): Promise<void>;
  /** Disconnects broker `id` (-1: all) and refuses new connections; unlike kill(), data is kept. */
  brokerDown(id: number): Promise<void>;
  /** Lets broker `id` (-1: all) accept connections again. */
  brokerUp(id: number): Promise<void>;
  /**
   * Answers Metadata for `topic` (created if missing) with Kafka error `code` from now on (0
   * clears it): a producer never finds its partitions, other topics are unaffected. E.g. 3,
   * UNKNOWN_TOPIC_OR_PARTITION, a topic a broker without auto-creation does not have.
   */
  topicError(topic: string, code: number): Promise<void>;
  /** SIGSTOP, resolved once every thread of the process is stopped: connections stay open and take bytes, nothing is answered. */
  freeze(): Promise<void>;
  /** SIGCONT after freeze(): the brokers answer again, with what they kept. */
  thaw(): Promise<void>;
}

/** Where KAFKA_BROKERS points the tests, or undefined for the mock. */
export function externalKafkaBrokers(): string[] | undefined {
  const env = process.env.KAFKA_BROKERS?.trim();
  if (!env) return undefined;
  return env
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
}

function kafkaUrl(brokers: readonly string[]): string {
  return `kafka://${brokers.join(',')}`;
}

let compiled: string | undefined;

/**
 * The launcher binary, compiled on first use into os.tmpdir() under the source's hash (and the
 * librdkafka header's, so a library upgrade recompiles). Concurrent test workers may compile at
 * once: each writes its own temp file and renames it into place, which is atomic.
 */
export function kafkaMockBinary(): string {
  if (compiled) return compiled;
  if (!existsSync(HEADER)) {
    throw new Error(`The Kafka test broker needs librdkafka's mock cluster header ${HEADER}, which is missing. ${INSTALL_HINT}`);
  }
  const hash = createHash('sha256').update(readFileSync(SOURCE)).update(readFileSync(HEADER)).digest('hex').slice(0, 16);
  const dir = join(tmpdir(), 'tidings-kafka-mock');
  const bin = join(dir, `tidings-kafka-mock-${hash}`);
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    const tmp = `${bin}.${process.pid}.tmp`;
    const r = spawnSync('gcc', ['-O2', '-o', tmp, SOURCE, '-lrdkafka'], { encoding: 'utf8', timeout: 60_000 });
    if (r.error || r.status !== 0) {
      rmSync(tmp, { force: true });
      const why = r.error ? (r.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'gcc is not installed' : r.error.message : r.stderr.trim();
      throw new Error(`Could not compile the Kafka test broker (${SOURCE}): ${why}. ${INSTALL_HINT}`);
    }
    renameSync(tmp, bin);
  }
  compiled = bin;
  return bin;
}

const live = new Set<ChildProcessWithoutNullStreams>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A mock also exits when its stdin closes (this process gone, even by SIGKILL); this hook
  // only makes the normal-exit case immediate.
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

/** One running mock process: the first stdout line is the bootstrap string, later ones answer commands. */
class MockProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<void>;
  private stderr = '';
  private lines: string[] = [];
  private waiters: Array<() => void> = [];
  private done = false;
  private commands: Promise<unknown> = Promise.resolve();

  constructor(bin: string, args: string[]) {
    this.child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    live.add(this.child);
    this.child.stdin.on('error', () => {});
    let buf = '';
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        this.lines.push(buf.slice(0, nl).trim());
        buf = buf.slice(nl + 1);
      }
      this.wake();
    });
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-4000);
    });
    this.exited = new Promise((resolve) => {
      const finish = () => {
        this.done = true;
        live.delete(this.child);
        this.wake();
        resolve();
      };
      this.child.once('exit', finish);
      this.child.once('error', (err) => {
        this.stderr += String(err);
        finish();
      });
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** The next stdout line, or a rejection naming stderr if the process exits or the deadline passes. */
  async nextLine(timeoutMs: number, what: string): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.lines.shift();
      if (line !== undefined) return line;
      if (this.done) throw new Error(`Kafka test broker exited (code ${this.child.exitCode}, signal ${this.child.signalCode}) before ${what}; stderr: ${this.stderr.trim() || '(empty)'}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`Kafka test broker: no ${what} within ${timeoutMs} ms; stderr: ${this.stderr.trim() || '(empty)'}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Runs one stdin command; commands are serialised so each caller reads its own answer line. */
  command(cmd: string): Promise<void> {
    const run = async () => {
      this.child.stdin.write(`${cmd}\n`);
      const answer = await this.nextLine(5000, `an answer to '${cmd}'`);
      if (!answer.startsWith('ok ')) throw new Error(`Kafka test broker: '${cmd}' failed: ${answer}`);
    };
    const result = this.commands.then(run, run);
    this.commands = result.catch(() => undefined);
    return result;
  }

  get running(): boolean {
    return !this.done;
  }

  /** SIGSTOP; it reaches the threads one by one, so this waits until /proc shows every one stopped (until then one may still answer). */
  async freeze(): Promise<void> {
    this.child.kill('SIGSTOP');
    const tasks = `/proc/${this.child.pid}/task`;
    const stopped = () => readdirSync(tasks).every((tid) => /^State:\s+T/m.test(readFileSync(`${tasks}/${tid}/status`, 'utf8')));
    await waitFor(stopped, { timeoutMs: 5000, message: 'every thread of the Kafka test broker stopped' });
  }

  thaw(): void {
    this.child.kill('SIGCONT');
  }

  async terminate(signal: NodeJS.Signals): Promise<void> {
    if (this.done) return;
    // A frozen process would hold SIGTERM until continued.
    this.child.kill('SIGCONT');
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * Starts librdkafka's mock cluster with `brokers` brokers on loopback (or returns the cluster in
 * KAFKA_BROKERS). Fails, never skips, when librdkafka-dev or gcc is missing.
 */
export async function startKafkaMock(options: StartKafkaMockOptions = {}): Promise<KafkaTestBroker> {
  const brokerCount = options.brokers ?? 3;
  const topics = options.topics ?? [];
  const external = options.alwaysMock ? undefined : externalKafkaBrokers();
  if (external) return externalBroker(external, topics);

  const bin = kafkaMockBinary();
  installExitHook();
  const topicArgs = topics.flatMap((t) => ['--topic', `${t.name}:${t.partitions ?? 1}`]);
  const startTimeoutMs = options.startTimeoutMs ?? 15_000;

  const launch = async (ports?: readonly number[]): Promise<{ proc: MockProcess; brokers: string[] }> => {
    const args = ['--brokers', String(brokerCount), ...topicArgs, ...(options.spreadLeaders ? ['--spread-leaders'] : []), ...(ports ? ['--ports', ports.join(',')] : [])];
    const proc = new MockProcess(bin, args);
    try {
      const line = await proc.nextLine(startTimeoutMs, 'its bootstrap string');
      const brokers = line.split(',').filter(Boolean);
      if (brokers.length !== brokerCount) throw new Error(`Kafka test broker printed '${line}', expected ${brokerCount} brokers`);
      return { proc, brokers };
    } catch (err) {
      await proc.terminate('SIGKILL');
      throw err;
    }
  };

  const first = await launch();
  const brokers = first.brokers;
  let proc = first.proc;
  const ports = brokers.map((b) => Number(b.slice(b.lastIndexOf(':') + 1)));

  return {
    brokers,
    url: kafkaUrl(brokers),
    external: false,
    stop: () => proc.terminate('SIGTERM'),
    kill: () => proc.terminate('SIGKILL'),
    async restart() {
      await proc.terminate('SIGTERM');
      // The old listeners are closed, but another process may grab a freed port in between;
      // retry briefly before failing with the launcher's own message.
      let lastError: unknown;
      for (let attempt = 0; attempt < 5; attempt++) {
        try {
          ({ proc } = await launch(ports));
          return;
        } catch (err) {
          lastError = err;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
      throw lastError;
    },
    createTopic: (t) => proc.command(`topic ${t.name}:${t.partitions ?? 1}`),
    brokerDown: (id) => proc.command(`down ${id}`),
    brokerUp: (id) => proc.command(`up ${id}`),
    topicError: (topic, code) => proc.command(`topic-error ${topic} ${code}`),
    freeze: () => proc.freeze(),
    thaw: async () => proc.thaw(),
  };
}

/** A real cluster creates topics through the admin API (the KAFKA_BROKERS path, and bench:scale with --url). */
export async function createTopicsWithAdmin(brokers: string[], topics: readonly KafkaTopicSpec[]): Promise<void> {
  if (topics.length === 0) return;
  const { Kafka, logLevel } = await import('kafkajs');
  const admin = new Kafka({ brokers, clientId: 'tidings-test-support', logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.createTopics({ waitForLeaders: true, topics: topics.map((t) => ({ topic: t.name, numPartitions: t.partitions ?? 1 })) });
  } finally {
    await admin.disconnect();
  }
}

async function externalBroker(brokers: string[], topics: readonly KafkaTopicSpec[]): Promise<KafkaTestBroker> {
  await createTopicsWithAdmin(brokers, topics);
  const unsupported = (what: string) => () => Promise.reject(new Error(`${what} is only possible on the mock broker, not on KAFKA_BROKERS=${brokers.join(',')}`));
  return {
    brokers,
    url: kafkaUrl(brokers),
    external: true,
    stop: () => Promise.resolve(),
    createTopic: (t) => createTopicsWithAdmin(brokers, [t]),
    kill: unsupported('kill()'),
    restart: unsupported('restart()'),
    brokerDown: unsupported('brokerDown()'),
    brokerUp: unsupported('brokerUp()'),
    topicError: unsupported('topicError()'),
    freeze: unsupported('freeze()'),
    thaw: unsupported('thaw()'),
  };
}
