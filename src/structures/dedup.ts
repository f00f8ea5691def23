// Duplicate suppression on `_unique_id` over a bounded window (oslo keeps 16; we default larger),
// and the ids of messages still being handled, in one table. Every notification and request goes
// through it, so it is built for speed: an open-addressing table of 32-bit hashes in typed arrays
// (linear probing, deleted entries shifted back instead of leaving tombstones), where a JavaScript
// Map of the same ids touches each id's string (a new one per message, an old one per eviction)
// and its own scattered entries: 4 096 ids and their strings do not fit in a core's cache, and the
// Map cost about twice as much per message. An id's string is read only when its hash matches.
// The table and the window's ring start small and grow with the ids they hold: a process with a
// thousand idle listeners does not hold a thousand full tables (issue 30: 106 KB of heap each).
import { randomInt } from 'node:crypto';

/** An empty slot. */
const EMPTY = 0;
/** Handled (acknowledged): one of the last `size`... */
const IN_WINDOW = 1;
/** ...or handed out and not settled yet (`begin` without `add` or `drop`). */
const IN_FLIGHT = 2;

/** Slots of a new table, at least: a power of two. */
const MIN_SLOTS = 16;

/** Remembers the last `size` ids, and the ids being handled; O(1) check and insert. */
export class DuplicateMessageChecker {
  /** The table's slots (a power of two of them, at least twice the ids held): hash, id and state of each. */
  private hashes = new Int32Array(0);
  private keys: Array<string | undefined> = [];
  private states = new Uint8Array(0);
  /** Occupied slots. */
  private count = 0;
  /**
   * The window's ids in the order they entered it, and their hashes; grown up to `size` entries
   * as ids come, then a ring whose `next` is the oldest.
   */
  private readonly ring: string[] = [];
  private ringHashes = new Int32Array(MIN_SLOTS);
  private next = 0;
  /** Per table, so that ids chosen to collide on one process's table do not collide on another's. */
  private readonly seed = randomInt(0x7fffffff);
  /** The last id hashed and its hash: `begin` and then `add` of one message hash it once. */
  private lastId?: string;
  private lastHash = 0;

  constructor(
    /** How many ids are remembered. @default 4096 */
    readonly size: number = 4096,
  ) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`DuplicateMessageChecker size must be a positive integer, received ${size}`);
    this.resize(MIN_SLOTS);
  }

  /** True when `id` is in the window. */
  has(id: string): boolean {
    const at = this.find(id, this.hash(id));
    return at >= 0 && this.states[at] === IN_WINDOW;
  }

  /** Records an id (one being handled moves into the window); the oldest id falls out of the window when it is full. */
  add(id: string): void {
    const hash = this.hash(id);
    const at = this.find(id, hash);
    if (at >= 0 && this.states[at] === IN_WINDOW) return;
    this.enterWindow(id, hash, at);
  }

  /** Returns true (and records nothing) when `id` is in the window or being handled; otherwise records it. */
  checkAndAdd(id: string): boolean {
    const hash = this.hash(id);
    const at = this.find(id, hash);
    if (at >= 0) return true;
    this.enterWindow(id, hash, at);
    return false;
  }

  /** Marks `id` as being handled; false (and nothing changes) when it is in the window or already being handled. */
  begin(id: string): boolean {
    const hash = this.hash(id);
    const at = this.find(id, hash);
    if (at >= 0) return false;
    this.occupy(~at, id, hash, IN_FLIGHT);
    return true;
  }

  /** `id` is no longer being handled, and was not handled (requeued, or its delivery abandoned): forgotten, so it may come again. */
  drop(id: string): void {
    const at = this.find(id, this.hash(id));
    if (at >= 0 && this.states[at] === IN_FLIGHT) this.vacate(at);
  }

  /**
   * Puts an id that is not in the window into it, evicting the oldest when the window is full.
   * `at` is what `find` gave for it: its slot while it is being handled, else where it would go.
   */
  private enterWindow(id: string, hash: number, at: number): void {
    const ring = this.ring;
    if (ring.length < this.size) {
      // Not full yet: the ring grows (its oldest stays at 0, where `next` points once it is full).
      if (ring.length === this.ringHashes.length) this.growRing();
      this.ringHashes[ring.length] = hash;
      ring.push(id);
    } else {
      const evicted = this.find(ring[this.next], this.ringHashes[this.next]);
      if (evicted >= 0 && this.states[evicted] === IN_WINDOW) {
        this.vacate(evicted);
        // Vacating shifts entries back: look again.
        at = this.find(id, hash);
      }
      ring[this.next] = id;
      this.ringHashes[this.next] = hash;
      this.next = this.next + 1 === this.size ? 0 : this.next + 1;
    }
    if (at >= 0) this.states[at] = IN_WINDOW;
    else this.occupy(~at, id, hash, IN_WINDOW);
  }

  /** Doubles the ring's hashes, up to `size`. */
  private growRing(): void {
    const hashes = new Int32Array(Math.min(this.size, this.ringHashes.length * 2));
    hashes.set(this.ringHashes);
    this.ringHashes = hashes;
  }

  /** FNV-1a over the id's UTF-16 code units, seeded per table. */
  private hash(id: string): number {
    if (id === this.lastId) return this.lastHash;
    let h = this.seed ^ 0x811c9dc5;
    for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
    this.lastId = id;
    this.lastHash = h;
    return h;
  }

  /** The slot holding `id`, else the bitwise complement of the empty slot where it would go. */
  private find(id: string, hash: number): number {
    const mask = this.states.length - 1;
    let at = hash & mask;
    while (this.states[at] !== EMPTY) {
      if (this.hashes[at] === hash && this.keys[at] === id) return at;
      at = (at + 1) & mask;
    }
    return ~at;
  }

  private occupy(at: number, id: string, hash: number, state: number): void {
    this.hashes[at] = hash;
    this.keys[at] = id;
    this.states[at] = state;
    if (++this.count * 2 > this.states.length) this.resize(this.states.length * 2);
  }

  /** Empties slot `at`, shifting back the entries after it that probed past it (no tombstones). */
  private vacate(at: number): void {
    const mask = this.states.length - 1;
    this.count--;
    let hole = at;
    for (let i = (hole + 1) & mask; this.states[i] !== EMPTY; i = (i + 1) & mask) {
      const home = this.hashes[i] & mask;
      // The entry at i may move into the hole when its home slot is not cyclically in (hole, i].
      const stays = hole <= i ? home > hole && home <= i : home > hole || home <= i;
      if (stays) continue;
      this.hashes[hole] = this.hashes[i];
      this.keys[hole] = this.keys[i];
      this.states[hole] = this.states[i];
      hole = i;
    }
    this.states[hole] = EMPTY;
    this.keys[hole] = undefined;
  }

  /** A new table of `slots` slots (a power of two) holding the entries of the old one: doubled whenever it is half full. */
  private resize(slots: number): void {
    const { hashes, keys, states } = this;
    const mask = slots - 1;
    this.hashes = new Int32Array(slots);
    this.keys = new Array<string | undefined>(slots).fill(undefined);
    this.states = new Uint8Array(slots);
    for (let i = 0; i < states.length; i++) {
      if (states[i] === EMPTY) continue;
      let at = hashes[i] & mask;
      while (this.states[at] !== EMPTY) at = (at + 1) & mask;
      this.hashes[at] = hashes[i];
      this.keys[at] = keys[i];
      this.states[at] = states[i];
    }
  }
}
