// Duplicate suppression on `_unique_id` over a bounded window (oslo keeps 16; we default larger),
// and the ids of messages still being handled, in one table. Every notification and request goes
// through it, so it is built for speed: an open-addressing table of 32-bit hashes in typed arrays
// (linear probing, deleted entries shifted back instead of leaving tombstones), where a JavaScript
// Map of the same ids touches each id's string (a new one per message, an old one per eviction)
// and its own scattered entries: 4 096 ids and their strings do not fit in a core's cache, and the
// Map cost about twice as much per message. An id's string is read only when its hash matches.
// The table and the window's ring start small and grow with the ids they hold: a process with a
// thousand idle listeners does not hold a thousand full tables (issue 30: 106 KB of heap each).
// oslo's ids (`uuid4().hex`: 32 lowercase hex digits; a notification's `message_id`, the same with
// dashes) are held as their 128 bits in typed arrays,
// not as strings: a table holding 4 096 id strings made every young id string outlive two
// scavenges and be copied into old space, and the write barrier remember every slot it was
// stored in; that garbage collection was a tenth of a server's CPU with 16 calls in flight. Any
// other id (another client's, a test's) is held as its string and compared as one.
import { randomInt } from 'node:crypto';
import { codeAt } from '../core/strings.js';

/** An empty slot. */
const EMPTY = 0;
/** Handled (acknowledged): one of the last `size`... */
const IN_WINDOW = 1;
/** ...or handed out and not settled yet (`begin` without `add` or `drop`). */
const IN_FLIGHT = 2;

/** Slots of a new table, at least: a power of two. */
const MIN_SLOTS = 16;

/**
 * The string slot of an id in the dashed UUID form (8-4-4-4-12 lowercase hex digits): its words
 * are its digits, as those of the same digits undashed, which this marker tells apart.
 */
const DASHED = '\u0000uuid';

/** The value of each lowercase hex digit by char code, -1 for any other character. */
const HEX_DIGIT = (() => {
  const t = new Int8Array(128).fill(-1);
  for (let i = 0; i < 10; i++) t[48 + i] = i;
  for (let i = 0; i < 6; i++) t[97 + i] = 10 + i;
  return t;
})();

/**
 * The value of `n` (at most 8) lowercase hex digits of `s` from `at`, unsigned; -1 when one is not.
 * A run of its own per group of digits: one loop per word, no test of where the dashes are per digit.
 */
function hexRun(s: string, at: number, n: number): number {
  let w = 0;
  let bad = 0;
  for (let i = at; i < at + n; i++) {
    const c = codeAt(s, i);
    const d = c < 128 ? HEX_DIGIT[c] : -1;
    bad |= d;
    w = (w << 4) | d;
  }
  return bad < 0 ? -1 : w >>> 0;
}

/** Remembers the last `size` ids, and the ids being handled; O(1) check and insert. */
export class DuplicateMessageChecker {
  /** The table's slots (a power of two of them, at least twice the ids held): hash, id and state of each. */
  private hashes = new Int32Array(0);
  /** The 128 bits of each slot's hex id, 4 words per slot. */
  private words = new Int32Array(0);
  /** Each slot's id when it is not a hex id (undefined for a hex id, DASHED for a dashed one). */
  private strings: Array<string | undefined> = [];
  private states = new Uint8Array(0);
  /** Occupied slots. */
  private count = 0;
  /**
   * The window's ids in the order they entered it (their hashes, words and strings as in the
   * table); grown up to `size` entries as ids come, then a ring whose `next` is the oldest.
   */
  private ringLength = 0;
  private ringHashes = new Int32Array(MIN_SLOTS);
  private ringWords = new Int32Array(MIN_SLOTS * 4);
  private ringStrings: Array<string | undefined> = [];
  private next = 0;
  /** Per table, so that ids chosen to collide on one process's table do not collide on another's. */
  private readonly seed = randomInt(0x7fffffff);
  /** The id looked for: its hash, its words (a hex id) or its string (`key`, any other id). */
  private kHash = 0;
  private k0 = 0;
  private k1 = 0;
  private k2 = 0;
  private k3 = 0;
  private key: string | undefined;
  /** The last id loaded: `begin` and then `add` of one message read it once. */
  private lastId?: string;

  constructor(
    /** How many ids are remembered. @default 4096 */
    readonly size: number = 4096,
  ) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`DuplicateMessageChecker size must be a positive integer, received ${size}`);
    this.resize(MIN_SLOTS);
  }

  /** True when `id` is in the window. */
  has(id: string): boolean {
    this.load(id);
    const at = this.find();
    return at >= 0 && this.states[at] === IN_WINDOW;
  }

  /** Records an id (one being handled moves into the window); the oldest id falls out of the window when it is full. */
  add(id: string): void {
    this.load(id);
    const at = this.find();
    if (at >= 0 && this.states[at] === IN_WINDOW) return;
    this.enterWindow(at);
  }

  /** Returns true (and records nothing) when `id` is in the window or being handled; otherwise records it. */
  checkAndAdd(id: string): boolean {
    this.load(id);
    const at = this.find();
    if (at >= 0) return true;
    this.enterWindow(at);
    return false;
  }

  /** Marks `id` as being handled; false (and nothing changes) when it is in the window or already being handled. */
  begin(id: string): boolean {
    this.load(id);
    const at = this.find();
    if (at >= 0) return false;
    this.occupy(~at, IN_FLIGHT);
    return true;
  }

  /** `id` is no longer being handled, and was not handled (requeued, or its delivery abandoned): forgotten, so it may come again. */
  drop(id: string): void {
    this.load(id);
    const at = this.find();
    if (at >= 0 && this.states[at] === IN_FLIGHT) this.vacate(at);
  }

  /**
   * Puts the loaded id, which is not in the window, into it, evicting the oldest when the window
   * is full. `at` is what `find` gave for it: its slot while it is being handled, else where it would go.
   */
  private enterWindow(at: number): void {
    const { kHash, k0, k1, k2, k3, key } = this;
    let r: number;
    if (this.ringLength < this.size) {
      // Not full yet: the ring grows (its oldest stays at 0, where `next` points once it is full).
      if (this.ringLength === this.ringHashes.length) this.growRing();
      r = this.ringLength++;
    } else {
      r = this.next;
      this.next = r + 1 === this.size ? 0 : r + 1;
      // The oldest id: found by its own key, vacated, then the new id is looked for again (vacating shifts entries back).
      this.loadRing(r);
      const evicted = this.find();
      this.kHash = kHash;
      this.k0 = k0;
      this.k1 = k1;
      this.k2 = k2;
      this.k3 = k3;
      this.key = key;
      if (evicted >= 0 && this.states[evicted] === IN_WINDOW) {
        this.vacate(evicted);
        at = this.find();
      }
    }
    this.ringHashes[r] = kHash;
    this.ringWords[r * 4] = k0;
    this.ringWords[r * 4 + 1] = k1;
    this.ringWords[r * 4 + 2] = k2;
    this.ringWords[r * 4 + 3] = k3;
    this.ringStrings[r] = key;
    if (at >= 0) this.states[at] = IN_WINDOW;
    else this.occupy(~at, IN_WINDOW);
  }

  /** Doubles the ring, up to `size` entries. */
  private growRing(): void {
    const n = Math.min(this.size, this.ringHashes.length * 2);
    const hashes = new Int32Array(n);
    hashes.set(this.ringHashes);
    this.ringHashes = hashes;
    const words = new Int32Array(n * 4);
    words.set(this.ringWords);
    this.ringWords = words;
  }

  /** Makes ring entry `r` the id looked for. */
  private loadRing(r: number): void {
    this.kHash = this.ringHashes[r];
    this.k0 = this.ringWords[r * 4];
    this.k1 = this.ringWords[r * 4 + 1];
    this.k2 = this.ringWords[r * 4 + 2];
    this.k3 = this.ringWords[r * 4 + 3];
    this.key = this.ringStrings[r];
  }

  /**
   * Makes `id` the id looked for. A hex id's words are its digits, its hash mixes them with the
   * table's seed; any other id keeps its string and an FNV-1a hash of it, seeded the same way.
   */
  private load(id: string): void {
    if (id === this.lastId) return;
    this.lastId = id;
    const hex = id.length === 32 ? this.loadHex(id, 0) : id.length === 36 && this.loadHex(id, 1);
    if (hex) {
      this.key = id.length === 32 ? undefined : DASHED;
      let h = Math.imul(this.seed ^ this.k0 ^ id.length, 0x9e3779b1);
      h = Math.imul((h ^ (h >>> 15)) ^ this.k1, 0x85ebca77);
      h = Math.imul((h ^ (h >>> 13)) ^ this.k2, 0xc2b2ae3d);
      h = Math.imul((h ^ (h >>> 16)) ^ this.k3, 0x27d4eb2f);
      this.kHash = h ^ (h >>> 15);
      return;
    }
    let h = this.seed ^ 0x811c9dc5;
    for (let i = 0; i < id.length; i++) h = Math.imul(h ^ codeAt(id, i), 0x01000193);
    this.kHash = h;
    this.key = id;
    this.k0 = this.k1 = this.k2 = this.k3 = 0;
  }

  /**
   * Reads 32 lowercase hex digits into k0..k3, undashed (`dashes` 0) or in the 8-4-4-4-12 form
   * (`dashes` 1); false on any other character.
   */
  private loadHex(id: string, dashes: number): boolean {
    if (dashes === 0) {
      const a = hexRun(id, 0, 8);
      const b = hexRun(id, 8, 8);
      const c = hexRun(id, 16, 8);
      const d = hexRun(id, 24, 8);
      if (a < 0 || b < 0 || c < 0 || d < 0) return false;
      this.k0 = a | 0;
      this.k1 = b | 0;
      this.k2 = c | 0;
      this.k3 = d | 0;
      return true;
    }
    if (codeAt(id, 8) !== 45 || codeAt(id, 13) !== 45 || codeAt(id, 18) !== 45 || codeAt(id, 23) !== 45) return false;
    // The words of the same digits undashed: 8 | 4 and 4 | 4 and 4 | 8.
    const a = hexRun(id, 0, 8);
    const b = hexRun(id, 9, 4);
    const c = hexRun(id, 14, 4);
    const d = hexRun(id, 19, 4);
    const e = hexRun(id, 24, 4);
    const f = hexRun(id, 28, 8);
    if (a < 0 || b < 0 || c < 0 || d < 0 || e < 0 || f < 0) return false;
    this.k0 = a | 0;
    this.k1 = (b << 16) | c;
    this.k2 = (d << 16) | e;
    this.k3 = f | 0;
    return true;
  }

  /** The slot holding the id looked for, else the bitwise complement of the empty slot where it would go. */
  private find(): number {
    const mask = this.states.length - 1;
    const { kHash, key, words } = this;
    let at = kHash & mask;
    while (this.states[at] !== EMPTY) {
      if (this.hashes[at] === kHash && this.strings[at] === key && ((key !== undefined && key !== DASHED) || (words[at * 4] === this.k0 && words[at * 4 + 1] === this.k1 && words[at * 4 + 2] === this.k2 && words[at * 4 + 3] === this.k3))) return at;
      at = (at + 1) & mask;
    }
    return ~at;
  }

  /** Puts the id looked for into empty slot `at`. */
  private occupy(at: number, state: number): void {
    this.hashes[at] = this.kHash;
    this.words[at * 4] = this.k0;
    this.words[at * 4 + 1] = this.k1;
    this.words[at * 4 + 2] = this.k2;
    this.words[at * 4 + 3] = this.k3;
    this.strings[at] = this.key;
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
      this.moveSlot(i, hole);
      hole = i;
    }
    this.states[hole] = EMPTY;
    this.strings[hole] = undefined;
  }

  /** Copies slot `from` (of the same table) into slot `to`. */
  private moveSlot(from: number, to: number): void {
    this.hashes[to] = this.hashes[from];
    this.words.copyWithin(to * 4, from * 4, from * 4 + 4);
    this.strings[to] = this.strings[from];
    this.states[to] = this.states[from];
  }

  /** A new table of `slots` slots (a power of two) holding the entries of the old one: doubled whenever it is half full. */
  private resize(slots: number): void {
    const { hashes, words, strings, states } = this;
    const mask = slots - 1;
    this.hashes = new Int32Array(slots);
    this.words = new Int32Array(slots * 4);
    this.strings = new Array<string | undefined>(slots).fill(undefined);
    this.states = new Uint8Array(slots);
    for (let i = 0; i < states.length; i++) {
      if (states[i] === EMPTY) continue;
      let at = hashes[i] & mask;
      while (this.states[at] !== EMPTY) at = (at + 1) & mask;
      this.hashes[at] = hashes[i];
      this.words.set(words.subarray(i * 4, i * 4 + 4), at * 4);
      this.strings[at] = strings[i];
      this.states[at] = states[i];
    }
  }
}
