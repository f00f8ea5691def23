// Small in-test implementations of the driver contract (our own classes, no broker mocks).
import { IncomingMessage } from '../../../src/contract/incoming-message.js';
import { BufferedPollStyleListener, type PollOptions } from '../../../src/contract/poll-style-listener.js';

/** A notification-like message that records what happened to it. */
export class FakeMessage extends IncomingMessage {
  acked = 0;
  requeued = 0;
  readonly notification = { event_type: 'fake', priority: 'INFO', payload: null };

  constructor(readonly n: number) {
    super({}, `m-${n}`);
  }

  async acknowledge(): Promise<void> {
    this.acked++;
  }

  async requeue(): Promise<void> {
    this.requeued++;
  }
}

/** A BufferedPollStyleListener whose "broker" is the test calling deliver(). */
export class FakeBufferedListener extends BufferedPollStyleListener<FakeMessage> {
  stopCalls = 0;
  cleanupCalls = 0;
  polls: PollOptions[] = [];
  /** When > 0, the next poll() calls throw this many times. */
  failNextPolls = 0;

  override poll(options: PollOptions = {}): Promise<FakeMessage[]> {
    this.polls.push(options);
    if (this.failNextPolls > 0) {
      this.failNextPolls--;
      return Promise.reject(new Error('poll exploded'));
    }
    return super.poll(options);
  }

  override async stop(): Promise<void> {
    this.stopCalls++;
    await super.stop();
  }

  async cleanup(): Promise<void> {
    this.cleanupCalls++;
  }

  /** Messages still in the buffer. */
  get buffered(): number {
    return this.buffer.size;
  }
}
