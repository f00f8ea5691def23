// The shapes of the console's API answers that the page shares with the server: the page's
// bundle imports these types (erased at build time), so each is written once.
export type { Inspection, PoolView } from '../contract/inspection.js';

/** One bucket of the traffic page. Latencies in ms; null when the bucket saw no timed operation. */
export interface TrafficBucket {
  /** Start of the bucket, epoch ms. */
  readonly at: number;
  /** RPC calls made by clients plus calls handled by servers in this process. */
  readonly calls: number;
  /** RPC casts made plus casts handled. */
  readonly casts: number;
  /** Notifications sent plus notifications handled. */
  readonly notifications: number;
  /** Failed calls and casts (client and server side), failed notification sends and requeued notifications. */
  readonly errors: number;
  /** Median latency of the bucket's timed operations (call round trips, dispatches, notification sends and dispatches), ms. */
  readonly p50: number | null;
  /** 90th percentile latency, ms. */
  readonly p90: number | null;
  /** 99th percentile latency, ms. */
  readonly p99: number | null;
}

/** What `GET /api/traffic` returns. */
export interface TrafficView {
  /** When recording began, epoch ms. */
  readonly since: number;
  /** Width of a bucket, ms (TRAFFIC_BUCKET_MS). */
  readonly bucketMs: number;
  /** Oldest first; buckets without traffic are left out. */
  readonly buckets: TrafficBucket[];
}

