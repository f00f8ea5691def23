// Private RabbitMQ nodes (and clusters of them) for tests that must configure or break a broker:
// started from the rabbitmq-server Debian package beside the shared 127.0.0.1:5672 broker (never
// touched), each with its own node name, loopback ports, temp dir and config, no plugins.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'amqplib';
import { fileTail, freePorts, makeTempDir, pollUntil, removeTempDir, spawnTracked, type TrackedChild } from './child-processes.js';
import { runProcess } from './process.js';

/** Where the package puts its scripts; override with TIDINGS_RABBITMQ_SBIN. */
const SBIN = process.env.TIDINGS_RABBITMQ_SBIN ?? '/usr/lib/rabbitmq/bin';
const HOST = '127.0.0.1';
const INSTALL_HINT = 'Install it with `apt-get install -y rabbitmq-server` (RabbitMQ >= 3.10; its scripts in /usr/lib/rabbitmq/bin, or set TIDINGS_RABBITMQ_SBIN).';

/** Options of {@link startRabbitNode}. */
export interface RabbitNodeOptions {
  /** More rabbitmq.conf lines, e.g. `max_message_size = 1048576`. */
  config?: readonly string[];
  /** Wait this long for the node to accept an AMQP login. @default 90000 (a cold boot takes 5-20 s on a busy 2-core machine) */
  startTimeoutMs?: number;
}

/** A running node started by {@link startRabbitNode}. */
export interface RabbitNode {
  /** `tidings-<random>-<i>@localhost`. */
  readonly nodeName: string;
  readonly amqpPort: number;
  /** `amqp://guest:guest@127.0.0.1:<amqpPort>/` (guest may log in: the node listens on loopback only). */
  readonly url: string;
  /** The temp dir: config, Mnesia, logs, the Erlang cookie. Removed by stop(). */
  readonly dir: string;
  readonly running: boolean;
  /** `rabbitmqctl -n <node> ...args` with the node's cookie; resolves with stdout, rejects with the output on a non-zero exit. */
  ctl(args: readonly string[], timeoutMs?: number): Promise<string>;
  /** SIGTERM (SIGKILL after 5 s), wait for the exit, remove the dir. Idempotent; never throws. */
  stop(): Promise<void>;
  /** SIGKILL the Erlang VM and wait for its exit; keeps the dir for restart(). */
  kill(): Promise<void>;
  /** SIGTERM (a clean shutdown; SIGKILL after 30 s) and wait for the exit; keeps the dir for restart(). */
  halt(): Promise<void>;
  /** Stops it if running (SIGTERM) and boots it again with the same name, ports and data. */
  restart(): Promise<void>;
  /** The last `lines` lines of its output and log (for error messages). */
  logTail(lines?: number): string;
}

interface NodeSpec {
  nodeName: string;
  cookie: string;
  config: readonly string[];
  startTimeoutMs: number;
}

/** The environment of the server and of rabbitmqctl: none of the machine's own RabbitMQ settings. */
function nodeEnv(dir: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('RABBITMQ_') && !k.startsWith('ERL_') && k !== 'NOTIFY_SOCKET') env[k] = v;
  return {
    ...env,
    // The cookie is $HOME/.erlang.cookie for both the node and rabbitmqctl.
    HOME: join(dir, 'home'),
    // Not /etc/rabbitmq/rabbitmq-env.conf: it names the shared node (NODENAME=rabbit@localhost).
    RABBITMQ_CONF_ENV_FILE: join(dir, 'rabbitmq-env.conf'),
    ERL_EPMD_ADDRESS: HOST,
    ...extra,
  };
}

/**
 * `rabbitmqctl -n <nodeName> ...args` for the node started in `dir` (its cookie is there), from any
 * process: a bench's child that only knows the node's name and dir.
 */
export async function rabbitNodeCtl(nodeName: string, dir: string, args: readonly string[], timeoutMs = 60_000): Promise<string> {
  // Its own distribution port: the default range (35672-35682) is shared with every other rabbitmqctl.
  const [ctlPort] = await freePorts(1);
  const env = nodeEnv(dir, { RABBITMQ_CTL_DIST_PORT_MIN: String(ctlPort), RABBITMQ_CTL_DIST_PORT_MAX: String(ctlPort) });
  const r = await runProcess(join(SBIN, 'rabbitmqctl'), ['-n', nodeName, ...args], { env, timeoutMs });
  if (r.code !== 0) throw new Error(`rabbitmqctl -n ${nodeName} ${args.join(' ')} exited ${r.code ?? r.signal}: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}

class ManagedRabbitNode implements RabbitNode {
  private proc: TrackedChild | undefined;
  private removed = false;
  private readonly stdioFile: string;
  private readonly logFile: string;

  constructor(
    readonly dir: string,
    readonly amqpPort: number,
    private readonly distPort: number,
    private readonly spec: NodeSpec,
  ) {
    this.stdioFile = join(dir, 'stdio.log');
    this.logFile = join(dir, 'log', `${spec.nodeName}.log`);
    const home = join(dir, 'home');
    mkdirSync(home);
    writeFileSync(join(home, '.erlang.cookie'), spec.cookie);
    chmodSync(join(home, '.erlang.cookie'), 0o600);
    writeFileSync(join(dir, 'rabbitmq-env.conf'), '');
    writeFileSync(join(dir, 'enabled_plugins'), '[].\n');
    writeFileSync(
      join(dir, 'rabbitmq.conf'),
      [
        `listeners.tcp.local = ${HOST}:${amqpPort}`,
        // Small and never blocked by a full /tmp: a test that wants an alarm sets its own limits.
        'vm_memory_high_watermark.absolute = 256MB',
        'disk_free_limit.absolute = 1MB',
        ...spec.config,
        '',
      ].join('\n'),
    );
  }

  get nodeName(): string {
    return this.spec.nodeName;
  }

  get url(): string {
    return `amqp://guest:guest@${HOST}:${this.amqpPort}/`;
  }

  get running(): boolean {
    return !!this.proc?.running;
  }

  logTail(lines = 30): string {
    return [fileTail(this.stdioFile, lines), fileTail(this.logFile, lines)].filter(Boolean).join('\n');
  }

  /** The first error lines (why it failed; a crash report buries them) and the last lines of its output. */
  private failureLog(): string {
    const all = this.logTail(2000).split('\n');
    const errors = all.filter((line) => /error|failed/i.test(line)).slice(0, 12);
    return [...errors, '...', ...all.slice(-15)].join('\n');
  }

  ctl(args: readonly string[], timeoutMs = 60_000): Promise<string> {
    return rabbitNodeCtl(this.nodeName, this.dir, args, timeoutMs);
  }

  /** Boots the node and waits for an AMQP login; on failure the VM is killed and the error carries the log tail. */
  async spawnAndWait(): Promise<void> {
    const d = this.dir;
    const env = nodeEnv(d, {
      RABBITMQ_NODENAME: this.nodeName,
      RABBITMQ_NODE_IP_ADDRESS: HOST,
      RABBITMQ_NODE_PORT: String(this.amqpPort),
      RABBITMQ_DIST_PORT: String(this.distPort),
      RABBITMQ_CONFIG_FILE: join(d, 'rabbitmq.conf'),
      RABBITMQ_ADVANCED_CONFIG_FILE: join(d, 'advanced.config'),
      RABBITMQ_ENABLED_PLUGINS_FILE: join(d, 'enabled_plugins'),
      RABBITMQ_MNESIA_BASE: join(d, 'mnesia'),
      RABBITMQ_LOG_BASE: join(d, 'log'),
      RABBITMQ_PID_FILE: join(d, 'rabbitmq.pid'),
      // Distribution on loopback only, as the shared node (its rabbitmq-env.conf sets the same).
      RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: `-kernel inet_dist_use_interface {127,0,0,1}`,
      // Makes the script exec the VM instead of running it in the background behind a shell
      // that forwards signals: the child is the VM, so kill() is a real SIGKILL of the node.
      RUNNING_UNDER_SYSTEMD: 'true',
    });
    // The script itself, not /usr/sbin/rabbitmq-server: run as root that wrapper su's to the
    // rabbitmq user, who cannot write this dir.
    const proc = spawnTracked(join(SBIN, 'rabbitmq-server'), [], { cwd: d, stdioFile: this.stdioFile, env });
    this.proc = proc;
    try {
      await pollUntil(`RabbitMQ node ${this.nodeName} accepting an AMQP login on ${HOST}:${this.amqpPort}`, this.spec.startTimeoutMs, async () => {
        if (!proc.running) return true;
        const conn = await connect({ hostname: HOST, port: this.amqpPort, username: 'guest', password: 'guest' }, { timeout: 2000 });
        await conn.close();
        return true;
      }, 200);
      if (!proc.running) throw new Error('exited');
    } catch (err) {
      await proc.kill('SIGKILL');
      const why = proc.spawnError
        ? `could not run ${join(SBIN, 'rabbitmq-server')} (${proc.spawnError.message}). ${INSTALL_HINT}`
        : proc.exitInfo && proc.exitInfo !== 'signal SIGKILL'
          ? `the VM exited (${proc.exitInfo}) before accepting logins.`
          : `${(err as Error).message}.`;
      throw new Error(`Test RabbitMQ node ${this.nodeName} did not start: ${why}\nlog (${d}):\n${this.failureLog()}`, { cause: err });
    }
  }

  async kill(): Promise<void> {
    await this.proc?.kill('SIGKILL');
  }

  async halt(): Promise<void> {
    await this.proc?.terminate(30_000);
  }

  async stop(): Promise<void> {
    await this.proc?.terminate(5000);
    if (!this.removed) {
      this.removed = true;
      removeTempDir(this.dir);
    }
  }

  async restart(): Promise<void> {
    if (this.removed) throw new Error(`RabbitMQ node ${this.nodeName} was stopped (its dir is gone); start a new one`);
    await this.proc?.terminate(5000);
    await this.spawnAndWait();
  }
}

/** Picks ports and a dir for node `nodeName`, boots it, and retries with other ports when one was taken meanwhile. */
async function launch(spec: NodeSpec): Promise<ManagedRabbitNode> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const [amqpPort, distPort] = await freePorts(2);
    const node = new ManagedRabbitNode(makeTempDir(`rabbit-${amqpPort}`), amqpPort, distPort, spec);
    try {
      await node.spawnAndWait();
      return node;
    } catch (err) {
      lastError = err;
      const inUse = /eaddrinuse|address already in use/i.test(node.logTail(200));
      await node.stop();
      if (!inUse) throw err;
    }
  }
  throw lastError;
}

function nodeSpec(prefix: string, i: number, cookie: string, opts: RabbitNodeOptions, extraConfig: readonly string[] = []): NodeSpec {
  return { nodeName: `${prefix}-${i}@localhost`, cookie, config: [...(opts.config ?? []), ...extraConfig], startTimeoutMs: opts.startTimeoutMs ?? 90_000 };
}

/** Starts one private RabbitMQ node on free loopback ports; see {@link RabbitNodeOptions}. */
export function startRabbitNode(opts: RabbitNodeOptions = {}): Promise<RabbitNode> {
  const prefix = `tidings-${randomBytes(4).toString('hex')}`;
  return launch(nodeSpec(prefix, 1, randomBytes(16).toString('hex'), opts));
}

/** A cluster started by {@link startRabbitCluster}. */
export interface RabbitCluster {
  readonly nodes: readonly RabbitNode[];
  /** One URL per node, in node order. */
  readonly urls: readonly string[];
  /** The running nodes as `rabbitmqctl cluster_status` on `via` (default the first running node) lists them. */
  runningNodes(via?: RabbitNode): Promise<string[]>;
  /** Stops every node (in parallel) and removes their dirs. Never throws. */
  stop(): Promise<void>;
}

/**
 * Starts `n` nodes that form one cluster: the first, then the others at once, which join it at
 * their first boot through classic-config peer discovery (what `rabbitmqctl stop_app;
 * join_cluster; start_app` would do, without booting twice and three CLI round trips of seconds
 * each per node). The first is up before the others look for it. Once in CI under load the first
 * node never accepted a login, its log stopped after "Successfully synced tables from a peer";
 * the likely cause (not reproduced) is a node joining while the first still created its tables
 * in schema transactions.
 * Resolves once the first node lists all `n` as running; on failure every node started is stopped.
 */
export async function startRabbitCluster(n: number, opts: RabbitNodeOptions = {}): Promise<RabbitCluster> {
  if (!Number.isInteger(n) || n < 1) throw new Error(`startRabbitCluster: n must be a positive integer, got ${n}`);
  const prefix = `tidings-${randomBytes(4).toString('hex')}`;
  const cookie = randomBytes(16).toString('hex');
  const first = nodeSpec(prefix, 1, cookie, opts);
  // The others keep trying to reach the first (every second, for as long as a node may take to
  // boot) instead of forming clusters of their own.
  const joinFirst = [
    'cluster_formation.peer_discovery_backend = classic_config',
    `cluster_formation.classic_config.nodes.1 = ${first.nodeName}`,
    'cluster_formation.discovery_retry_interval = 1000',
    `cluster_formation.discovery_retry_limit = ${Math.ceil(first.startTimeoutMs / 1000)}`,
  ];
  const nodes: RabbitNode[] = [];
  const cluster: RabbitCluster = {
    nodes,
    get urls() {
      return nodes.map((node) => node.url);
    },
    async runningNodes(via) {
      const node = via ?? nodes.find((x) => x.running);
      if (!node) throw new Error('no node of the cluster is running');
      const status = JSON.parse(await node.ctl(['cluster_status', '--formatter', 'json'])) as { running_nodes?: string[] };
      return status.running_nodes ?? [];
    },
    async stop() {
      await Promise.all(nodes.map((node) => node.stop().catch(() => undefined)));
    },
  };
  try {
    nodes.push(await launch(first));
    const started = await Promise.allSettled(Array.from({ length: n - 1 }, (_, i) => launch(nodeSpec(prefix, i + 2, cookie, opts, joinFirst))));
    for (const r of started) if (r.status === 'fulfilled') nodes.push(r.value);
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const want = nodes.map((node) => node.nodeName).sort();
    let seen: string[] = [];
    await pollUntil(`RabbitMQ cluster ${prefix}-* with ${n} running nodes`, 30_000, async () => {
      seen = (await cluster.runningNodes(nodes[0])).sort();
      return JSON.stringify(seen) === JSON.stringify(want);
    }, 500).catch((err: Error) => {
      throw new Error(`${err.message}; ${nodes[0].nodeName} last listed ${JSON.stringify(seen)}\nlogs:\n${nodes.map((node) => node.logTail(10)).join('\n')}`, { cause: err });
    });
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
