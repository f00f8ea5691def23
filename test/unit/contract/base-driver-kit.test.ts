// What BaseDriver does for a driver author: it owns the calls waiting for their reply (register,
// feed, fail at cleanup) and refuses RPC on a driver declaring `rpc: false` before the driver runs.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MessageDeliveryFailure, MessagingTimeout, NotSupportedError } from '../../../src/core/errors.js';
import { createMemoryLogger } from '../../../src/core/logger.js';
import { Target } from '../../../src/core/target.js';
import { TransportURL } from '../../../src/core/transport-url.js';
import { BaseDriver, type SendOptions } from '../../../src/contract/base-driver.js';
import type { DriverCapabilities } from '../../../src/contract/capabilities.js';
import * as contract from '../../../src/contract/index.js';
import type { PendingCall } from '../../../src/contract/pending-replies.js';
import { defaultRemoteErrorRegistry, serializeFailure } from '../../../src/contract/remote-error.js';
import type { Context, DriverMessage } from '../../../src/contract/types.js';

const ALL: DriverCapabilities = Object.freeze({ rpc: true, fanout: true, requeue: true, pools: true, callMonitor: true, durableNotifications: true });
const NO_RPC: DriverCapabilities = Object.freeze({ ...ALL, rpc: false, fanout: false, callMonitor: false });

/** A driver whose calls go nowhere: the test plays the broker and feeds the replies. */
class LoopDriver extends BaseDriver {
  readonly name = 'loop';
  readonly calls: Array<{ msgId: string; call: PendingCall }> = [];
  sends = 0;
  listens = 0;
  closeSawWaiting?: boolean;
  constructor(readonly capabilities: DriverCapabilities) {
    super({ url: TransportURL.parse('loop://h/'), defaultExchange: 'openstack', allowedRemoteExmods: [], remoteErrors: defaultRemoteErrorRegistry, logger: createMemoryLogger(), options: {} });
  }
  protected async doSend(target: Target, _ctx: Context, _message: DriverMessage, options: SendOptions): Promise<unknown> {
    this.sends++;
    if (!options.waitForReply) return undefined;
    const msgId = `m${this.calls.length}`;
    const call = this.registerCall(msgId, target.topic as string, options);
    this.calls.push({ msgId, call });
    return call.promise;
  }
  protected doSendNotification(): Promise<void> {
    return Promise.resolve();
  }
  protected doListen(): Promise<never> {
    this.listens++;
    return Promise.reject(new Error('the driver was reached'));
  }
  protected doListenForNotifications(): Promise<never> {
    return Promise.reject(new Error('unused'));
  }
  protected close(): Promise<void> {
    this.closeSawWaiting = this.calls.some((c) => !c.call.isOver);
    return Promise.resolve();
  }
  /** For the test: a driver whose send was already past BaseDriver's open check. */
  registerLate(topic: string, options: SendOptions): PendingCall {
    return this.registerCall('late', topic, options);
  }
  reply(reply: DriverMessage): void {
    this.acceptReply(reply);
  }
  replyBody(body: string): void {
    this.acceptReplyBody(body, { from: 'test' });
  }
}

describe('BaseDriver owns the pending replies', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());
  const topic = new Target({ topic: 't' });

  it('a call registered with registerCall resolves with the reply fed to acceptReply / acceptReplyBody', async () => {
    const d = new LoopDriver(ALL);
    const a = d.send(topic, {}, { method: 'm', args: {} }, { waitForReply: true });
    const b = d.send(topic, {}, { method: 'm', args: {} }, { waitForReply: true });
    d.reply({ _msg_id: 'm0', result: 1, failure: null, ending: true });
    d.replyBody(JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify({ _msg_id: 'm1', result: null, failure: serializeFailure(new TypeError('bad')), ending: true }) }));
    await expect(a).resolves.toBe(1);
    await expect(b).rejects.toThrow(/bad/);
  });

  it('applies the send options: timeout, call-monitor heartbeats, collectReplies', async () => {
    const d = new LoopDriver(ALL);
    const timed = d.send(topic, {}, { method: 'm', args: {} }, { waitForReply: true, timeout: 100 }).catch((e: unknown) => e);
    const monitored = d.send(topic, {}, { method: 'm', args: {} }, { waitForReply: true, callMonitorTimeout: 100 });
    const collected = d.send(new Target({ topic: 't', fanout: true }), {}, { method: 'm', args: {} }, { waitForReply: true, collectReplies: true, timeout: 500 });
    await vi.advanceTimersByTimeAsync(80);
    d.reply({ _msg_id: 'm1', result: null, failure: null, ending: false }); // heartbeat
    d.reply({ _msg_id: 'm2', result: 'a', failure: null, ending: true });
    d.reply({ _msg_id: 'm2', result: 'b', failure: null, ending: true });
    await vi.advanceTimersByTimeAsync(80);
    expect(await timed).toBeInstanceOf(MessagingTimeout);
    d.reply({ _msg_id: 'm1', result: 'done', failure: null, ending: true });
    await expect(monitored).resolves.toBe('done');
    await vi.advanceTimersByTimeAsync(400);
    await expect(collected).resolves.toEqual([
      { ok: true, result: 'a' },
      { ok: true, result: 'b' },
    ]);
  });

  it('cleanup() fails every waiting call with MessageDeliveryFailure before the driver closes', async () => {
    const d = new LoopDriver(ALL);
    const waiting = d.send(topic, {}, { method: 'm', args: {} }, { waitForReply: true }).catch((e: unknown) => e);
    await d.cleanup();
    expect(await waiting).toBeInstanceOf(MessageDeliveryFailure);
    expect(d.closeSawWaiting).toBe(false);
  });

  it('a call registered after cleanup() failed the waiting ones fails at once instead of hanging', async () => {
    const d = new LoopDriver(ALL);
    await d.cleanup();
    const late = d.registerLate('t', { waitForReply: true });
    await expect(late.promise).rejects.toThrow(MessageDeliveryFailure);
  });
});

describe('a driver declaring rpc: false', () => {
  const d = new LoopDriver(NO_RPC);

  it('is refused RPC sends and RPC listens with NotSupportedError before the driver runs', async () => {
    await expect(d.send(new Target({ topic: 't' }), {}, { method: 'm', args: {} })).rejects.toThrow(NotSupportedError);
    await expect(d.send(new Target({ topic: 't' }), {}, { method: 'm', args: {} }, { waitForReply: true, timeout: 10 })).rejects.toThrow(/loop driver does not support RPC/);
    await expect(d.listen(new Target({ topic: 't', server: 's' }))).rejects.toThrow(NotSupportedError);
    expect(d.sends).toBe(0);
    expect(d.listens).toBe(0);
  });

  it('fails requireFeatures({ rpc: true }) at once; a driver with rpc passes it', () => {
    expect(() => d.requireFeatures({ rpc: true })).toThrow(NotSupportedError);
    expect(() => d.requireFeatures({ rpc: false })).not.toThrow();
    expect(() => new LoopDriver(ALL).requireFeatures({ rpc: true })).not.toThrow();
  });

  it('still sends notifications', async () => {
    await expect(d.sendNotification(new Target({ topic: 'n.info' }), {}, { event_type: 'e' })).resolves.toBeUndefined();
  });
});

describe('tidings/driver', () => {
  it('exports the kit the guide lists, AscendingIds included', () => {
    for (const name of ['BaseDriver', 'PendingReplies', 'AscendingIds', 'DuplicateMessageChecker', 'Fifo', 'AsyncQueue', 'StopWatch', 'PollStyleListener', 'requireCapability']) {
      expect(contract, name).toHaveProperty(name);
    }
  });
});
