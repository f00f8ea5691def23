// Throwaway Redis topologies for integration tests (standalone, Cluster, Sentinel), started from the
// redis-server binary on free loopback ports in temp dirs; never the shared 127.0.0.1:6379.
import { readFileSync, writeFileSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { keySlot } from '../../src/drivers/redis/topology.js';
import { fileTail, freePorts, makeTempDir, pollUntil as until, removeTempDir, spawnTracked, type TrackedChild } from './child-processes.js';
import { runProcess } from './process.js';

export { freePorts } from './child-processes.js';

/** The binaries; override with TIDINGS_REDIS_SERVER / TIDINGS_REDIS_CLI. */
export const REDIS_SERVER_BIN = process.env.TIDINGS_REDIS_SERVER ?? 'redis-server';
export const REDIS_CLI_BIN = process.env.TIDINGS_REDIS_CLI ?? 'redis-cli';
const INSTALL_HINT = 'Install it with `apt-get install -y redis-server redis-tools` (Redis >= 7: redis-server also runs Sentinel with --sentinel, redis-cli comes with redis-tools).';
const SHARED_PORT = 6379;
const HOST = '127.0.0.1';

// --- a minimal RESP2 client: readiness and admin commands with hard deadlines ------------------

/** A `-ERR ...` reply. */
export class RedisReplyError extends Error {}

/** A RESP2 reply. */
export type RespValue = string | number | null | RedisReplyError | RespValue[];

/** How to reach one server with {@link redisCommand}. */
export interface RespEndpoint {
  port: number;
  password?: string;
  username?: string;
  tls?: { ca: string; cert?: string; key?: string };
}

function encode(args: readonly (string | number)[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join('')}`;
}

/** Parses one reply at `pos`, or returns undefined when `buf` does not hold all of it yet. */
function parse(buf: Buffer, pos: number): { value: RespValue; next: number } | undefined {
  const eol = buf.indexOf('\r\n', pos);
  if (eol < 0) return undefined;
  const type = String.fromCharCode(buf[pos]);
  const line = buf.toString('utf8', pos + 1, eol);
  const after = eol + 2;
  switch (type) {
    case '+':
      return { value: line, next: after };
    case '-':
      return { value: new RedisReplyError(line), next: after };
    case ':':
      return { value: Number(line), next: after };
    case '$': {
      const len = Number(line);
      if (len < 0) return { value: null, next: after };
      if (buf.length < after + len + 2) return undefined;
      return { value: buf.toString('utf8', after, after + len), next: after + len + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return { value: null, next: after };
      const items: RespValue[] = [];
      let next = after;
      for (let i = 0; i < count; i++) {
        const item = parse(buf, next);
        if (!item) return undefined;
        items.push(item.value);
        next = item.next;
      }
      return { value: items, next };
    }
    default:
      throw new Error(`unexpected RESP type ${JSON.stringify(type)}`);
  }
}

/**
 * Sends commands on one fresh connection (AUTH first when the endpoint has a password) and
 * resolves with their replies in order, error replies included as {@link RedisReplyError} values.
 * Rejects when the connection fails or the replies do not arrive within `timeoutMs`.
 */
export function redisCommands(endpoint: RespEndpoint | number, commands: readonly (readonly (string | number)[])[], timeoutMs = 2000): Promise<RespValue[]> {
  const ep = typeof endpoint === 'number' ? { port: endpoint } : endpoint;
  if (ep.port === SHARED_PORT) return Promise.reject(new Error('redis-servers: refusing to talk to the shared 127.0.0.1:6379'));
  const all = ep.password !== undefined ? [ep.username ? ['AUTH', ep.username, ep.password] : ['AUTH', ep.password], ...commands] : [...commands];
  return new Promise((resolve, reject) => {
    let socket: Socket;
    if (ep.tls) {
      socket = tlsConnect({ host: HOST, port: ep.port, ca: readFileSync(ep.tls.ca), cert: ep.tls.cert ? readFileSync(ep.tls.cert) : undefined, key: ep.tls.key ? readFileSync(ep.tls.key) : undefined });
      socket.once('secureConnect', () => socket.write(all.map(encode).join('')));
    } else {
      socket = netConnect({ host: HOST, port: ep.port }, () => socket.write(all.map(encode).join('')));
    }
    let buf = Buffer.alloc(0);
    let pos = 0;
    const replies: RespValue[] = [];
    const finish = (err?: Error) => {
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(ep.password !== undefined ? replies.slice(1) : replies);
    };
    const timer = setTimeout(() => finish(new Error(`no reply from ${HOST}:${ep.port} within ${timeoutMs} ms`)), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      try {
        for (;;) {
          const r = parse(buf, pos);
          if (!r) break;
          replies.push(r.value);
          pos = r.next;
        }
      } catch (err) {
        finish(err as Error);
        return;
      }
      if (replies.length >= all.length) finish();
    });
    socket.once('error', (err) => finish(err));
    socket.once('close', () => finish(new Error(`${HOST}:${ep.port} closed the connection after ${replies.length} of ${all.length} replies`)));
  });
}

/** One command; rejects on an error reply. */
export async function redisCommand(endpoint: RespEndpoint | number, args: readonly (string | number)[], timeoutMs = 2000): Promise<RespValue> {
  const [reply] = await redisCommands(endpoint, [args], timeoutMs);
  if (reply instanceof RedisReplyError) throw reply;
  return reply;
}

/** `INFO <section>` as a field map. */
export async function redisInfo(endpoint: RespEndpoint | number, section: string): Promise<Record<string, string>> {
  const text = String(await redisCommand(endpoint, ['INFO', section]));
  return Object.fromEntries(text.split('\r\n').filter((l) => l.includes(':') && !l.startsWith('#')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)]));
}

// --- one redis-server process ------------------------------------------------------------------

/** Options of {@link startRedisServer}. */
export interface RedisServerOptions {
  /** Turn the append-only file on (kept across {@link RedisServer.restart}). @default false */
  appendonly?: boolean;
  /** `appendfsync` when `appendonly`. @default 'everysec' (Redis's own) */
  appendfsync?: 'always' | 'everysec' | 'no';
  /** `maxmemory`, e.g. `'2mb'`. @default unlimited */
  maxmemory?: string;
  /** `maxmemory-policy`, e.g. `'noeviction'`. @default Redis's own (noeviction) */
  maxmemoryPolicy?: string;
  /** `requirepass` (the default user's password). */
  password?: string;
  /** An ACL user with every permission, in addition to the default user. */
  user?: { name: string; password: string };
  /**
   * TLS only (the plain port is off): the server uses `serverCert`/`serverKey`, trusts `caCert`;
   * fields named as in `TlsMaterial` from test/support/tls.ts so its result can be passed as is.
   */
  tls?: { caCert: string; serverCert: string; serverKey: string; clientCert?: string; clientKey?: string; /** @default false */ authClients?: boolean };
  /** More `--name value` arguments, appended verbatim. */
  extraArgs?: readonly string[];
  /** Wait this long for PING to answer. @default 20000 */
  readyTimeoutMs?: number;
}

/** A running redis-server started by {@link startRedisServer}. */
export interface RedisServer {
  readonly port: number;
  /** `redis://[user:password@]127.0.0.1:port/` (`rediss://` with TLS). */
  readonly url: string;
  /** The current process id (a restart changes it); undefined while stopped. */
  readonly pid: number | undefined;
  /** The temp dir: data, AOF, `redis.log`, `stdio.log`. Removed by stop(). */
  readonly dir: string;
  readonly logFile: string;
  /** How {@link redisCommand} reaches it (password, TLS). */
  readonly endpoint: RespEndpoint;
  readonly running: boolean;
  /** SIGTERM (SIGKILL after 5 s), wait for the exit, remove the dir. Idempotent; never throws. */
  stop(): Promise<void>;
  /** Sends `signal` (default SIGKILL) and waits for the exit; keeps the dir for restart(). */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Stops it if running (SIGTERM) and starts it again on the same port and dir (AOF data kept). */
  restart(): Promise<void>;
  /** The last `lines` lines of its log (for error messages). */
  logTail(lines?: number): string;
}

interface LaunchSpec {
  /** The command line for `port`; `{dir}` and `{extra0}` are replaced by the temp dir and the extra port. */
  args: (port: number) => string[];
  endpoint: (port: number) => RespEndpoint;
  readyTimeoutMs: number;
  /** Extra ports the server binds (Cluster bus), picked with the main one. */
  extraPorts?: number;
}

class ManagedRedis implements RedisServer {
  private proc: TrackedChild | undefined;
  private removed = false;
  readonly logFile: string;
  private readonly stdioFile: string;

  constructor(
    readonly port: number,
    readonly dir: string,
    private readonly spec: LaunchSpec,
    private readonly scheme: string,
    private readonly auth: string,
  ) {
    this.logFile = join(dir, 'redis.log');
    this.stdioFile = join(dir, 'stdio.log');
  }

  get url(): string {
    return `${this.scheme}://${this.auth}${HOST}:${this.port}/`;
  }

  get endpoint(): RespEndpoint {
    return this.spec.endpoint(this.port);
  }

  get pid(): number | undefined {
    return this.proc?.running ? this.proc.pid : undefined;
  }

  get running(): boolean {
    return !!this.proc?.running;
  }

  logTail(lines = 30): string {
    return [fileTail(this.stdioFile, lines), fileTail(this.logFile, lines)].filter(Boolean).join('\n');
  }

  /** Spawns and waits for PING; on failure the process is killed and the error carries the log tail. */
  async spawnAndWait(): Promise<void> {
    const proc = spawnTracked(REDIS_SERVER_BIN, this.spec.args(this.port), { cwd: this.dir, stdioFile: this.stdioFile });
    this.proc = proc;
    try {
      const outcome = await until(`${REDIS_SERVER_BIN} on ${HOST}:${this.port} answering PING`, this.spec.readyTimeoutMs, async () => {
        if (!proc.running) return 'exited';
        // -LOADING (AOF replay) answers PING with an error: retried. The pid check makes sure the
        // answer is ours and not from a server that took the port between picking and binding.
        const [pong, info] = await redisCommands(this.endpoint, [['PING'], ['INFO', 'server']], 1000);
        if (pong !== 'PONG') return false;
        if (!String(info).includes(`process_id:${proc.pid}\r\n`)) throw new Error(`another process answers on ${HOST}:${this.port}`);
        return 'ready';
      });
      if (outcome === 'exited') throw new Error('exited');
    } catch (err) {
      await proc.kill('SIGKILL');
      const why = proc.spawnError
        ? `could not run \`${REDIS_SERVER_BIN}\` (${proc.spawnError.message}).`
        : proc.exitInfo && proc.exitInfo !== 'signal SIGKILL'
          ? `\`${REDIS_SERVER_BIN}\` exited (${proc.exitInfo}) before answering.`
          : `${(err as Error).message}.`;
      throw new Error(`Test Redis on ${HOST}:${this.port} did not start: ${why} ${INSTALL_HINT}\nlog (${this.dir}):\n${this.logTail()}`, { cause: err });
    }
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    await this.proc?.kill(signal);
  }

  async stop(): Promise<void> {
    await this.proc?.terminate();
    if (!this.removed) {
      this.removed = true;
      removeTempDir(this.dir);
    }
  }

  async restart(): Promise<void> {
    if (this.removed) throw new Error(`redis-server on ${HOST}:${this.port} was stopped (its dir is gone); start a new one`);
    await this.proc?.terminate();
    await this.spawnAndWait();
  }
}

/**
 * Starts a redis-server on fresh free loopback ports with its own temp dir, retrying with other
 * ports when one was taken between picking and binding.
 */
async function launch(prefix: string, spec: LaunchSpec, scheme: string, auth: string, setup?: (dir: string, port: number, extra: number[]) => void): Promise<ManagedRedis> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 4; attempt++) {
    const [port, ...extra] = await freePorts(1 + (spec.extraPorts ?? 0));
    const dir = makeTempDir(`${prefix}-${port}`);
    const bound: LaunchSpec = { ...spec, args: (p) => spec.args(p).map((a) => a.replaceAll('{dir}', dir).replaceAll('{extra0}', String(extra[0] ?? ''))) };
    setup?.(dir, port, extra);
    const server = new ManagedRedis(port, dir, bound, scheme, auth);
    try {
      await server.spawnAndWait();
      return server;
    } catch (err) {
      lastError = err;
      const inUse = /Address already in use|Could not create server TCP listening socket/i.test(server.logTail(100));
      await server.stop();
      if (!inUse) throw err;
    }
  }
  throw lastError;
}

function baseArgs(port: number, tlsOn: boolean): string[] {
  return [
    ...(tlsOn ? ['--port', '0', '--tls-port', String(port)] : ['--port', String(port)]),
    '--bind', HOST, '--save', '', '--dir', '{dir}', '--daemonize', 'no', '--logfile', '{dir}/redis.log', '--protected-mode', 'yes',
    // Redis 7 waits 5 s for more replicas before a diskless full sync; a test topology's
    // replicas all come at once, so that wait only slows start-up.
    '--repl-diskless-sync-delay', '0',
  ];
}

/** Starts a standalone redis-server on a free loopback port; see {@link RedisServerOptions}. */
export async function startRedisServer(opts: RedisServerOptions = {}): Promise<RedisServer> {
  const tls = opts.tls;
  const args = (port: number): string[] => [
    ...baseArgs(port, !!tls),
    '--appendonly', opts.appendonly ? 'yes' : 'no',
    ...(opts.appendonly && opts.appendfsync ? ['--appendfsync', opts.appendfsync] : []),
    ...(opts.maxmemory ? ['--maxmemory', opts.maxmemory] : []),
    ...(opts.maxmemoryPolicy ? ['--maxmemory-policy', opts.maxmemoryPolicy] : []),
    ...(opts.password !== undefined ? ['--requirepass', opts.password] : []),
    ...(opts.user ? ['--user', opts.user.name, 'on', `>${opts.user.password}`, '~*', '&*', '+@all'] : []),
    ...(tls
      ? ['--tls-cert-file', tls.serverCert, '--tls-key-file', tls.serverKey, '--tls-ca-cert-file', tls.caCert, '--tls-auth-clients', tls.authClients ? 'yes' : 'no']
      : []),
    ...(opts.extraArgs ?? []),
  ];
  const endpoint = (port: number): RespEndpoint => ({
    port,
    ...(opts.password !== undefined ? { password: opts.password } : opts.user ? { username: opts.user.name, password: opts.user.password } : {}),
    ...(tls ? { tls: { ca: tls.caCert, cert: tls.clientCert, key: tls.clientKey } } : {}),
  });
  const q = encodeURIComponent;
  const auth = opts.user ? `${q(opts.user.name)}:${q(opts.user.password)}@` : opts.password !== undefined ? `:${q(opts.password)}@` : '';
  return launch('redis', { args, endpoint, readyTimeoutMs: opts.readyTimeoutMs ?? 20_000 }, tls ? 'rediss' : 'redis', auth);
}

async function stopAll(servers: readonly RedisServer[]): Promise<void> {
  await Promise.all(servers.map((s) => s.stop().catch(() => {})));
}

/** Starts `n` servers in parallel; every one that started lands in `started` (for cleanup) even when another failed. */
async function allStarted<T extends RedisServer>(started: RedisServer[], n: number, start: () => Promise<T>): Promise<T[]> {
  const settled = await Promise.allSettled(Array.from({ length: n }, start));
  const ok = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  started.push(...ok);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return ok;
}

// --- Cluster -----------------------------------------------------------------------------------

/** The Cluster slot of `key`, as CLUSTER KEYSLOT computes it: the driver's own function, checked against Redis by the self-test. */
export const keyslot = keySlot;

/** One node as CLUSTER NODES describes it. */
export interface ClusterNodeInfo {
  id: string;
  port: number;
  role: 'master' | 'replica';
  /** The master's id, for a replica. */
  masterId?: string;
  /** Slot ranges `[first, last]` (inclusive), for a master. */
  slots: [number, number][];
  /** Flagged fail / pfail by the node asked. */
  failing: boolean;
}

function parseClusterNodes(text: string): ClusterNodeInfo[] {
  return text.trim().split('\n').filter(Boolean).map((line) => {
    const [id, addr, flags, master, , , , , ...slots] = line.trim().split(' ');
    const f = flags.split(',');
    return {
      id,
      port: Number(addr.split('@')[0].split(':').pop()),
      role: f.includes('master') ? 'master' : 'replica',
      ...(master !== '-' ? { masterId: master } : {}),
      slots: slots.filter((s) => !s.startsWith('[')).map((s) => {
        const [a, b] = s.split('-').map(Number);
        return [a, b ?? a] as [number, number];
      }),
      failing: f.includes('fail') || f.includes('fail?'),
    };
  });
}

/** A master of a test cluster. */
export interface ClusterMaster {
  port: number;
  id: string;
  slots: [number, number][];
  replicaPorts: number[];
}

/** Options of {@link startRedisCluster}. */
export interface RedisClusterOptions {
  /** @default 3 */
  masters?: number;
  /** @default 1 */
  replicasPerMaster?: number;
  /** `cluster-node-timeout` in ms. @default 2000 */
  nodeTimeoutMs?: number;
  /** Deadline for start-up (servers, create, convergence). @default 60000 */
  readyTimeoutMs?: number;
}

/** A running test cluster from {@link startRedisCluster}. */
export interface RedisCluster {
  /** Every node with its role at start-up (see masters() for the current view). */
  readonly nodes: readonly { port: number; role: 'master' | 'replica' }[];
  /** `redis://127.0.0.1:m1,127.0.0.1:m2,127.0.0.1:m3/?cluster=true` (the masters at start-up). */
  readonly url: string;
  /** ioredis `Cluster` start-up nodes: `[{ host, port }]` of every node. */
  readonly startupNodes: { host: string; port: number }[];
  readonly servers: readonly RedisServer[];
  /** The current masters, with their slots and replicas, asked of a live node. */
  masters(): Promise<ClusterMaster[]>;
  /** The current master's port serving `key`. */
  masterPortForKey(key: string): Promise<number>;
  /** Keys per master port (DBSIZE, or a SCAN count of keys matching `match`). */
  countKeysPerMaster(match?: string): Promise<Map<number, number>>;
  keyslot(key: string): number;
  /** SIGKILL one node (its dir stays until stop()). */
  killNode(port: number): Promise<void>;
  /** Waits until every live node reports cluster_state:ok with all 16384 slots ok and every live replica is in sync. */
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

class TestCluster implements RedisCluster {
  readonly nodes: { port: number; role: 'master' | 'replica' }[] = [];

  constructor(readonly servers: RedisServer[]) {}

  get url(): string {
    const masters = this.nodes.filter((n) => n.role === 'master').map((n) => `${HOST}:${n.port}`);
    return `redis://${masters.join(',')}/?cluster=true`;
  }

  get startupNodes(): { host: string; port: number }[] {
    return this.servers.map((s) => ({ host: HOST, port: s.port }));
  }

  private liveServers(): RedisServer[] {
    return this.servers.filter((s) => s.running);
  }

  private async view(): Promise<ClusterNodeInfo[]> {
    let last: unknown;
    for (const s of this.liveServers()) {
      try {
        return parseClusterNodes(String(await redisCommand(s.port, ['CLUSTER', 'NODES'])));
      } catch (err) {
        last = err;
      }
    }
    throw new Error(`no live cluster node answered CLUSTER NODES (${String(last)})`);
  }

  async masters(): Promise<ClusterMaster[]> {
    const nodes = await this.view();
    return nodes
      .filter((n) => n.role === 'master' && n.slots.length > 0 && !n.failing)
      .map((m) => ({ port: m.port, id: m.id, slots: m.slots, replicaPorts: nodes.filter((r) => r.masterId === m.id).map((r) => r.port) }))
      .sort((a, b) => a.slots[0][0] - b.slots[0][0]);
  }

  async masterPortForKey(key: string): Promise<number> {
    const slot = keyslot(key);
    const owner = (await this.masters()).find((m) => m.slots.some(([a, b]) => slot >= a && slot <= b));
    if (!owner) throw new Error(`no live master serves slot ${slot} (key ${key})`);
    return owner.port;
  }

  async countKeysPerMaster(match?: string): Promise<Map<number, number>> {
    const counts = new Map<number, number>();
    for (const m of await this.masters()) {
      if (match === undefined) {
        counts.set(m.port, Number(await redisCommand(m.port, ['DBSIZE'])));
        continue;
      }
      let cursor = '0';
      let n = 0;
      do {
        const [next, keys] = (await redisCommand(m.port, ['SCAN', cursor, 'MATCH', match, 'COUNT', 1000], 10_000)) as [string, string[]];
        cursor = next;
        n += keys.length;
      } while (cursor !== '0');
      counts.set(m.port, n);
    }
    return counts;
  }

  keyslot(key: string): number {
    return keyslot(key);
  }

  async killNode(port: number): Promise<void> {
    const s = this.servers.find((x) => x.port === port);
    if (!s) throw new Error(`no node of this cluster on port ${port}`);
    await s.kill('SIGKILL');
  }

  async waitUntilHealthy(timeoutMs = 30_000): Promise<void> {
    await until('test Redis Cluster healthy (cluster_state:ok, 16384 slots ok, every node agreeing on the roles, replicas in sync)', timeoutMs, async () => {
      const live = this.liveServers();
      let agreed: string | undefined;
      for (const s of live) {
        const info = String(await redisCommand(s.port, ['CLUSTER', 'INFO']));
        if (!info.includes('cluster_state:ok') || !info.includes('cluster_slots_ok:16384')) return false;
        // cluster_state:ok comes before gossip has told every node which nodes are replicas:
        // until then a replica shows up as a master without slots. These topologies have no
        // empty masters, so one is a node still learning.
        const view = parseClusterNodes(String(await redisCommand(s.port, ['CLUSTER', 'NODES']))).filter((n) => live.some((l) => l.port === n.port));
        if (view.length !== live.length || view.some((n) => n.failing || (n.role === 'master' && n.slots.length === 0))) return false;
        const roles = view.map((n) => `${n.port}:${n.role}:${n.masterId ?? ''}`).sort().join(' ');
        if (agreed !== undefined && roles !== agreed) return false;
        agreed = roles;
      }
      for (const s of live) {
        const repl = await redisInfo(s.port, 'replication');
        if (repl.role === 'slave' && repl.master_link_status !== 'up') return false;
      }
      return true;
    }, 100);
  }

  async stop(): Promise<void> {
    await stopAll(this.servers);
  }
}

/**
 * Starts `masters * (1 + replicasPerMaster)` cluster-enabled redis-servers on free loopback ports
 * (client and bus port each picked free), joins them with `redis-cli --cluster create` and waits
 * until every node reports cluster_state:ok, all slots covered and replicas in sync.
 */
export async function startRedisCluster(opts: RedisClusterOptions = {}): Promise<RedisCluster> {
  const masters = opts.masters ?? 3;
  const replicas = opts.replicasPerMaster ?? 1;
  const timeoutMs = opts.readyTimeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  const left = () => Math.max(1000, deadline - Date.now());
  const spec: LaunchSpec = {
    args: (port) => [
      ...baseArgs(port, false),
      '--appendonly', 'no', '--cluster-enabled', 'yes', '--cluster-config-file', '{dir}/nodes.conf',
      '--cluster-node-timeout', String(opts.nodeTimeoutMs ?? 2000), '--cluster-port', '{extra0}',
    ],
    endpoint: (port) => ({ port }),
    readyTimeoutMs: Math.min(20_000, timeoutMs),
    extraPorts: 1,
  };
  const servers: RedisServer[] = [];
  const cluster = new TestCluster(servers);
  try {
    await allStarted(servers, masters * (1 + replicas), () => launch('redis-cluster', spec, 'redis', ''));
    const create = await runProcess(
      REDIS_CLI_BIN,
      ['--cluster', 'create', ...servers.map((s) => `${HOST}:${s.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'],
      { timeoutMs: left() },
    ).catch((err: Error) => {
      throw new Error(`could not run \`${REDIS_CLI_BIN} --cluster create\` (${err.message}). ${INSTALL_HINT}`, { cause: err });
    });
    if (create.code !== 0) {
      throw new Error(`\`${REDIS_CLI_BIN} --cluster create\` failed (code ${create.code}):\n${create.stdout.slice(-2000)}\n${create.stderr.slice(-2000)}`);
    }
    await cluster.waitUntilHealthy(left());
    // Roles as every node now agrees on them; a replica that has not learnt it is a replica yet
    // shows up as a master without slots, which waitUntilHealthy's replica check rules out.
    const view = parseClusterNodes(String(await redisCommand(servers[0].port, ['CLUSTER', 'NODES'])));
    for (const s of servers) {
      const node = view.find((n) => n.port === s.port);
      cluster.nodes.push({ port: s.port, role: node?.role ?? 'replica' });
    }
    const masterCount = cluster.nodes.filter((n) => n.role === 'master').length;
    if (masterCount !== masters) throw new Error(`test Redis Cluster has ${masterCount} masters, expected ${masters}`);
    return cluster;
  } catch (err) {
    const logs = servers.map((s) => `--- ${HOST}:${s.port} (${s.dir})\n${s.logTail(10)}`).join('\n');
    await cluster.stop();
    throw new Error(`Test Redis Cluster did not start: ${(err as Error).message}\n${logs}`, { cause: err });
  }
}

/**
 * One hash tag per current master (in slot order), found by trying `<prefix>-0`, `<prefix>-1`, …:
 * a key containing `{tag}` lands on that master. For tests that check a sharded topic really is
 * spread over every master.
 */
export async function hashTagsOnEveryMaster(cluster: RedisCluster, prefix = 'tag'): Promise<{ tag: string; port: number; slot: number }[]> {
  const masters = await cluster.masters();
  const found = new Map<number, { tag: string; port: number; slot: number }>();
  for (let i = 0; found.size < masters.length; i++) {
    if (i > 100_000) throw new Error(`no hash tag found for every master of ${masters.map((m) => m.port).join(', ')}`);
    const tag = `${prefix}-${i}`;
    const slot = keyslot(`{${tag}}`);
    const owner = masters.find((m) => m.slots.some(([a, b]) => slot >= a && slot <= b));
    if (owner && !found.has(owner.port)) found.set(owner.port, { tag, port: owner.port, slot });
  }
  return masters.map((m) => found.get(m.port)!);
}

// --- Sentinel ----------------------------------------------------------------------------------

/** Options of {@link startRedisSentinel}. */
export interface RedisSentinelOptions {
  /** @default 1 */
  replicas?: number;
  /** @default 3 */
  sentinels?: number;
  /** @default 'mymaster' */
  masterName?: string;
  /** @default majority of the sentinels */
  quorum?: number;
  /** `down-after-milliseconds`. @default 1000 */
  downAfterMs?: number;
  /** `failover-timeout`. @default 5000 */
  failoverTimeoutMs?: number;
  /** Options for the data servers (appendonly, password is not supported here). */
  server?: Omit<RedisServerOptions, 'password' | 'user' | 'tls' | 'extraArgs'>;
  /** Deadline for start-up. @default 60000 */
  readyTimeoutMs?: number;
}

/** A running master/replicas/sentinels group from {@link startRedisSentinel}. */
export interface RedisSentinelGroup {
  readonly masterName: string;
  /** The master at start-up. */
  readonly master: RedisServer;
  /** The first replica at start-up. */
  readonly replica: RedisServer;
  readonly replicas: readonly RedisServer[];
  /** Sentinel ports. */
  readonly sentinels: readonly number[];
  readonly sentinelServers: readonly RedisServer[];
  /** `redis+sentinel://127.0.0.1:s1,…/?sentinel=<masterName>`. */
  readonly url: string;
  /** ioredis options `{ sentinels, name }`. */
  readonly ioredisOptions: { sentinels: { host: string; port: number }[]; name: string };
  /** The port every sentinel currently names as master (rejects when they disagree). */
  currentMasterPort(): Promise<number>;
  /** SIGKILL the current master; returns its port. */
  killMaster(): Promise<number>;
  /**
   * Waits until every live sentinel names a master other than the one killed last, and that
   * server answers ROLE as master; returns its port.
   */
  waitForFailover(deadlineMs?: number): Promise<number>;
  stop(): Promise<void>;
}

class TestSentinelGroup implements RedisSentinelGroup {
  private lastKilled: number | undefined;

  constructor(
    readonly masterName: string,
    readonly master: RedisServer,
    readonly replicas: RedisServer[],
    readonly sentinelServers: RedisServer[],
  ) {}

  get replica(): RedisServer {
    return this.replicas[0];
  }

  get sentinels(): number[] {
    return this.sentinelServers.map((s) => s.port);
  }

  get url(): string {
    return `redis+sentinel://${this.sentinels.map((p) => `${HOST}:${p}`).join(',')}/?sentinel=${encodeURIComponent(this.masterName)}`;
  }

  get ioredisOptions(): { sentinels: { host: string; port: number }[]; name: string } {
    return { sentinels: this.sentinels.map((port) => ({ host: HOST, port })), name: this.masterName };
  }

  private async namedMasters(): Promise<number[]> {
    const live = this.sentinelServers.filter((s) => s.running);
    return Promise.all(live.map(async (s) => {
      const addr = (await redisCommand(s.port, ['SENTINEL', 'get-master-addr-by-name', this.masterName])) as string[] | null;
      return addr ? Number(addr[1]) : -1;
    }));
  }

  async currentMasterPort(): Promise<number> {
    const ports = new Set(await this.namedMasters());
    if (ports.size !== 1) throw new Error(`sentinels disagree on the master: ${[...ports].join(', ')}`);
    return [...ports][0];
  }

  async killMaster(): Promise<number> {
    const port = await this.currentMasterPort();
    const server = [this.master, ...this.replicas].find((s) => s.port === port);
    if (!server) throw new Error(`the master ${port} is not one of this group's servers`);
    await server.kill('SIGKILL');
    this.lastKilled = port;
    return port;
  }

  async waitForFailover(deadlineMs = 30_000): Promise<number> {
    const old = this.lastKilled ?? this.master.port;
    return until(`sentinels promoting a new master for ${this.masterName} (old ${HOST}:${old})`, deadlineMs, async () => {
      const ports = new Set(await this.namedMasters());
      if (ports.size !== 1) return false;
      const [port] = ports;
      if (port === old || port < 0) return false;
      const role = (await redisCommand(port, ['ROLE'])) as RespValue[];
      return role[0] === 'master' ? port : false;
    }, 100);
  }

  async stop(): Promise<void> {
    await stopAll([...this.sentinelServers, ...this.replicas, this.master]);
  }
}

/**
 * Starts a master, `replicas` replicas (`--replicaof`) and `sentinels` sentinels
 * (`redis-server <conf> --sentinel`, each with its own writable config) on free loopback ports,
 * and waits until every sentinel sees the master, every replica in sync and the other sentinels.
 */
export async function startRedisSentinel(opts: RedisSentinelOptions = {}): Promise<RedisSentinelGroup> {
  const name = opts.masterName ?? 'mymaster';
  const sentinelCount = opts.sentinels ?? 3;
  const replicaCount = opts.replicas ?? 1;
  const quorum = opts.quorum ?? Math.floor(sentinelCount / 2) + 1;
  const timeoutMs = opts.readyTimeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  const left = () => Math.max(1000, deadline - Date.now());
  const started: RedisServer[] = [];
  try {
    const master = await startRedisServer({ ...opts.server, readyTimeoutMs: left() });
    started.push(master);
    const replicas = await allStarted(started, replicaCount, () =>
      startRedisServer({ ...opts.server, readyTimeoutMs: left(), extraArgs: ['--replicaof', HOST, String(master.port)] }));
    const sentinelSpec: LaunchSpec = {
      args: (port) => ['{dir}/sentinel.conf', '--sentinel', '--port', String(port), '--bind', HOST, '--dir', '{dir}', '--daemonize', 'no', '--logfile', '{dir}/redis.log'],
      endpoint: (port) => ({ port }),
      readyTimeoutMs: Math.min(20_000, left()),
    };
    // The config file is the sentinel's state (it rewrites it on every change), so it lives
    // in the sentinel's own dir; `sentinel monitor` must come after the global directives.
    const conf = [
      'sentinel resolve-hostnames no',
      `sentinel monitor ${name} ${HOST} ${master.port} ${quorum}`,
      `sentinel down-after-milliseconds ${name} ${opts.downAfterMs ?? 1000}`,
      `sentinel failover-timeout ${name} ${opts.failoverTimeoutMs ?? 5000}`,
      `sentinel parallel-syncs ${name} 1`,
      '',
    ].join('\n');
    const sentinelServers = await allStarted(started, sentinelCount, () =>
      launch('redis-sentinel', sentinelSpec, 'redis', '', (dir) => writeFileSync(join(dir, 'sentinel.conf'), conf)));
    const group = new TestSentinelGroup(name, master, replicas, sentinelServers);
    await until(`sentinels seeing ${name} at ${HOST}:${master.port} with ${replicaCount} replica(s) in sync and ${sentinelCount - 1} other sentinels`, left(), async () => {
      for (const r of replicas) if ((await redisInfo(r.port, 'replication')).master_link_status !== 'up') return false;
      for (const s of sentinelServers) {
        const fields = (await redisCommand(s.port, ['SENTINEL', 'master', name])) as string[];
        const m = new Map<string, string>();
        for (let i = 0; i + 1 < fields.length; i += 2) m.set(fields[i], fields[i + 1]);
        if (m.get('port') !== String(master.port) || /down|disconnected/.test(m.get('flags') ?? '')) return false;
        if (Number(m.get('num-slaves')) < replicaCount || Number(m.get('num-other-sentinels')) < sentinelCount - 1) return false;
        const seen = (await redisCommand(s.port, ['SENTINEL', 'replicas', name])) as string[][];
        const ok = seen.filter((fs) => {
          const r = new Map<string, string>();
          for (let i = 0; i + 1 < fs.length; i += 2) r.set(fs[i], fs[i + 1]);
          return r.get('flags') === 'slave' && r.get('master-link-status') === 'ok';
        });
        if (ok.length < replicaCount) return false;
      }
      return true;
    }, 100);
    return group;
  } catch (err) {
    const logs = started.map((s) => `--- ${HOST}:${s.port} (${s.dir})\n${s.logTail(10)}`).join('\n');
    await stopAll(started);
    throw new Error(`Test Redis Sentinel group did not start: ${(err as Error).message}\n${logs}`, { cause: err });
  }
}
