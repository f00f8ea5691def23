// The reply topics of this process, reused: a transport leases one (`reply_<hex>`) for its life
// and gives it back at cleanup, so short-lived transports do not leave a topic each behind (the
// topics are not deleted: a server still answering a late call would auto-create one again).
import { newReplyTopic } from './topology.js';

/** Reply topics no live transport of this process reads. */
const free: string[] = [];

/**
 * A reply topic no other live transport of this process reads: one given back earlier, else a
 * new `reply_<hex>`. At most as many exist as transports were ever alive at once. A late reply
 * to an earlier holder is read by the next one and dropped (no call of its waits for that id).
 */
export function leaseReplyTopic(): string {
  return free.pop() ?? newReplyTopic();
}

/** Gives `topic` back once its transport stopped reading it. */
export function releaseReplyTopic(topic: string): void {
  if (!free.includes(topic)) free.push(topic);
}
