// Broker-side faults for tests: RabbitMQ closes client connections exactly as
// `rabbitmqctl close_all_connections` does, but only this process's, so that test files
// running in parallel against the same broker are not hit.
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { rabbitmqctlCommand } from '../../support/rabbit-tls.js';

/** Local TCP ports of this process's sockets connected to `remotePort` on loopback (Linux /proc). */
export function localPortsTo(remotePort: number, pid: number | 'self' = 'self'): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // fd closed while listing
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const [, local, remote, state, , , , , , inode] = cols;
      // state 01 = ESTABLISHED
      if (state !== '01' || !inodes.has(inode)) continue;
      if (parseInt(remote.split(':')[1], 16) !== remotePort) continue;
      ports.push(parseInt(local.split(':')[1], 16));
    }
  }
  return ports;
}

/** Runs rabbitmqctl without blocking the event loop (the connections under test keep running). */
function rabbitmqctl(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const [cmd, ...pre] = rabbitmqctlCommand();
    execFile(cmd, [...pre, ...args], { encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`rabbitmqctl ${args[0]} failed (run as root or set TIDINGS_RABBITMQCTL="sudo -n rabbitmqctl"): ${err.message} ${stdout}${stderr}`));
      else resolve(stdout.trim());
    });
  });
}

/**
 * Has the broker close every AMQP connection whose client port is in `ports` (the same
 * server-initiated connection.close with reason that `close_all_connections` sends).
 * Returns how many connections were closed.
 */
export async function closeConnectionsByPeerPort(ports: readonly number[], reason = 'tidings fault test'): Promise<number> {
  if (ports.length === 0) return 0;
  const expr = [
    `Ports = [${ports.join(',')}]`,
    `Pids = [Pid || Pid <- rabbit_networking:connections(),
       lists:member(catch proplists:get_value(peer_port, rabbit_networking:connection_info(Pid, [peer_port])), Ports)]`,
    `[rabbit_networking:close_connection(P, "${reason.replace(/"/g, '')}") || P <- Pids]`,
    `length(Pids).`,
  ].join(',\n');
  const out = await rabbitmqctl(['eval', expr]);
  const n = Number(out.split('\n').pop());
  if (!Number.isInteger(n)) throw new Error(`unexpected rabbitmqctl eval output: ${out}`);
  return n;
}

/** Closes every connection of this process to RabbitMQ on 127.0.0.1:5672; returns how many. */
export function closeMyRabbitConnections(reason?: string): Promise<number> {
  return closeConnectionsByPeerPort(localPortsTo(5672), reason);
}

/** The literal `rabbitmqctl close_all_connections` (hits every client of the broker). */
export async function closeAllRabbitConnections(reason = 'tidings fault test'): Promise<void> {
  await rabbitmqctl(['close_all_connections', reason]);
}
