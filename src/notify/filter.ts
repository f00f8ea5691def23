// NotificationFilter: an endpoint's `filterRule`, screening notifications before its methods
// run (oslo notify/filter.py). Regexes follow Python `re.match`: anchored at the start only.
import { InvalidArgument } from '../core/errors.js';
import { isPlainObject } from '../core/json-check.js';

/** A pattern: a regex source string (as in oslo) or a RegExp. Either is anchored at the start only. */
export type FilterPattern = string | RegExp;

/** Field name to pattern; each named field MUST be present and be a string matching the pattern. */
export type FilterPatternMap = Readonly<Record<string, FilterPattern>>;

/** The patterns of a NotificationFilter; every given one must match. */
export interface NotificationFilterInit {
  /** Patterns on context keys, e.g. `{ project_id: '^abc$' }`. */
  context?: FilterPatternMap;
  /** Pattern on the publisher id, e.g. `'^compute'`. */
  publisherId?: FilterPattern;
  /** Pattern on the event type, e.g. `'compute\\.instance\\..*'`. */
  eventType?: FilterPattern;
  /** Patterns on metadata keys (`message_id`, `timestamp`). */
  metadata?: FilterPatternMap;
  /** Patterns on top-level payload keys. */
  payload?: FilterPatternMap;
}

type Compiled = RegExp | undefined;
type CompiledMap = ReadonlyMap<string, RegExp>;

/**
 * Screens notifications for one endpoint. A notification passes when every given pattern
 * matches: a single pattern needs a string value that matches at its start; a map needs each
 * key present in the (object) value with a string matching its pattern. A notification an
 * endpoint filters out counts as handled for that endpoint.
 *
 * @example
 * const endpoint = {
 *   filterRule: new NotificationFilter({ publisherId: '^compute', payload: { state: '^active$' } }),
 *   info(ctx, publisherId, eventType, payload) { ... },
 * };
 */
export class NotificationFilter {
  private readonly publisherId: Compiled;
  private readonly eventType: Compiled;
  private readonly context: CompiledMap;
  private readonly metadata: CompiledMap;
  private readonly payload: CompiledMap;

  constructor(init: NotificationFilterInit = {}) {
    if (init === null || typeof init !== 'object' || Array.isArray(init)) throw new InvalidArgument('filter', 'an object of patterns', init);
    this.publisherId = compile('filter.publisherId', init.publisherId);
    this.eventType = compile('filter.eventType', init.eventType);
    this.context = compileMap('filter.context', init.context);
    this.metadata = compileMap('filter.metadata', init.metadata);
    this.payload = compileMap('filter.payload', init.payload);
  }

  /** True when the notification passes every pattern of this filter. */
  match(ctx: unknown, publisherId: unknown, eventType: unknown, metadata: unknown, payload: unknown): boolean {
    return (
      matchOne(publisherId, this.publisherId) &&
      matchOne(eventType, this.eventType) &&
      matchMap(ctx, this.context) &&
      matchMap(metadata, this.metadata) &&
      matchMap(payload, this.payload)
    );
  }
}

function matchOne(value: unknown, regex: Compiled): boolean {
  if (regex === undefined) return true;
  if (typeof value !== 'string') return false;
  // Sticky regexes keep state in lastIndex; reset so every test starts at 0 (re.match).
  regex.lastIndex = 0;
  return regex.test(value);
}

function matchMap(value: unknown, regexes: CompiledMap): boolean {
  if (regexes.size === 0) return true;
  if (value === null || typeof value !== 'object') return false;
  const record = value as Record<string, unknown>;
  for (const [key, regex] of regexes) {
    if (!(key in record)) return false;
    if (!matchOne(record[key], regex)) return false;
  }
  return true;
}

function compile(field: string, pattern: FilterPattern | undefined): Compiled {
  if (pattern === undefined || pattern === null) return undefined;
  if (pattern instanceof RegExp) {
    // 'y' anchors at lastIndex (0) like re.match without anchoring the end; 'g' would clash.
    return new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, '') + 'y');
  }
  if (typeof pattern !== 'string') throw new InvalidArgument(field, 'a regex string or a RegExp', pattern);
  try {
    return new RegExp(pattern, 'y');
  } catch (err) {
    throw new InvalidArgument(field, 'a valid regular expression', pattern, { cause: err });
  }
}

function compileMap(field: string, patterns: FilterPatternMap | undefined): CompiledMap {
  const out = new Map<string, RegExp>();
  if (patterns === undefined || patterns === null) return out;
  if (!isPlainObject(patterns)) throw new InvalidArgument(field, 'an object mapping keys to patterns', patterns);
  for (const [key, pattern] of Object.entries(patterns)) {
    const regex = compile(`${field}.${key}`, pattern);
    if (regex) out.set(key, regex);
  }
  return out;
}
