// The in-process broker behind memory://: RabbitMQ's model (exchanges, named queues, bindings,
// round-robin consumers with prefetch, ack/reject/requeue) so that memory:// behaves like rabbit://.
// One broker per virtual host, process-global, so two transports on the same URL talk.
import { InvalidArgument } from '../../errors.js';

export type ExchangeType = 'topic' | 'fanout';

/** A message as a consumer receives it. `body` is the JSON string that was published. */
export interface MemoryDelivery {
  readonly body: string;
  readonly exchange: string;
  readonly routingKey: string;
  readonly queue: string;
  /** True when the message was handed out before and given back (requeue, consumer closed). */
  readonly redelivered: boolean;
  /** Per-consumer sequence number used to ack or reject the message. */
  readonly deliveryTag: number;
}

export interface PublishOptions {
  /** Per-message TTL in ms (AMQP `expiration`): an expired message is dropped, never delivered. */
  expirationMs?: number;
}

export interface ConsumeOptions {
  /** Most unacknowledged messages this consumer holds; 0 = unlimited. @default 0 */
  prefetch?: number;
  /** Messages count as acknowledged when delivered. @default false */
  noAck?: boolean;
}

/** What the consumer callback receives; it MUST NOT throw (a throw is swallowed). */
export type ConsumerCallback = (delivery: MemoryDelivery) => void;

/** Counters for tests and debugging. */
export interface QueueStats {
  /** Messages waiting for a consumer. */
  readonly ready: number;
  /** Messages delivered and not yet acknowledged. */
  readonly unacked: number;
  readonly consumers: number;
  /** Messages rejected without requeue (e.g. malformed). */
  readonly rejected: number;
  /** Messages given back for redelivery. */
  readonly requeued: number;
}

interface StoredMessage {
  readonly body: string;
  readonly exchange: string;
  readonly routingKey: string;
  readonly expiresAt?: number;
  redelivered: boolean;
}

/** FIFO with O(1) push, shift and unshift (no Array#shift on the hot path). */
class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  unshift(item: T): void {
    if (this.head > 0) this.items[--this.head] = item;
    else this.items.unshift(item);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}

/** A subscription on one queue. Obtained from `MemoryBroker.consume()`. */
export class MemoryConsumer {
  private static nextTag = 1;
  readonly tag = `memory-${MemoryConsumer.nextTag++}`;
  private readonly unacked = new Map<number, StoredMessage>();
  private nextDelivery = 1;
  private active = true;

  /** @internal */
  constructor(
    private readonly queue: MemoryQueue,
    private readonly callback: ConsumerCallback,
    readonly prefetch: number,
    readonly noAck: boolean,
  ) {}

  /** False once cancelled or closed: no new messages are delivered. */
  get isActive(): boolean {
    return this.active;
  }

  get unackedCount(): number {
    return this.unacked.size;
  }

  /** Acknowledges one delivery. Returns false when it is unknown (already settled, consumer closed). */
  ack(deliveryTag: number): boolean {
    if (!this.unacked.delete(deliveryTag)) return false;
    if (this.active) this.queue.schedule();
    return true;
  }

  /** Rejects one delivery; with `requeue` it goes back to the head of the queue, marked redelivered. */
  reject(deliveryTag: number, requeue: boolean): boolean {
    const message = this.unacked.get(deliveryTag);
    if (!message) return false;
    this.unacked.delete(deliveryTag);
    if (requeue) this.queue.requeue([message]);
    else this.queue.countRejected();
    this.queue.schedule();
    return true;
  }

  /**
   * Stops new deliveries (AMQP `basic.cancel`). Messages already delivered stay with this
   * consumer until acked, rejected or `close()`d, so a stopping listener can still finish them.
   */
  cancel(): void {
    if (!this.active) return;
    this.active = false;
    this.queue.removeConsumer(this);
  }

  /** Cancels and gives every unacknowledged message back to the queue (AMQP channel close). */
  close(): void {
    this.cancel();
    if (this.unacked.size === 0) return;
    const messages = [...this.unacked.values()];
    this.unacked.clear();
    this.queue.requeue(messages);
    this.queue.schedule();
  }

  /** @internal */
  hasCapacity(): boolean {
    return this.noAck || this.prefetch <= 0 || this.unacked.size < this.prefetch;
  }

  /** @internal */
  deliver(message: StoredMessage): void {
    const deliveryTag = this.nextDelivery++;
    if (!this.noAck) this.unacked.set(deliveryTag, message);
    const delivery: MemoryDelivery = {
      body: message.body,
      exchange: message.exchange,
      routingKey: message.routingKey,
      queue: this.queue.name,
      redelivered: message.redelivered,
      deliveryTag,
    };
    try {
      this.callback(delivery);
    } catch {
      // A consumer callback must not throw; the message stays unacked as on a real broker.
    }
  }
}

/** A named queue: ready messages plus round-robin consumers. */
export class MemoryQueue {
  private readonly ready = new Fifo<StoredMessage>();
  private consumers: MemoryConsumer[] = [];
  private next = 0;
  private rejected = 0;
  private requeued = 0;
  /** (exchange, routing key) pairs this queue is bound with, for unbinding on delete. */
  readonly bindings = new Set<string>();

  /** @internal */
  constructor(
    readonly name: string,
    private readonly broker: MemoryBroker,
  ) {}

  stats(): QueueStats {
    let unacked = 0;
    for (const c of this.consumers) unacked += c.unackedCount;
    return { ready: this.ready.size, unacked, consumers: this.consumers.length, rejected: this.rejected, requeued: this.requeued };
  }

  get depth(): number {
    return this.ready.size;
  }

  /** @internal */
  enqueue(message: StoredMessage): void {
    this.ready.push(message);
    if (this.consumers.length > 0) this.schedule();
  }

  /** @internal */
  requeue(messages: StoredMessage[]): void {
    for (let i = messages.length - 1; i >= 0; i--) {
      messages[i].redelivered = true;
      this.ready.unshift(messages[i]);
    }
    this.requeued += messages.length;
  }

  /** @internal */
  countRejected(): void {
    this.rejected++;
  }

  /** @internal */
  addConsumer(consumer: MemoryConsumer): void {
    this.consumers.push(consumer);
    this.schedule();
  }

  /** @internal */
  removeConsumer(consumer: MemoryConsumer): void {
    const i = this.consumers.indexOf(consumer);
    if (i < 0) return;
    this.consumers.splice(i, 1);
    if (this.next > i) this.next--;
  }

  /** @internal Deletes every consumer (queue deleted) and every message. */
  destroy(): void {
    for (const c of [...this.consumers]) c.cancel();
    this.ready.clear();
  }

  /** @internal Asks the broker for a dispatch pass on the next turn of the event loop. */
  schedule(): void {
    this.broker.scheduleDispatch(this);
  }

  /** @internal Hands ready messages to consumers with capacity, round-robin. */
  dispatch(now: number): void {
    while (this.ready.size > 0) {
      const consumer = this.pickConsumer();
      if (!consumer) return;
      const message = this.ready.shift()!;
      if (message.expiresAt !== undefined && message.expiresAt <= now) continue;
      consumer.deliver(message);
    }
  }

  private pickConsumer(): MemoryConsumer | undefined {
    const n = this.consumers.length;
    for (let k = 0; k < n; k++) {
      const i = (this.next + k) % n;
      const c = this.consumers[i];
      if (c.isActive && c.hasCapacity()) {
        this.next = (i + 1) % n;
        return c;
      }
    }
    return undefined;
  }
}

interface Exchange {
  readonly type: ExchangeType;
  /** topic: routing key -> queues bound with exactly that key; fanout: every queue under any key. */
  readonly bindings: Map<string, Set<MemoryQueue>>;
}

/**
 * One virtual host. The default exchange `''` routes to the queue named by the routing key;
 * topic exchanges route on the exact routing key; fanout exchanges copy to every bound queue.
 * A message nobody is bound for is dropped, as RabbitMQ does.
 */
export class MemoryBroker {
  private readonly exchanges = new Map<string, Exchange>();
  private readonly queues = new Map<string, MemoryQueue>();
  private readonly dirty = new Set<MemoryQueue>();
  private scheduled = false;

  constructor(readonly vhost: string) {}

  /** Declares an exchange; re-declaring an existing one is a no-op (its first type stays). */
  declareExchange(name: string, type: ExchangeType = 'topic'): void {
    if (name === '' || this.exchanges.has(name)) return;
    this.exchanges.set(name, { type, bindings: new Map() });
  }

  /** Declares a queue (idempotent) and returns it. */
  declareQueue(name: string): MemoryQueue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new MemoryQueue(name, this);
      this.queues.set(name, queue);
    }
    return queue;
  }

  hasQueue(name: string): boolean {
    return this.queues.has(name);
  }

  queueNames(): string[] {
    return [...this.queues.keys()];
  }

  /** Deletes a queue with its messages and bindings; its consumers are cancelled. */
  deleteQueue(name: string): void {
    const queue = this.queues.get(name);
    if (!queue) return;
    this.queues.delete(name);
    for (const key of queue.bindings) {
      const sep = key.indexOf('\0');
      this.exchanges.get(key.slice(0, sep))?.bindings.get(key.slice(sep + 1))?.delete(queue);
    }
    queue.bindings.clear();
    queue.destroy();
  }

  /** Binds a declared queue to a declared exchange under `routingKey`. */
  bindQueue(queueName: string, exchangeName: string, routingKey: string): void {
    const queue = this.queues.get(queueName);
    const exchange = this.exchanges.get(exchangeName);
    if (!queue) throw new InvalidArgument('queue', 'the name of a declared queue', queueName);
    if (!exchange) throw new InvalidArgument('exchange', 'the name of a declared exchange', exchangeName);
    let set = exchange.bindings.get(routingKey);
    if (!set) exchange.bindings.set(routingKey, (set = new Set()));
    set.add(queue);
    queue.bindings.add(`${exchangeName}\0${routingKey}`);
  }

  /**
   * Routes a JSON string body and returns how many queues took a copy (0 = dropped).
   * Delivery happens on a later turn of the event loop, never inside this call.
   */
  publish(exchangeName: string, routingKey: string, body: string, options: PublishOptions = {}): number {
    const expiresAt = options.expirationMs !== undefined ? performance.now() + options.expirationMs : undefined;
    if (exchangeName === '') {
      const queue = this.queues.get(routingKey);
      if (!queue) return 0;
      queue.enqueue({ body, exchange: exchangeName, routingKey, expiresAt, redelivered: false });
      return 1;
    }
    const exchange = this.exchanges.get(exchangeName);
    if (!exchange) return 0;
    let targets: Iterable<MemoryQueue> | undefined;
    let count: number;
    if (exchange.type === 'topic') {
      const set = exchange.bindings.get(routingKey);
      targets = set;
      count = set?.size ?? 0;
    } else {
      const all = new Set<MemoryQueue>();
      for (const set of exchange.bindings.values()) for (const queue of set) all.add(queue);
      targets = all;
      count = all.size;
    }
    if (!targets) return 0;
    // Each queue gets its own record: redelivered/requeue state is per queue, as on a broker.
    for (const queue of targets) queue.enqueue({ body, exchange: exchangeName, routingKey, expiresAt, redelivered: false });
    return count;
  }

  /**
   * Test hook: publishes any string as-is (e.g. a malformed body) to an exchange, `''` for a
   * queue by name. Returns the number of queues it reached.
   */
  publishRaw(exchange: string, routingKey: string, body: string): number {
    return this.publish(exchange, routingKey, body);
  }

  /** Starts a consumer on a declared queue. */
  consume(queueName: string, callback: ConsumerCallback, options: ConsumeOptions = {}): MemoryConsumer {
    const queue = this.queues.get(queueName);
    if (!queue) throw new InvalidArgument('queue', 'the name of a declared queue', queueName);
    const consumer = new MemoryConsumer(queue, callback, options.prefetch ?? 0, options.noAck ?? false);
    queue.addConsumer(consumer);
    return consumer;
  }

  /** Messages ready in a queue (not counting delivered-but-unacked ones); 0 when it does not exist. */
  queueDepth(name: string): number {
    return this.queues.get(name)?.depth ?? 0;
  }

  /** Counters of a queue, or undefined when it does not exist. */
  queueStats(name: string): QueueStats | undefined {
    return this.queues.get(name)?.stats();
  }

  /** Deletes every queue and exchange. */
  reset(): void {
    for (const name of [...this.queues.keys()]) this.deleteQueue(name);
    this.exchanges.clear();
    this.dirty.clear();
  }

  /** @internal One dispatch pass per event-loop turn for all queues that changed. */
  scheduleDispatch(queue: MemoryQueue): void {
    this.dirty.add(queue);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    // Snapshot: work caused by this pass (a requeue, a reply) waits for the next turn, so a
    // consumer that requeues forever cannot starve timers and I/O.
    const queues = [...this.dirty];
    this.dirty.clear();
    const now = performance.now();
    for (const queue of queues) queue.dispatch(now);
  }
}

const brokers = new Map<string, MemoryBroker>();

/**
 * The process-global broker of a virtual host: `memory://` and `memory:///` use the default
 * broker (`''`), `memory:///iso-1` an isolated one. Created on first use.
 */
export function getMemoryBroker(vhost = ''): MemoryBroker {
  let broker = brokers.get(vhost);
  if (!broker) {
    broker = new MemoryBroker(vhost);
    brokers.set(vhost, broker);
  }
  return broker;
}

/** Empties and forgets every broker (tests). Consumers of live transports are cancelled. */
export function resetMemoryBrokers(): void {
  for (const broker of brokers.values()) broker.reset();
  brokers.clear();
}
