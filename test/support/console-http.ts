// HTTP requests to a running console (startConsole) with full control of the headers (Host,
// Origin, Sec-Fetch-Site, which fetch() will not let a test set), recording every response so a
// test can check that none of them carries a secret.
import { request as httpRequest } from 'node:http';

/** One response as the wire carried it. */
export interface ConsoleResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  /** The parsed JSON body (undefined when it is not JSON). */
  readonly json: any;
}

export interface ConsoleRequest {
  method?: string;
  headers?: Record<string, string>;
  /** A string is sent as is; anything else as JSON. */
  body?: unknown;
}

/** A client of one console; `seen` holds the raw text of every response (status line, headers, body). */
export class ConsoleHttp {
  readonly seen: string[] = [];
  readonly base: URL;

  constructor(url: string) {
    this.base = new URL(url);
  }

  get(path: string, headers: Record<string, string> = {}): Promise<ConsoleResponse> {
    return this.request(path, { headers });
  }

  /** A write as the page sends it: same origin, JSON, with `token` in X-Tidings-Token (when given). */
  post(path: string, body: unknown, token: string | undefined, headers: Record<string, string> = {}): Promise<ConsoleResponse> {
    const base: Record<string, string> = { 'Content-Type': 'application/json', Origin: this.base.origin, 'Sec-Fetch-Site': 'same-origin' };
    if (token !== undefined) base['X-Tidings-Token'] = token;
    return this.request(path, { method: 'POST', headers: { ...base, ...headers }, body });
  }

  request(path: string, init: ConsoleRequest = {}): Promise<ConsoleResponse> {
    const payload = init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host: this.base.hostname.replace(/^\[|\]$/g, ''),
          port: this.base.port,
          path,
          method: init.method ?? 'GET',
          headers: { Host: this.base.host, ...(payload !== undefined ? { 'Content-Length': String(Buffer.byteLength(payload)) } : {}), ...init.headers },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            this.seen.push(`${res.statusCode} ${JSON.stringify(res.headers)}\n${text}`);
            let json: unknown;
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
          });
          res.on('error', reject);
        },
      );
      // A server may answer (413) and close before it read everything: that is the answer, not an error.
      req.on('error', reject);
      req.end(payload);
    });
  }
}
