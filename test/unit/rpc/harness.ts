// Shared setup for RPC end-to-end unit tests over an isolated memory:// virtual host.
import { getRpcTransport, type Transport, type TransportOptions } from '../../../src/transport.js';
import { getRpcServer, type RpcServer, type RpcServerOptions } from '../../../src/rpc/server.js';
import { uniqueName } from '../../../src/testing/wait.js';

export interface Harness {
  url: string;
  topic: string;
  transport(options?: TransportOptions): Promise<Transport>;
  server(endpoints: object[], options?: RpcServerOptions & { server?: string; transport?: Transport }): Promise<RpcServer>;
  cleanup(): Promise<void>;
}

/** Everything created through a harness is stopped and cleaned up by `cleanup()`. */
export function createHarness(): Harness {
  const url = 'memory:///' + uniqueName('vh');
  const topic = uniqueName('topic');
  const transports: Transport[] = [];
  const servers: RpcServer[] = [];
  const transport = async (options?: TransportOptions) => {
    const t = await getRpcTransport(url, options);
    transports.push(t);
    return t;
  };
  return {
    url,
    topic,
    transport,
    async server(endpoints, options = {}) {
      const { server = uniqueName('host'), transport: given, ...serverOptions } = options;
      const s = getRpcServer(given ?? (await transport()), { topic, server }, endpoints, serverOptions);
      servers.push(s);
      await s.start();
      return s;
    },
    async cleanup() {
      for (const s of servers) {
        await s.stop().catch(() => {});
        await s.wait().catch(() => {});
      }
      for (const t of transports) await t.cleanup();
    },
  };
}
