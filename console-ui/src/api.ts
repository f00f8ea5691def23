// The console's JSON API as the page sees it (the shapes src/console serves), and the two ways
// to call it: a GET that throws ApiError on a non-2xx answer, and a write with the token.

import type { Inspection, PoolView, TrafficView } from '../../src/console/views.js';

export type { Inspection, PoolView };
export type { TrafficBucket } from '../../src/console/views.js';
/** What `GET /api/traffic` returns. */
export type Traffic = TrafficView;

export interface Overview {
  readonly driver: string;
  readonly url: string;
  readonly writable: boolean;
  readonly topics: string[];
  readonly notificationTopics: string[];
  readonly refreshMs: number;
  readonly inspection: Inspection;
  readonly version: string;
}

export interface Health {
  readonly connected: boolean;
  readonly blocked: boolean;
  readonly reconnecting: boolean;
  readonly lastError?: { readonly message: string; readonly at: string };
}

export interface Topics {
  readonly configured: string[];
  readonly listed: string[] | null;
}

export interface ServerRow {
  readonly server: string;
  readonly host: string;
  readonly pid: number;
  readonly inFlight: number;
  readonly pingMs: number | null;
}

export interface Servers {
  readonly topic: string;
  readonly expected: number | null;
  readonly servers: ServerRow[];
  readonly at: number;
}

export interface PoolSample {
  readonly at: number;
  readonly address: string;
  readonly pool: string;
  readonly backlog?: number | null;
  readonly consumers?: number | null;
}

export interface DeadLetterRow {
  readonly id: string;
  readonly address: string;
  readonly pool?: string;
  readonly error: string;
  readonly consumer?: string;
  readonly deadAt: string;
  readonly deliveries: number;
}

/** A non-2xx answer: the status and the API's `{ error }` message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function answer<T>(res: Response): Promise<T> {
  const text = await res.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const message = body && typeof body === 'object' && 'error' in body ? String((body as { error: unknown }).error) : `HTTP ${res.status}`;
    throw new ApiError(res.status, message);
  }
  return body as T;
}

/** GET `path` (relative to the page, so a mounted console works too). */
export async function get<T>(path: string, query: Record<string, string> = {}): Promise<T> {
  const qs = new URLSearchParams(query).toString();
  return answer<T>(await fetch(`api/${path}${qs ? `?${qs}` : ''}`, { headers: { accept: 'application/json' } }));
}

/** POST a write action with the operator's token. */
export async function post<T>(path: string, body: unknown, token: string): Promise<T> {
  const res = await fetch(`api/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tidings-token': token },
    body: JSON.stringify(body),
  });
  return answer<T>(res);
}
