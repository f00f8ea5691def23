// Shared fixtures for the memory:// driver unit tests: drivers on isolated virtual hosts,
// listeners that record what they receive, and cleanup of everything a test opened.
import type { ReceivedMessage, RpcIncomingMessage } from '../../../../src/contract/incoming-message.js';
import type { Listener } from '../../../../src/contract/listener.js';
import { defaultRemoteErrorRegistry, type RemoteErrorRegistry } from '../../../../src/contract/remote-error.js';
import { MemoryDriver } from '../../../../src/drivers/memory/index.js';
import { silentLogger, type Logger } from '../../../../src/core/logger.js';
import { Target } from '../../../../src/core/target.js';
import { TransportURL } from '../../../../src/core/transport-url.js';
import { uniqueName } from '../../../../src/testing/wait.js';

export interface DriverFixtureOptions {
  /** Full URL; defaults to an isolated `memory:///<vhost>`. */
  url?: string;
  vhost?: string;
  logger?: Logger;
  options?: Record<string, unknown>;
  allowedRemoteExmods?: string[];
  remoteErrors?: RemoteErrorRegistry;
}

const drivers: MemoryDriver[] = [];
const listeners: Listener<ReceivedMessage>[] = [];

/** A unique virtual host, so every test has its own broker. */
export function isolatedVhost(): string {
  return uniqueName('iso');
}

export function makeDriver(fixture: DriverFixtureOptions = {}): MemoryDriver {
  const url = fixture.url ?? `memory:///${fixture.vhost ?? isolatedVhost()}`;
  const driver = new MemoryDriver({
    url: TransportURL.parse(url),
    defaultExchange: 'openstack',
    allowedRemoteExmods: fixture.allowedRemoteExmods ?? [],
    remoteErrors: fixture.remoteErrors ?? defaultRemoteErrorRegistry,
    logger: fixture.logger ?? silentLogger,
    options: fixture.options ?? {},
  });
  drivers.push(driver);
  return driver;
}

/** Two drivers (client and server side) on the same fresh broker. */
export function makePair(fixture: DriverFixtureOptions = {}): { client: MemoryDriver; server: MemoryDriver; vhost: string } {
  const vhost = fixture.vhost ?? isolatedVhost();
  return { client: makeDriver({ ...fixture, vhost }), server: makeDriver({ ...fixture, vhost }), vhost };
}

/** Starts `listener`, records every message (after `handle`, if given) and returns the record. */
export function record<M extends ReceivedMessage>(listener: Listener<M>, handle?: (m: M) => unknown): { messages: M[]; batches: M[][] } {
  listeners.push(listener as unknown as Listener<ReceivedMessage>);
  const out = { messages: [] as M[], batches: [] as M[][] };
  listener.start(async (batch) => {
    out.batches.push(batch);
    for (const m of batch) {
      if (handle) await handle(m);
      out.messages.push(m);
    }
  });
  return out;
}

/** An RPC listener replying `{echo: args, ctx, method}` to calls. */
export async function echoServer(driver: MemoryDriver, topic: string, server = 'host-1', exchange?: string) {
  const listener = await driver.listen(new Target({ topic, server, exchange }));
  return record<RpcIncomingMessage>(listener, (m) => m.reply({ result: { echo: m.request.args, ctx: m.ctx, method: m.request.method, server } }));
}

/** Tracks a listener started elsewhere so that afterEach cleans it up. */
export function track<M extends ReceivedMessage>(listener: Listener<M>): Listener<M> {
  listeners.push(listener as unknown as Listener<ReceivedMessage>);
  return listener;
}

/** Stops and cleans up every listener and driver the test created. */
export async function cleanupAll(): Promise<void> {
  for (const l of listeners.splice(0)) await l.cleanup();
  for (const d of drivers.splice(0)) await d.cleanup();
}
