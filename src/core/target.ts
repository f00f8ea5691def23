// Target: where a message goes (client side) or what a server/endpoint accepts, as in oslo.
import { InvalidArgument, InvalidTarget } from './errors.js';

/** The fields of a Target; every one optional. */
export interface TargetInit {
  /** Exchange; defaults to the transport's control exchange (`openstack`). */
  exchange?: string;
  /** Topic: the queue name shared by all servers of a service. */
  topic?: string;
  /** Server name: calls to `topic.server` reach only that server. */
  server?: string;
  /** Cast to every server of the topic. `call` with fanout is refused. */
  fanout?: boolean;
  /** Endpoint namespace; `undefined` is the default (null) namespace. */
  namespace?: string;
  /** `major.minor` version, requested by a client or implemented by an endpoint. */
  version?: string;
  /** Namespaces an endpoint also accepts besides `namespace`. */
  legacyNamespaces?: readonly string[];
}

const VERSION_RE = /^\d+\.\d+(\.\d+)?$/;

/** An immutable destination/subscription descriptor. `with()` returns a modified copy. */
export class Target {
  /** Exchange; undefined = the transport's control exchange. */
  readonly exchange?: string;
  /** Topic: the queue name shared by all servers of a service. */
  readonly topic?: string;
  /** Server name: calls to `topic.server` reach only that server. */
  readonly server?: string;
  /** Cast to every server of the topic. */
  readonly fanout?: boolean;
  /** Endpoint namespace; undefined is the default (null) namespace. */
  readonly namespace?: string;
  /** `major.minor` version. */
  readonly version?: string;
  /** Namespaces an endpoint also accepts besides `namespace`. */
  readonly legacyNamespaces: readonly string[];

  constructor(init: TargetInit = {}) {
    checkName('exchange', init.exchange);
    checkName('topic', init.topic);
    checkName('server', init.server);
    checkName('namespace', init.namespace);
    if (init.fanout !== undefined && typeof init.fanout !== 'boolean') {
      throw new InvalidArgument('target.fanout', 'a boolean', init.fanout);
    }
    if (init.version !== undefined) checkVersion('target.version', init.version);
    if (init.legacyNamespaces !== undefined && !Array.isArray(init.legacyNamespaces)) {
      throw new InvalidArgument('target.legacyNamespaces', 'an array of strings', init.legacyNamespaces);
    }
    this.exchange = init.exchange;
    this.topic = init.topic;
    this.server = init.server;
    this.fanout = init.fanout;
    this.namespace = init.namespace;
    this.version = init.version;
    this.legacyNamespaces = Object.freeze([...(init.legacyNamespaces ?? [])]);
    Object.freeze(this);
  }

  /** Namespaces an endpoint with this target accepts: its own (possibly undefined) plus legacy ones. */
  get acceptedNamespaces(): ReadonlyArray<string | undefined> {
    return [this.namespace, ...this.legacyNamespaces];
  }

  /** A copy with the given fields replaced. Passing `undefined` for a field clears it. */
  with(overrides: TargetInit): Target {
    const merged: TargetInit = { ...this.toJSON() };
    for (const [k, v] of Object.entries(overrides)) (merged as Record<string, unknown>)[k] = v;
    return new Target(merged);
  }

  /** True when every field is the same. */
  equals(other: Target): boolean {
    return (
      this.exchange === other.exchange &&
      this.topic === other.topic &&
      this.server === other.server &&
      Boolean(this.fanout) === Boolean(other.fanout) &&
      this.namespace === other.namespace &&
      this.version === other.version &&
      this.legacyNamespaces.join('\0') === other.legacyNamespaces.join('\0')
    );
  }

  /** The fields that are set, as a TargetInit. */
  toJSON(): TargetInit {
    const out: TargetInit = {};
    if (this.exchange !== undefined) out.exchange = this.exchange;
    if (this.topic !== undefined) out.topic = this.topic;
    if (this.server !== undefined) out.server = this.server;
    if (this.fanout !== undefined) out.fanout = this.fanout;
    if (this.namespace !== undefined) out.namespace = this.namespace;
    if (this.version !== undefined) out.version = this.version;
    if (this.legacyNamespaces.length) out.legacyNamespaces = [...this.legacyNamespaces];
    return out;
  }

  /** `<Target topic=..., server=...>`, for logs and errors. */
  toString(): string {
    const parts = Object.entries(this.toJSON()).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`);
    return `<Target ${parts.join(', ')}>`;
  }

  /** Accepts a Target or its init object. */
  static from(value: Target | TargetInit): Target {
    if (value instanceof Target) return value;
    if (value === null || typeof value !== 'object') throw new InvalidArgument('target', 'a Target or an object', value);
    return new Target(value);
  }
}

/** A client target: topic required; `call` additionally refuses fanout. */
export function validateSendTarget(target: Target, forCall: boolean): void {
  if (!target.topic) throw new InvalidTarget('A topic is required to send', target);
  if (forCall && target.fanout) throw new InvalidTarget('A call cannot be used with fanout', target);
}

/** An RPC server target needs topic and server. */
export function validateServerTarget(target: Target): void {
  if (!target.topic) throw new InvalidTarget('A server target needs a topic', target);
  if (!target.server) throw new InvalidTarget('A server target needs a server name', target);
}

/** A notification target needs a topic; server and fanout are ignored. */
export function validateNotificationTarget(target: Target): void {
  if (!target.topic) throw new InvalidTarget('A notification target needs a topic', target);
}

export function checkVersion(field: string, version: unknown): asserts version is string {
  if (typeof version !== 'string' || !VERSION_RE.test(version)) {
    throw new InvalidArgument(field, 'a "major.minor" version string', version);
  }
}

/**
 * oslo `_utils.version_is_compatible(imp, version)`: can an implementation of `impl`
 * serve a request for `requested`?
 */
export function versionIsCompatible(impl: string | undefined, requested: string | undefined): boolean {
  if (impl === undefined) return true;
  if (requested === undefined) return false;
  const [iMaj, iMin, iRev = 0] = impl.split('.').map(Number);
  const [rMaj, rMin, rRev = 0] = requested.split('.').map(Number);
  if (iMaj !== rMaj) return false;
  if (rMin > iMin) return false;
  if (rMin === iMin && rRev > iRev) return false;
  return true;
}

function checkName(field: string, value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== 'string' || value.length === 0 || value.length > 255) {
    throw new InvalidArgument(`target.${field}`, 'a non-empty string of at most 255 characters', value);
  }
  if (/[\s\0]/.test(value)) throw new InvalidArgument(`target.${field}`, 'a string without whitespace', value);
}
