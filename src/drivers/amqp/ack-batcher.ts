// Notification acks of one listener channel, coalesced: one basic.ack(multiple) per event-loop
// turn for the deliveries settled in that turn, instead of one frame and one socket write each.
import type { Channel, Message } from 'amqplib';
import { AscendingIds } from '../../structures/ascending-ids.js';
import type { Logger } from '../../core/logger.js';

/**
 * Tracks the deliveries of ONE channel that are handed out for later settling. `multiple` acks
 * every delivery up to a tag that the broker still holds unacked, so a coalesced ack only covers
 * tags below the oldest tracked, still unsettled delivery; the others are acked one by one.
 * Every delivery is tracked on arrival; one rejected on the channel directly (malformed) is untracked.
 */
export class AckBatcher {
  /** Tags handed out and not settled yet (a channel delivers them in ascending order). */
  private readonly outstanding = new AscendingIds();
  private acked: Message[] = [];
  private scheduled = false;

  constructor(
    private readonly channel: Channel,
    private readonly logger: Logger,
  ) {}

  /** A delivery handed out to be acked or requeued later. */
  track(message: Message): void {
    this.outstanding.add(message.fields.deliveryTag);
  }

  /** Forgets a tracked delivery settled on the channel directly (rejected). */
  untrack(message: Message): void {
    this.outstanding.delete(message.fields.deliveryTag);
  }

  /** Acks at the end of this turn, together with the turn's other acks. */
  ack(message: Message): void {
    this.outstanding.delete(message.fields.deliveryTag);
    this.acked.push(message);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  /** Requeues at once. Throws like amqplib when the channel is closed. */
  requeue(message: Message): void {
    this.outstanding.delete(message.fields.deliveryTag);
    this.channel.nack(message, false, true);
  }

  /** Sends the pending acks now (also before the channel is closed on purpose). */
  readonly flush = (): void => {
    this.scheduled = false;
    const acked = this.acked;
    if (acked.length === 0) return;
    this.acked = [];
    const limit = this.outstanding.lowest() ?? Infinity;
    let upTo: Message | undefined;
    try {
      for (const m of acked) {
        if (m.fields.deliveryTag > limit) this.channel.ack(m);
        else if (!upTo || m.fields.deliveryTag > upTo.fields.deliveryTag) upTo = m;
      }
      if (upTo) this.channel.ack(upTo, true);
    } catch (err) {
      // The channel closed: the broker redelivers these and the dedup window drops them.
      this.logger.debug('Could not send acknowledgements; the channel is gone', { messages: acked.length, err });
    }
  };
}
