// A TCP proxy between a client and the real RabbitMQ that parses AMQP 0-9-1 frames, so tests can
// inject `connection.blocked` / `connection.unblocked` at a frame boundary without a broker-wide alarm.
import { createServer, connect, type Server, type Socket } from 'node:net';

const FRAME_METHOD = 1;
const FRAME_END = 0xce;
/** type u8 + channel u16 + size u32. */
const HEADER = 7;
/** The client opens with `AMQP\0\0\x09\x01`; after that both sides send only frames. */
const PROTOCOL_HEADER = 8;
const CLASS_CONNECTION = 10;
const CLASS_BASIC = 60;
const METHOD_START_OK = 11;
const METHOD_OPEN_OK = 41;
const METHOD_BLOCKED = 60;
const METHOD_UNBLOCKED = 61;
const METHOD_PUBLISH = 40;
/** The capability entry in `connection.start-ok` client properties: shortstr key, 't' (boolean), true. */
const BLOCKED_CAPABILITY = Buffer.concat([Buffer.from([18]), Buffer.from('connection.blocked'), Buffer.from('t'), Buffer.from([1])]);

/** A method frame on channel 0 of class `connection`. */
function connectionMethodFrame(method: number, args: Buffer = Buffer.alloc(0)): Buffer {
  const payload = Buffer.concat([Buffer.from([0, CLASS_CONNECTION, 0, method]), args]);
  const frame = Buffer.alloc(HEADER + payload.length + 1);
  frame.writeUInt8(FRAME_METHOD, 0);
  frame.writeUInt16BE(0, 1);
  frame.writeUInt32BE(payload.length, 3);
  payload.copy(frame, HEADER);
  frame.writeUInt8(FRAME_END, HEADER + payload.length);
  return frame;
}

function shortstr(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length > 255) throw new Error('shortstr longer than 255 bytes');
  return Buffer.concat([Buffer.from([bytes.length]), bytes]);
}

interface Frame {
  type: number;
  channel: number;
  payload: Buffer;
  raw: Buffer;
}

/** Splits a byte stream into whole frames; keeps the partial tail for the next chunk. */
class FrameReader {
  private buf: Buffer = Buffer.alloc(0);
  constructor(private skip = 0) {}

  /** Returns the leading non-frame bytes (protocol header) and the complete frames so far. */
  push(chunk: Buffer): { preamble?: Buffer; frames: Frame[] } {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    let preamble: Buffer | undefined;
    if (this.skip > 0) {
      if (this.buf.length < this.skip) return { frames: [] };
      preamble = this.buf.subarray(0, this.skip);
      this.buf = this.buf.subarray(this.skip);
      this.skip = 0;
    }
    const frames: Frame[] = [];
    while (this.buf.length >= HEADER) {
      const size = this.buf.readUInt32BE(3);
      const total = HEADER + size + 1;
      if (this.buf.length < total) break;
      const raw = this.buf.subarray(0, total);
      if (raw[total - 1] !== FRAME_END) throw new Error(`AMQP frame-end missing (got 0x${raw[total - 1].toString(16)})`);
      frames.push({ type: raw[0], channel: raw.readUInt16BE(1), payload: raw.subarray(HEADER, HEADER + size), raw });
      this.buf = this.buf.subarray(total);
    }
    return { preamble, frames };
  }
}

function isMethod(f: Frame, classId: number, methodId: number): boolean {
  return f.type === FRAME_METHOD && f.payload.length >= 4 && f.payload.readUInt16BE(0) === classId && f.payload.readUInt16BE(2) === methodId;
}

/** One client connection relayed to the broker. */
export class ProxiedConnection {
  /** The client listed `connection.blocked: true` in its `connection.start-ok` capabilities. */
  clientAdvertisedBlocked = false;
  /** The broker answered `connection.open` (the connection is usable). */
  opened = false;
  /** `basic.publish` frames the client sent in total. */
  publishFrames = 0;
  /** `basic.publish` frames the client sent after a `connection.blocked` was injected and before the unblock. */
  publishFramesWhileBlocked = 0;
  /** True between `block()` and `unblock()`. */
  blocked = false;
  /** True once the proxy stopped forwarding client bytes (a publish arrived while blocked). */
  holding = false;
  closed = false;
  private held: Buffer[] = [];
  private readonly fromClient = new FrameReader(PROTOCOL_HEADER);
  private readonly fromServer = new FrameReader();

  constructor(
    readonly id: number,
    private readonly client: Socket,
    private readonly server: Socket,
    private readonly holdPublishes: boolean,
  ) {
    client.on('data', (chunk: Buffer) => this.onClientData(chunk));
    server.on('data', (chunk: Buffer) => this.onServerData(chunk));
    const end = () => this.destroy();
    for (const s of [client, server]) {
      s.on('error', end);
      s.on('close', end);
    }
  }

  /** Sends `connection.blocked(reason)` to the client between two broker frames. */
  block(reason: string): void {
    if (this.closed) return;
    this.blocked = true;
    this.client.write(connectionMethodFrame(METHOD_BLOCKED, shortstr(reason)));
  }

  /** Sends `connection.unblocked` and resumes forwarding what the client sent meanwhile. */
  unblock(): void {
    if (this.closed) return;
    this.blocked = false;
    this.client.write(connectionMethodFrame(METHOD_UNBLOCKED));
    this.holding = false;
    for (const b of this.held.splice(0)) this.server.write(b);
  }

  /** Stops forwarding both ways and keeps the sockets open: a broker that stopped answering. */
  freeze(): void {
    this.client.pause();
    this.server.pause();
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.client.destroy();
    this.server.destroy();
  }

  private onClientData(chunk: Buffer): void {
    let parsed: ReturnType<FrameReader['push']>;
    try {
      parsed = this.fromClient.push(chunk);
    } catch {
      this.destroy();
      return;
    }
    if (parsed.preamble) this.server.write(parsed.preamble);
    for (const f of parsed.frames) {
      if (isMethod(f, CLASS_CONNECTION, METHOD_START_OK) && f.payload.includes(BLOCKED_CAPABILITY)) this.clientAdvertisedBlocked = true;
      if (isMethod(f, CLASS_BASIC, METHOD_PUBLISH)) {
        this.publishFrames++;
        if (this.blocked) {
          this.publishFramesWhileBlocked++;
          // RabbitMQ stops reading a blocked connection once it publishes; TCP back-pressure does the rest.
          if (this.holdPublishes) this.holding = true;
        }
      }
      if (this.holding) this.held.push(f.raw);
      else this.server.write(f.raw);
    }
  }

  private onServerData(chunk: Buffer): void {
    let parsed: ReturnType<FrameReader['push']>;
    try {
      parsed = this.fromServer.push(chunk);
    } catch {
      this.destroy();
      return;
    }
    for (const f of parsed.frames) {
      if (isMethod(f, CLASS_CONNECTION, METHOD_OPEN_OK)) this.opened = true;
      // Whole frames only: an injected frame can then never split a broker frame.
      this.client.write(f.raw);
    }
  }
}

export interface AmqpFrameProxyOptions {
  /** @default '127.0.0.1' */
  upstreamHost?: string;
  /** @default 5672 */
  upstreamPort?: number;
  /** Stop forwarding a blocked connection's bytes from its first publish until unblocked, as RabbitMQ does. @default true */
  holdPublishesWhileBlocked?: boolean;
}

/** Listens on 127.0.0.1:<ephemeral>; point a `rabbit://user:pass@127.0.0.1:<port>/` URL at it. */
export class AmqpFrameProxy {
  private readonly conns: ProxiedConnection[] = [];
  private nextId = 1;

  private readonly server: Server;
  private listeningPort = 0;

  private constructor(options: AmqpFrameProxyOptions) {
    const host = options.upstreamHost ?? '127.0.0.1';
    const upstreamPort = options.upstreamPort ?? 5672;
    const hold = options.holdPublishesWhileBlocked ?? true;
    this.server = createServer({ noDelay: true }, (client) => {
      // Nothing reaches the broker before the upstream is connected: net.Socket buffers writes.
      const upstream = connect({ host, port: upstreamPort, noDelay: true });
      this.conns.push(new ProxiedConnection(this.nextId++, client, upstream, hold));
    });
  }

  static async start(options: AmqpFrameProxyOptions = {}): Promise<AmqpFrameProxy> {
    const proxy = new AmqpFrameProxy(options);
    await new Promise<void>((resolve, reject) => {
      proxy.server.once('error', reject);
      proxy.server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = proxy.server.address();
    if (!address || typeof address === 'string') throw new Error('proxy has no TCP address');
    proxy.listeningPort = address.port;
    return proxy;
  }

  /** The local port to connect to. */
  get port(): number {
    return this.listeningPort;
  }

  /** Connections still open. */
  get connections(): readonly ProxiedConnection[] {
    return this.conns.filter((c) => !c.closed);
  }

  /** Open connections past the handshake. */
  get openedConnections(): readonly ProxiedConnection[] {
    return this.connections.filter((c) => c.opened);
  }

  /** Injects `connection.blocked(reason)` into every opened connection; returns how many. */
  block(reason: string): number {
    const targets = this.openedConnections;
    for (const c of targets) c.block(reason);
    return targets.length;
  }

  /** Injects `connection.unblocked` into every blocked connection; returns how many. */
  unblock(): number {
    const targets = this.connections.filter((c) => c.blocked);
    for (const c of targets) c.unblock();
    return targets.length;
  }

  /** Freezes every open connection (see {@link ProxiedConnection.freeze}); returns how many. */
  freeze(): number {
    const targets = this.connections;
    for (const c of targets) c.freeze();
    return targets.length;
  }

  async close(): Promise<void> {
    for (const c of this.conns) c.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
