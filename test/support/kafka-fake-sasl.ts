// A fake Kafka broker on loopback that only does the SASL part of a connection and refuses it:
// ApiVersions (it has SaslHandshake v1 and SaslAuthenticate v0), SaslHandshake (records the
// mechanism), SaslAuthenticate (records the client's first message, answers
// SASL_AUTHENTICATION_FAILED). librdkafka's mock has no SASL; this shows what a client sends.
import { createServer, type Server, type Socket } from 'node:net';

export interface FakeSaslBroker {
  readonly port: number;
  /** Mechanisms asked for in SaslHandshake requests. */
  readonly mechanisms: string[];
  /** The client's SaslAuthenticate payloads (PLAIN: `\0user\0password`; SCRAM: `n,,n=user,r=...`). */
  readonly authentications: Buffer[];
  close(): Promise<void>;
}

const API_VERSIONS = 18;
const SASL_HANDSHAKE = 17;
const SASL_AUTHENTICATE = 36;
const SASL_AUTHENTICATION_FAILED = 58;

function frame(correlationId: number, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeInt32BE(4 + body.length, 0);
  head.writeInt32BE(correlationId, 4);
  return Buffer.concat([head, body]);
}

function int16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
}
function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}
function str(s: string): Buffer {
  const bytes = Buffer.from(s, 'utf8');
  return Buffer.concat([int16(bytes.length), bytes]);
}

export async function startFakeSaslBroker(): Promise<FakeSaslBroker> {
  const mechanisms: string[] = [];
  const authentications: Buffer[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let buf = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        const size = buf.readInt32BE(0);
        const req = buf.subarray(4, 4 + size);
        buf = buf.subarray(4 + size);
        const apiKey = req.readInt16BE(0);
        const apiVersion = req.readInt16BE(2);
        const correlationId = req.readInt32BE(4);
        const clientIdLength = req.readInt16BE(8);
        const body = req.subarray(10 + Math.max(clientIdLength, 0));
        if (apiKey === API_VERSIONS) {
          const apis = [
            [API_VERSIONS, 0, 2],
            [SASL_HANDSHAKE, 0, 1],
            [SASL_AUTHENTICATE, 0, 0],
          ];
          const parts = [int16(0), int32(apis.length), ...apis.flatMap(([k, min, max]) => [int16(k), int16(min), int16(max)])];
          if (apiVersion >= 1) parts.push(int32(0));
          socket.write(frame(correlationId, Buffer.concat(parts)));
        } else if (apiKey === SASL_HANDSHAKE) {
          const length = body.readInt16BE(0);
          const mechanism = body.subarray(2, 2 + length).toString('utf8');
          mechanisms.push(mechanism);
          socket.write(frame(correlationId, Buffer.concat([int16(0), int32(1), str(mechanism)])));
        } else if (apiKey === SASL_AUTHENTICATE) {
          const length = body.readInt32BE(0);
          authentications.push(Buffer.from(body.subarray(4, 4 + length)));
          socket.write(frame(correlationId, Buffer.concat([int16(SASL_AUTHENTICATION_FAILED), str('Authentication failed: invalid credentials'), int32(0)])));
        } else {
          socket.destroy();
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the fake SASL broker has no port');
  return {
    port: address.port,
    mechanisms,
    authentications,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
