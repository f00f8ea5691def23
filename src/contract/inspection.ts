// Pool inspection: what a driver can tell about the notification pools of a topic (consumers,
// backlog) and the RPC topics of an exchange, for the console and tools. Read-only by contract.
// Types only (and one frozen constant), without imports: the console's page bundle shares them.

/** Which notification pools `BaseDriver.inspectPools` looks at. */
export interface PoolQuery {
  /** The notification topic, e.g. `notifications` (its addresses are `<topic>.<priority>`). */
  readonly topic: string;
  /** The exchange. @default the transport's control exchange */
  readonly exchange?: string;
  /** The priorities whose addresses are looked at. @default every oslo priority (PRIORITIES) */
  readonly priorities?: readonly string[];
  /**
   * Named pools to look at even where the broker cannot list them (RabbitMQ, Kafka without
   * ListGroups). A driver that lists pools reports every pool it finds, these included.
   */
  readonly pools?: readonly string[];
}

/** One pool of one notification address, as `BaseDriver.inspectPools` found it. */
export interface PoolView {
  /** The address, `<topic>.<priority>`. */
  readonly address: string;
  /**
   * The pool: for a named pool its name as a listener passes it (`NotificationListenOptions.pool`);
   * for the default pool the name the driver gives the broker object (queue / consumer group).
   */
  readonly pool: string;
  /** True for the pool a listener without a pool name uses. */
  readonly isDefault: boolean;
  /** Consumers attached now; undefined = the driver cannot tell. */
  readonly consumers?: number;
  /**
   * Messages waiting to be delivered (Kafka: or committed; the broker cannot tell them apart);
   * undefined = the driver cannot tell.
   */
  readonly backlog?: number;
  /** Delivered and not acknowledged yet, where the driver can tell (Redis: the group's pending entries). */
  readonly unacked?: number;
  /**
   * True when the numbers are those of a queue that takes more than this address and the driver
   * cannot split them (RabbitMQ with oslo's naming: a pool's queue is named after the pool alone
   * and bound to every address of the pool). Such a queue is reported once per query.
   */
  readonly shared?: boolean;
}

/** What a driver's inspection can tell, so that a page says "cannot know" instead of 0. */
export interface Inspection {
  /** `listRpcTopics` lists the RPC topics the broker has (else it resolves with undefined). */
  readonly listsTopics: boolean;
  /** `inspectPools` finds every pool of an address; false: only the default pool and `PoolQuery.pools`. */
  readonly listsPools: boolean;
  /** `PoolView.consumers` is filled in. */
  readonly consumers: boolean;
  /** `PoolView.backlog` is filled in. */
  readonly backlog: boolean;
}

/** The inspection of a driver that cannot inspect anything (BaseDriver's default). */
export const NO_INSPECTION: Inspection = Object.freeze({ listsTopics: false, listsPools: false, consumers: false, backlog: false });
