// Every notification endpoint must handle some priority: checked by the listener types where
// the compiler can see it, and at run time with a suggestion for a near-miss name (`infoo`).
import { InvalidArgument } from '../core/errors.js';
import { PRIORITIES, isPriority, type Priority } from '../contract/types.js';

/** True when `V` may be a function (`unknown` and `any` included: the types cannot tell). */
type MaybeFunction<V> = unknown extends V ? true : [Extract<V, (...args: any[]) => unknown>] extends [never] ? false : true;

/**
 * True unless `T` certainly has no priority method. `object` and index signatures (endpoints
 * built at run time) pass: only the run-time check can judge those.
 */
/** `true` when `T` has a priority method (or is too loose a type to tell, e.g. `object`). */
export type HasPriorityMethod<T> = object extends T ? true : true extends { [P in Priority]: P extends keyof T ? MaybeFunction<T[P]> : false }[Priority] ? true : false;

/** What a listener endpoint without a priority method is told it lacks: the key reads as the compiler's error. */
export interface MissingPriorityMethod {
  /** Never present: the key only names what the endpoint lacks in the compiler's message. */
  readonly 'a notification endpoint needs a method named audit, debug, info, warn, error, critical or sample': true;
}

/**
 * The compile-time check of a listener's endpoints: intersected with the endpoints tuple, it
 * turns each endpoint that certainly has no priority method (`[{ infoo() {} }]`) into an error
 * naming the methods it could have, while class instances, helper methods, extra state and
 * `filterRule` stay fine. The run-time check covers what the types cannot see.
 */
export type CheckedEndpoints<E extends readonly unknown[]> = { [I in keyof E]: HasPriorityMethod<E[I]> extends true ? unknown : MissingPriorityMethod };

/** Names people reach for that mean a priority (oslo's Notifier has `warning()` for `warn`). */
const ALIASES: Readonly<Record<string, Priority>> = { warning: 'warn', fatal: 'critical', crit: 'critical', err: 'error', trace: 'debug', notice: 'info' };

/**
 * Throws InvalidArgument naming `endpoints[index]` when `endpoint` has no method named after a
 * priority; the message lists the priorities and suggests one for a near-miss method name.
 */
export function requirePriorityMethod(endpoint: object, index: number): void {
  const record = endpoint as Record<string, unknown>;
  if (PRIORITIES.some((p) => typeof record[p] === 'function')) return;
  const notFunction = PRIORITIES.find((p) => record[p] !== undefined && record[p] !== null);
  const methods = methodNames(endpoint);
  const nearMisses = methods.flatMap((name) => {
    const priority = suggestPriority(name);
    return priority ? [`"${priority}" instead of "${name}"`] : [];
  });
  let hint: string;
  if (notFunction) hint = `its "${notFunction}" is not a function but a ${typeof record[notFunction]}`;
  else if (nearMisses.length > 0) hint = `did you mean ${nearMisses.slice(0, 3).join(', ')}?`;
  else hint = methods.length > 0 ? `it has only ${methods.slice(0, 8).join(', ')}` : 'it has no methods';
  throw new InvalidArgument(`endpoints[${index}]`, `a method named ${PRIORITIES.join(', ')} (${hint})`, endpoint);
}

/** The closest priority to a method name: another case, an alias, a priority inside it (`onError`), or a typo or two. */
function suggestPriority(name: string): Priority | undefined {
  const lower = name.toLowerCase();
  if (isPriority(lower)) return lower;
  if (ALIASES[lower]) return ALIASES[lower];
  const inside = PRIORITIES.find((p) => lower.includes(p));
  if (inside) return inside;
  let best: { priority: Priority; distance: number } | undefined;
  for (const priority of PRIORITIES) {
    const distance = editDistance(lower, priority);
    // One typo in a short name, two in a longer one: more would suggest `info` for `init`-like names anyway.
    if (distance <= (priority.length <= 4 ? 1 : 2) && (!best || distance < best.distance)) best = { priority, distance };
  }
  return best?.priority;
}

/** Levenshtein distance; names are short, so the plain two-row version is enough. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length];
}

/** Own and inherited method names (class methods included), without calling getters. */
function methodNames(obj: object): string[] {
  const names = new Set<string>();
  for (let o: object | null = obj; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const key of Object.getOwnPropertyNames(o)) {
      if (key !== 'constructor' && typeof Object.getOwnPropertyDescriptor(o, key)?.value === 'function') names.add(key);
    }
  }
  return [...names];
}
