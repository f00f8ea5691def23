// The driver contract: what a backend implements and what the façades consume.
export * from './base-driver.js';
export * from './capabilities.js';
export * from './incoming-message.js';
export * from './listener.js';
export * from './poll-style-listener.js';
export * from './async-queue.js';
export * from './stopwatch.js';
export * from './envelope.js';
export * from './remote-error.js';
export * from './dedup.js';
export * from './wire.js';
export * from './types.js';
export * from './addressing.js';
export * from './pending-replies.js';
export * from './inbound.js';
export * from './messages.js';
export * from './options.js';
