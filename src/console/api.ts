// The console's JSON API (docs/console.md): one function per endpoint over the transport, its
// driver's inspection methods and dead letters, the pool sampler and the traffic recorder.
// Everything here is read-only except replay and purge, which server.ts guards.
import { getRpcClient, InvalidArgument, MessagingError, NotSupportedError, type RpcClient, type Transport } from '../index.js';
import type { DeadLetterQuery, DeadLetterStore } from '../contract/dead-letters.js';
import type { DriverInspector, PoolSampler } from './inspect.js';
import type { ResolvedConsoleOptions } from './options.js';
import { HttpError } from './security.js';
import type { TrafficRecorder } from './traffic.js';

/** Largest `limit` of a dead-letter list, and most ids in one replay or purge. */
export const MAX_DEAD_LETTER_LIMIT = 1000;
const NAME = /^[\w.:-]{1,255}$/;
/** How long discover() collects replies, ms. */
const DISCOVER_WINDOW_MS = 1000;
/** Shortest ping deadline, ms (Kafka's first directed request to a server may take a second or two). */
const PING_TIMEOUT_MS = 3000;

/** What the endpoints work on. */
export interface ApiDeps {
  readonly transport: Transport;
  readonly options: ResolvedConsoleOptions;
  readonly inspector: DriverInspector;
  readonly sampler: PoolSampler;
  readonly traffic: TrafficRecorder;
  readonly version: string;
}

/** A server on the servers page. */
interface ServerRow {
  server: string | null;
  host: string | null;
  pid: number | null;
  inFlight: number | null;
  pingMs: number | null;
}

/** The endpoints; `query` is the URL's search params, `body` a checked JSON object (writes only). */
export class ConsoleApi {
  private readonly clients = new Map<string, RpcClient>();
  private readonly discovering = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: ApiDeps) {}

  overview(): unknown {
    const { transport, options, inspector, version } = this.deps;
    const name = transport.driver.name;
    return {
      driver: name === 'amqp' ? 'rabbit' : name,
      url: transport.url,
      writable: options.allowWrite,
      topics: options.topics,
      notificationTopics: options.notificationTopics,
      expectedServers: options.expectedServers,
      refreshMs: options.refreshMs,
      inspection: inspector.inspection(),
      version,
    };
  }

  health(): unknown {
    return this.deps.transport.health();
  }

  async topics(): Promise<unknown> {
    let listed: string[] | null = null;
    try {
      listed = (await this.deps.inspector.listRpcTopics()) ?? null;
    } catch (err) {
      this.deps.options.logger?.debug('console: could not list RPC topics', { err });
    }
    return { configured: this.deps.options.topics, listed };
  }

  /** discover() and a ping of each server found; concurrent requests for one topic share a round. */
  async servers(query: URLSearchParams): Promise<unknown> {
    const topic = requireName(query, 'topic');
    await this.requireKnownTopic(topic);
    let round = this.discovering.get(topic);
    if (round === undefined) {
      round = this.discoverRound(topic).finally(() => this.discovering.delete(topic));
      this.discovering.set(topic, round);
    }
    return round;
  }

  async pools(query: URLSearchParams): Promise<unknown> {
    const topic = requireName(query, 'topic');
    const pools = await this.deps.inspector.inspectPools({ topic, pools: this.deps.options.pools });
    return { topic, pools, at: Date.now() };
  }

  poolHistory(query: URLSearchParams): unknown {
    const topic = requireName(query, 'topic');
    const samples = this.deps.sampler.history(topic);
    if (samples === undefined) throw new HttpError(404, 'Not a notification topic of this console (start it with --notification-topic)');
    return { topic, samples };
  }

  traffic(): unknown {
    return this.deps.traffic.view();
  }

  async deadLetters(query: URLSearchParams): Promise<unknown> {
    const address = requireName(query, 'address');
    const limit = parseLimit(query.get('limit'));
    const letters = await this.store().list({ address, exchange: optionalName(query, 'exchange'), limit });
    return { address, letters: letters.map(({ body: _body, ...rest }) => rest) };
  }

  async deadLetterBody(query: URLSearchParams): Promise<unknown> {
    const address = requireName(query, 'address');
    const id = query.get('id');
    if (id === null || id === '' || id.length > 200) throw new HttpError(400, 'Missing or bad id');
    const notFound = new HttpError(404, 'No dead letter with this id at this address');
    const [letter] = await this.store()
      .list({ address, exchange: optionalName(query, 'exchange'), ids: [id], limit: 1 })
      // An id this driver never gives out (Kafka's are partition:offset) names no dead letter either.
      .catch((err: unknown) => Promise.reject(err instanceof InvalidArgument && err.field === 'ids' ? notFound : err));
    if (letter === undefined) throw notFound;
    return { id: letter.id, body: letter.body };
  }

  async replay(body: Record<string, unknown>): Promise<unknown> {
    return { replayed: await this.store().replay(writeQuery(body)) };
  }

  async purge(body: Record<string, unknown>): Promise<unknown> {
    return { purged: await this.store().purge(writeQuery(body)) };
  }

  private store(): DeadLetterStore {
    return this.deps.transport.driver.deadLetters();
  }

  private async discoverRound(topic: string): Promise<unknown> {
    const client = this.client(topic);
    const found = await client.discover({ windowMs: DISCOVER_WINDOW_MS });
    // A server that answered discover() a moment ago answers a ping at once unless it is busy or gone.
    const timeout = Math.max(PING_TIMEOUT_MS, Math.min(this.deps.options.refreshMs, 5000));
    const servers: ServerRow[] = await Promise.all(
      found.map(async (s) => {
        let pingMs: number | null = null;
        if (s.server !== undefined) pingMs = await client.ping({ server: s.server, timeout }).then((ms) => Math.round(ms * 100) / 100, () => null);
        return { server: s.server ?? null, host: s.host ?? null, pid: s.pid ?? null, inFlight: s.inFlight ?? null, pingMs };
      }),
    );
    return { topic, expected: this.deps.options.expectedServers[topic] ?? null, servers, at: Date.now() };
  }

  private client(topic: string): RpcClient {
    let client = this.clients.get(topic);
    if (client === undefined) {
      client = getRpcClient(this.deps.transport, { topic }, { timeout: 5000 });
      this.clients.set(topic, client);
    }
    return client;
  }

  /** Only topics the console was given or the broker lists: a fanout ping may declare broker objects. */
  private async requireKnownTopic(topic: string): Promise<void> {
    if (this.deps.options.topics.includes(topic)) return;
    const listed = await this.deps.inspector.listRpcTopics().catch(() => undefined);
    if (listed?.includes(topic)) return;
    throw new HttpError(404, 'Not an RPC topic of this console (start it with --topic) nor one the broker lists');
  }
}

function requireName(query: URLSearchParams, key: string): string {
  const value = query.get(key);
  if (value === null || value === '') throw new HttpError(400, `Missing ${key}`);
  if (!NAME.test(value)) throw new HttpError(400, `Bad ${key}: letters, digits, _ . : - (at most 255)`);
  return value;
}

function optionalName(query: URLSearchParams, key: string): string | undefined {
  return query.get(key) === null ? undefined : requireName(query, key);
}

function parseLimit(text: string | null): number {
  if (text === null) return 100;
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1 || n > MAX_DEAD_LETTER_LIMIT) throw new HttpError(400, `limit must be an integer from 1 to ${MAX_DEAD_LETTER_LIMIT}`);
  return n;
}

/** The query of a replay or purge body `{address, exchange?, ids?, all?}`: ids or all: true, not both. */
function writeQuery(body: Record<string, unknown>): DeadLetterQuery {
  const { address, exchange, ids, all } = body;
  const unknown = Object.keys(body).filter((k) => !['address', 'exchange', 'ids', 'all'].includes(k));
  if (unknown.length > 0) throw new HttpError(400, `Unknown field ${JSON.stringify(unknown[0].slice(0, 40))}`);
  if (typeof address !== 'string' || !NAME.test(address)) throw new HttpError(400, 'address must be an address such as notifications.info');
  if (exchange !== undefined && (typeof exchange !== 'string' || !NAME.test(exchange))) throw new HttpError(400, 'exchange must be a name');
  if (all !== undefined && all !== true) throw new HttpError(400, 'all must be true when given');
  if ((ids === undefined) === (all === undefined)) throw new HttpError(400, 'Name the dead letters with ids, or pass all: true (not both)');
  if (ids !== undefined) {
    if (!Array.isArray(ids) || ids.length === 0 || ids.length > MAX_DEAD_LETTER_LIMIT || ids.some((id) => typeof id !== 'string' || id === '' || id.length > 200)) {
      throw new HttpError(400, `ids must be 1 to ${MAX_DEAD_LETTER_LIMIT} dead-letter ids as listed`);
    }
  }
  return { address, exchange, ids: ids as string[] | undefined };
}

/** The HTTP status of a failure: the API's own, 400 for bad input the driver refused, 501 for what the driver cannot do, 502 for the broker. */
export function statusOf(err: unknown): number {
  if (err instanceof HttpError) return err.status;
  if (err instanceof NotSupportedError) return 501;
  if (err instanceof InvalidArgument) return 400;
  if (err instanceof MessagingError) return 502;
  return 500;
}
