// `tidings/console`: a web console (single-page app and JSON API) over a transport, served by
// node:http from the process that calls startConsole() or from `tidings console`.
export { startConsole, type ConsoleHandle } from './server.js';
export { CONSOLE_DEFAULTS, CONSOLE_TOKEN_ENV, type ConsoleOptions } from './options.js';
export { MAX_DEAD_LETTER_LIMIT } from './api.js';
export { TRAFFIC_BUCKET_MS } from './traffic.js';
export type { TrafficBucket, TrafficView } from './views.js';
export type { PoolSample } from './inspect.js';
export type { Inspection, PoolQuery, PoolView } from '../contract/inspection.js';
