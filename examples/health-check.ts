// A readiness probe over HTTP: 200 with health JSON when the transport is healthy and a server
// answers a ping, 503 otherwise. Run: npx tsx examples/health-check.ts (probes itself once, exits).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { getRpcClient, getRpcServer, getRpcTransport } from 'tidings';

const topic = `health-${randomUUID().slice(0, 8)}`;
const transport = await getRpcTransport(); // $TIDINGS_TRANSPORT_URL, else memory://
// rpcPingEnabled is on by default: the server answers oslo_rpc_server_ping.
const server = getRpcServer(transport, { topic, server: 'worker-1' }, [{ work: () => 'done' }]);
await server.start();
const client = getRpcClient(transport, { topic });

/** The probe: a ping to any server of the topic, then the transport's connection state. */
async function probe(_req: IncomingMessage, res: ServerResponse): Promise<void> {
  let pingMs: number | undefined;
  let error: string | undefined;
  try {
    pingMs = await client.ping({ timeout: 2000 });
  } catch (err) {
    error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  }
  // Read after the ping: drivers connect lazily, so a fresh transport has connected by now.
  const health = transport.health();
  const ok = pingMs !== undefined && health.connected && !health.blocked;
  res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ ok, transport: health, pingMs, error }));
}

const http = createServer((req, res) => void probe(req, res));
await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
const { port } = http.address() as AddressInfo;

// Probe ourselves once, as a load balancer or Kubernetes would.
const response = await fetch(`http://127.0.0.1:${port}/healthz`);
const body = (await response.json()) as { ok: boolean; transport: unknown };
console.log(`GET /healthz -> ${response.status}`);
console.log(`transport: ${JSON.stringify(body.transport)}`);
console.log(`servers: ${(await client.discover({ windowMs: 500 })).map((s) => s.server).join(', ')}`);

await new Promise<void>((resolve) => http.close(() => resolve()));
await server.stop();
await server.wait();
await transport.cleanup();
console.log('health-check done');
