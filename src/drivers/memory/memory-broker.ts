// The in-process broker behind memory://: RabbitMQ's model (exchanges, named queues, bindings,
// round-robin consumers with prefetch, ack/reject/requeue, per-message expiration) so that
// memory:// behaves like rabbit://. One broker per virtual host, process-global, so two
// transports on the same URL talk.
import { Fifo } from '../../structures/fifo.js';
import { InvalidArgument } from '../../core/errors.js';

/** A message as a consumer receives it. `body` is the JSON string that was published. */
export interface MemoryDelivery {
  readonly body: string;
  readonly exchange: string;
  readonly routingKey: string;
  readonly queue: string;
  /** True when the message was handed out before and given back (requeue, consumer closed). */
  readonly redelivered: boolean;
  /** How often it was handed out, counting this delivery (1 the first time). */
  readonly deliveries: number;
  /** Per-consumer sequence number used to ack or reject the message. */
  readonly deliveryTag: number;
}

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
  /** Times handed out so far: more than once means given back (requeue, consumer closed) and redelivered. */
  deliveries: number;
}

/** A subscription on one queue (AMQP `basic.consume`). Obtained from `MemoryBroker.consume()`. */
export class MemoryConsumer {
  private readonly unacked = new Map<number, StoredMessage>();
  private nextTag = 1;
  private active = true;

  /** @internal */
  constructor(
    private readonly queue: MemoryQueue,
    private readonly callback: (delivery: MemoryDelivery) => void,
    private readonly prefetch: number,
    private readonly noAck: boolean,
  ) {}

  /** False once cancelled or closed: no new messages are delivered. */
  get isActive(): boolean {
    return this.active;
  }

  /** @internal */
  get unackedCount(): number {
    return this.unacked.size;
  }

  /** Acknowledges one delivery. Returns false when it is unknown (already settled, consumer closed). */
  ack(deliveryTag: number): boolean {
    if (!this.unacked.delete(deliveryTag)) return false;
    // Only an ack that frees a full consumer lets the queue deliver more.
    if (this.active && this.unacked.size + 1 === this.prefetch) this.queue.schedule();
    return true;
  }

  /** Rejects one delivery; with `requeue` it goes back to the head of the queue and comes again redelivered. */
  reject(deliveryTag: number, requeue: boolean): boolean {
    const message = this.unacked.get(deliveryTag);
    if (!message) return false;
    this.unacked.delete(deliveryTag);
    this.queue.giveBack([message], requeue);
    return true;
  }

  /** Back to the head of the queue as if this consumer had never taken it: the hand-out is not counted as a delivery. */
  giveBack(deliveryTag: number): boolean {
    const message = this.unacked.get(deliveryTag);
    if (message) message.deliveries--;
    return this.reject(deliveryTag, true);
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
    this.queue.giveBack(messages, true);
  }

  /** @internal Unacknowledged messages published under `routingKey`. */
  unackedFor(routingKey: string): number {
    let n = 0;
    for (const m of this.unacked.values()) if (m.routingKey === routingKey) n++;
    return n;
  }

  /** @internal */
  hasCapacity(): boolean {
    return this.noAck || this.prefetch <= 0 || this.unacked.size < this.prefetch;
  }

  /** @internal */
  deliver(message: StoredMessage): void {
    const deliveryTag = this.nextTag++;
    if (!this.noAck) this.unacked.set(deliveryTag, message);
    const { body, exchange, routingKey } = message;
    const deliveries = ++message.deliveries;
    try {
      this.callback({ body, exchange, routingKey, queue: this.queue.name, redelivered: deliveries > 1, deliveries, deliveryTag });
    } catch {
      // A consumer callback must not throw; the message stays unacked as on a real broker.
    }
  }
}

/** @internal A named queue: ready messages plus round-robin consumers. */
export class MemoryQueue {
  private ready = new Fifo<StoredMessage>();
  private readonly consumers: MemoryConsumer[] = [];
  private next = 0;
  private rejected = 0;
  private requeued = 0;
  private scheduled = false;
  /** True during a dispatch pass; messages requeued meanwhile wait in `givenBack` for the next pass. */
  private dispatching = false;
  private givenBack: StoredMessage[] = [];
  /** The exchanges' binding sets this queue is in, so that deleting it unbinds it. */
  readonly boundIn = new Set<Set<MemoryQueue>>();

  constructor(readonly name: string) {}

  stats(): QueueStats {
    const unacked = this.consumers.reduce((n, c) => n + c.unackedCount, 0);
    return { ready: this.ready.size, unacked, consumers: this.consumers.length, rejected: this.rejected, requeued: this.requeued };
  }

  /** Ready and unacknowledged messages that were published under `routingKey` (pool inspection). */
  countsFor(routingKey: string): { ready: number; unacked: number; consumers: number } {
    const match = (m: StoredMessage) => m.routingKey === routingKey;
    const ready = this.ready.count(match) + this.givenBack.filter(match).length;
    const unacked = this.consumers.reduce((n, c) => n + c.unackedFor(routingKey), 0);
    return { ready, unacked, consumers: this.consumers.length };
  }

  enqueue(message: StoredMessage): void {
    this.ready.push(message);
    if (this.consumers.length > 0) this.schedule();
  }

  /**
   * Settled messages coming back from a consumer: to the head of the queue (in order) or dropped.
   * One given back during a dispatch pass (a consumer that settles synchronously) waits for the
   * next pass: a handler that always requeues cannot hold the event loop in one pass.
   */
  giveBack(messages: StoredMessage[], requeue: boolean): void {
    if (requeue) {
      if (this.dispatching) this.givenBack.push(...messages);
      else for (let i = messages.length - 1; i >= 0; i--) this.ready.unshift(messages[i]);
      this.requeued += messages.length;
    } else {
      this.rejected += messages.length;
    }
    this.schedule();
  }

  addConsumer(consumer: MemoryConsumer): void {
    this.consumers.push(consumer);
    this.schedule();
  }

  removeConsumer(consumer: MemoryConsumer): void {
    const i = this.consumers.indexOf(consumer);
    if (i < 0) return;
    this.consumers.splice(i, 1);
    if (this.next > i) this.next--;
  }

  /** Deleted: its consumers are cancelled and its messages dropped. */
  destroy(): void {
    for (const set of this.boundIn) set.delete(this);
    for (const c of [...this.consumers]) c.cancel();
    this.ready = new Fifo();
  }

  /**
   * One dispatch pass on a later turn of the event loop, never inside publish or ack. Work the
   * pass causes (a requeue, a reply) waits for the turn after, so a consumer that requeues
   * forever cannot starve timers and I/O.
   */
  schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.dispatch();
    });
  }

  /** Hands ready messages to consumers with capacity, round-robin; expired ones are dropped. */
  private dispatch(): void {
    const now = performance.now();
    this.dispatching = true;
    try {
      while (this.ready.size > 0) {
        const consumer = this.pickConsumer();
        if (!consumer) return;
        const message = this.ready.shift()!;
        if (message.expiresAt === undefined || message.expiresAt > now) consumer.deliver(message);
      }
    } finally {
      this.dispatching = false;
      const back = this.givenBack;
      if (back.length > 0) {
        this.givenBack = [];
        for (let i = back.length - 1; i >= 0; i--) this.ready.unshift(back[i]);
      }
    }
  }

  /** The next consumer with capacity after the last one served (round-robin). */
  private pickConsumer(): MemoryConsumer | undefined {
    const n = this.consumers.length;
    for (let k = 0; k < n; k++) {
      const i = (this.next + k) % n;
      if (this.consumers[i].hasCapacity()) {
        this.next = (i + 1) % n;
        return this.consumers[i];
      }
    }
    return undefined;
  }
}

/**
 * One virtual host. The default exchange `''` routes to the queue named by the routing key;
 * topic exchanges route on the exact routing key; fanout exchanges copy to every bound queue.
 * A message nobody is bound for is dropped, as RabbitMQ does.
 */
export class MemoryBroker {
  /** Per exchange, routing key -> bound queues; a fanout exchange keeps every queue under `''`. */
  private readonly exchanges = new Map<string, { readonly fanout: boolean; readonly bindings: Map<string, Set<MemoryQueue>> }>();
  private readonly queues = new Map<string, MemoryQueue>();

  constructor(readonly vhost: string) {}

  /** Declares an exchange; re-declaring an existing one is a no-op (its first type stays). */
  declareExchange(name: string, type: 'topic' | 'fanout' = 'topic'): void {
    if (name !== '' && !this.exchanges.has(name)) this.exchanges.set(name, { fanout: type === 'fanout', bindings: new Map() });
  }

  /** Declares a queue; re-declaring an existing one is a no-op. */
  declareQueue(name: string): void {
    if (!this.queues.has(name)) this.queues.set(name, new MemoryQueue(name));
  }

  hasExchange(name: string): boolean {
    return this.exchanges.has(name);
  }

  /** The queues bound to `exchange` under `routingKey` (every bound queue of a fanout exchange); none for an unknown exchange. */
  boundQueues(exchange: string, routingKey: string): string[] {
    const ex = this.exchanges.get(exchange);
    return [...(ex?.bindings.get(ex.fanout ? '' : routingKey) ?? [])].map((q) => q.name);
  }

  /** The routing keys of `exchange` with at least one queue bound; none for an unknown or fanout exchange. */
  routingKeys(exchange: string): string[] {
    const ex = this.exchanges.get(exchange);
    if (!ex || ex.fanout) return [];
    return [...ex.bindings].filter(([, queues]) => queues.size > 0).map(([key]) => key);
  }

  /** Counters of the messages in `queue` published under `routingKey`, or undefined when the queue does not exist. */
  queueCountsFor(queue: string, routingKey: string): { ready: number; unacked: number; consumers: number } | undefined {
    return this.queues.get(queue)?.countsFor(routingKey);
  }

  hasQueue(name: string): boolean {
    return this.queues.has(name);
  }

  queueNames(): string[] {
    return [...this.queues.keys()];
  }

  /** Deletes a queue with its messages and bindings; its consumers are cancelled. */
  deleteQueue(name: string): void {
    this.queues.get(name)?.destroy();
    this.queues.delete(name);
  }

  /** Binds a declared queue to a declared exchange under `routingKey`. */
  bindQueue(queueName: string, exchangeName: string, routingKey: string): void {
    const queue = this.queue(queueName);
    const exchange = this.exchanges.get(exchangeName);
    if (!exchange) throw new InvalidArgument('exchange', 'the name of a declared exchange', exchangeName);
    const key = exchange.fanout ? '' : routingKey;
    let set = exchange.bindings.get(key);
    if (!set) exchange.bindings.set(key, (set = new Set()));
    set.add(queue);
    queue.boundIn.add(set);
  }

  /**
   * Routes a JSON string body and returns how many queues took a copy (0 = dropped).
   * `expirationMs` is AMQP's per-message TTL: a message still queued after it is dropped.
   * Delivery happens on a later turn of the event loop, never inside this call.
   */
  publish(exchangeName: string, routingKey: string, body: string, options: { expirationMs?: number } = {}): number {
    const expiresAt = options.expirationMs === undefined ? undefined : performance.now() + options.expirationMs;
    if (exchangeName === '') {
      const queue = this.queues.get(routingKey);
      queue?.enqueue({ body, exchange: '', routingKey, expiresAt, deliveries: 0 });
      return queue ? 1 : 0;
    }
    const exchange = this.exchanges.get(exchangeName);
    const queues = exchange?.bindings.get(exchange.fanout ? '' : routingKey);
    if (!queues) return 0;
    // Each queue gets its own record: delivery counts and requeue state are per queue, as on a broker.
    for (const queue of queues) queue.enqueue({ body, exchange: exchangeName, routingKey, expiresAt, deliveries: 0 });
    return queues.size;
  }

  /**
   * Test hook: publishes any string as-is (e.g. a malformed body) to an exchange, `''` for a
   * queue by name. Returns the number of queues it reached.
   */
  publishRaw(exchange: string, routingKey: string, body: string): number {
    return this.publish(exchange, routingKey, body);
  }

  /**
   * Starts a consumer on a declared queue. `prefetch`: most unacknowledged messages it holds,
   * 0 = unlimited; `noAck`: messages count as acknowledged when delivered. The callback MUST NOT
   * throw (a throw is swallowed).
   */
  consume(queueName: string, callback: (delivery: MemoryDelivery) => void, options: { prefetch?: number; noAck?: boolean } = {}): MemoryConsumer {
    const queue = this.queue(queueName);
    const consumer = new MemoryConsumer(queue, callback, options.prefetch ?? 0, options.noAck ?? false);
    queue.addConsumer(consumer);
    return consumer;
  }

  /** Messages ready in a queue (not counting delivered-but-unacked ones); 0 when it does not exist. */
  queueDepth(name: string): number {
    return this.queues.get(name)?.stats().ready ?? 0;
  }

  /** Counters of a queue, or undefined when it does not exist. */
  queueStats(name: string): QueueStats | undefined {
    return this.queues.get(name)?.stats();
  }

  /** Deletes every queue and exchange. */
  reset(): void {
    for (const name of [...this.queues.keys()]) this.deleteQueue(name);
    this.exchanges.clear();
  }

  private queue(name: string): MemoryQueue {
    const queue = this.queues.get(name);
    if (!queue) throw new InvalidArgument('queue', 'the name of a declared queue', name);
    return queue;
  }
}

const brokers = new Map<string, MemoryBroker>();

/**
 * The process-global broker of a virtual host: `memory://` and `memory:///` use the default
 * broker (`''`), `memory:///iso-1` an isolated one. Created on first use.
 */
export function getMemoryBroker(vhost = ''): MemoryBroker {
  let broker = brokers.get(vhost);
  if (!broker) brokers.set(vhost, (broker = new MemoryBroker(vhost)));
  return broker;
}

/** Empties and forgets every broker (tests). Consumers of live transports are cancelled. */
export function resetMemoryBrokers(): void {
  for (const broker of brokers.values()) broker.reset();
  brokers.clear();
}
