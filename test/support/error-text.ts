// Where a leaked secret or a reason would show on an error: every rendering along its cause chain.
import { inspect } from 'node:util';

/**
 * `util.inspect` at any depth, JSON, and along the cause chain every message, String(), stack and
 * own property (ioredis puts the failed command, `AUTH user password`, on its errors).
 */
export function errorText(e: unknown): string {
  const parts: string[] = [inspect(e, { depth: Infinity }), JSON.stringify(e) ?? ''];
  for (let cur: unknown = e, depth = 0; cur instanceof Error && depth < 10; cur = cur.cause, depth++) {
    parts.push(String(cur), cur.message, cur.stack ?? '', inspect({ ...cur }, { depth: Infinity }));
    for (const key of Reflect.ownKeys(cur)) parts.push(inspect((cur as unknown as Record<PropertyKey, unknown>)[key], { depth: Infinity }));
  }
  return parts.join('\n');
}

/** Log records as text, each Error in them rendered by `errorText`. */
export function recordsText(records: unknown): string {
  return JSON.stringify(records, (_k, v: unknown) => (v instanceof Error ? errorText(v) : v));
}

/** `e` and its causes, outermost first. */
export function causes(e: unknown): unknown[] {
  const out: unknown[] = [];
  for (let cur: unknown = e, depth = 0; cur !== undefined && depth < 10; cur = (cur as { cause?: unknown }).cause, depth++) out.push(cur);
  return out;
}
