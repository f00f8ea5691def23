// Hostile input for every driver (issue 28 "Proof"): one table of raw bodies thrown at an RPC
// server and a notification listener through the driver's own raw injector, and the checks every
// case must pass: the target keeps serving, nothing else is touched, a rejection is logged once.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createMemoryLogger,
  getNotificationListener,
  getNotificationTransport,
  getRpcClient,
  getRpcServer,
  getRpcTransport,
  NotificationResult,
  Notifier,
  Target,
  type MemoryLogger,
  type Transport,
} from '../../src/index.js';
import { uniqueName, waitFor } from '../../src/testing/wait.js';

/** What one case is expected to do at its target. */
export interface AbuseOutcome {
  /** The handler runs for it (legal but odd input, e.g. an object as a context value). */
  handled: boolean;
  /** Warnings (or errors) it adds to the target's log: 1 for a rejection or a dropped key, else 0. */
  warns: 0 | 1;
}

/** One hostile message: where it goes and what it must do there. */
export interface AbuseCase extends AbuseOutcome {
  name: string;
  to: 'rpc' | 'notification';
  /** Publishes it with the subject's raw client to `address` (the RPC topic or `<topic>.info`). */
  send(subject: AbuseSubject, address: string): Promise<void>;
}

/** A driver under abuse: its URL and its raw client, as the conformance subjects give them. */
export interface AbuseSubject {
  name: string;
  /** A transport URL (query options allowed); `max_message_bytes` is appended. */
  url: () => string;
  /** Publishes `body` as-is to `routingKey` on exchange `openstack` (the conformance suite's publishRaw). */
  publishRaw(routingKey: string, body: string): Promise<void>;
  /** Cases of forged broker headers this driver reads. */
  forged?: AbuseCase[];
  /** Whether a reply address a call named was left alone on the broker (e.g. no Redis key written). */
  untouched?: (replyAddress: string) => Promise<boolean>;
  before?: () => Promise<void>;
  after?: () => Promise<void>;
  /** Time limit of the whole run. @default 60 000 */
  timeoutMs?: number;
}

/** The start of every queue, topic and key name of this run (for sweeping what it leaves). */
export const ABUSE_RUN = `abuse-${randomUUID().slice(0, 8)}`;

/** Bodies over this are oversized: small, so the huge case is quick on every broker. */
export const ABUSE_MAX_BYTES = 256 * 1024;
const MARKER = 'ABUSE-MARKER-must-not-be-logged';
const hex = () => randomUUID().replaceAll('-', '');
const envelope = (inner: unknown) => JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': typeof inner === 'string' ? inner : JSON.stringify(inner) });
const REJECTED: AbuseOutcome = { handled: false, warns: 1 };
const HANDLED: AbuseOutcome = { handled: true, warns: 0 };
const DROPPED_KEY: AbuseOutcome = { handled: true, warns: 1 };

/** The inner JSON of a cast the server's `echo` would run, with `extra` keys over it. */
const rpcInner = (extra: Record<string, unknown>) => JSON.stringify({ method: 'echo', args: { m: MARKER }, namespace: null, version: '1.0', _unique_id: hex(), ...extra });
/** The inner JSON of a notification the listener's `info` would handle, with `extra` keys over it (`payload: undefined` leaves it out). */
const notificationInner = (extra: Record<string, unknown>) =>
  JSON.stringify({ message_id: randomUUID(), publisher_id: 'abuse', event_type: 'abuse.ev', priority: 'INFO', payload: { m: MARKER }, timestamp: '2026-01-01 00:00:00.000000', _unique_id: hex(), ...extra });
const rpcBody = (extra: Record<string, unknown>) => envelope(rpcInner(extra));
const notificationBody = (extra: Record<string, unknown>) => envelope(notificationInner(extra));

/** A case whose body is published as it is. */
export function rawCase(to: AbuseCase['to'], name: string, body: () => string, outcome: AbuseOutcome): AbuseCase {
  return { name, to, ...outcome, send: (subject, address) => subject.publishRaw(address, body()) };
}

/** Bodies broken below the envelope's fields: bytes, syntax, size, depth. */
function brokenBodies(to: AbuseCase['to']): AbuseCase[] {
  const valid = to === 'rpc' ? rpcBody({}) : notificationBody({});
  const deep = '['.repeat(100_000);
  return [
    rawCase(to, 'random bytes', () => randomBytes(512).toString('latin1'), REJECTED),
    rawCase(to, 'empty body', () => '', REJECTED),
    rawCase(to, 'truncated JSON', () => valid.slice(0, valid.length - 7), REJECTED),
    rawCase(to, 'truncated inner JSON', () => envelope(JSON.parse(valid)['oslo.message'].slice(0, 30)), REJECTED),
    rawCase(to, 'over max_message_bytes', () => envelope({ ...JSON.parse(JSON.parse(valid)['oslo.message']), _unique_id: hex(), pad: 'x'.repeat(ABUSE_MAX_BYTES) }), REJECTED),
    rawCase(to, '100k nested [ as the body', () => deep, REJECTED),
    rawCase(to, '100k nested [ as oslo.message', () => envelope(deep), REJECTED),
    rawCase(to, '100k nested arrays closed', () => `${deep}${']'.repeat(100_000)}`, REJECTED),
    rawCase(to, 'oslo.message a number', () => JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': 42 }), REJECTED),
    rawCase(to, 'oslo.message an object', () => JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': { method: 'echo', args: {} } }), REJECTED),
    rawCase(to, 'oslo.message an array', () => JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': ['echo'] }), REJECTED),
    rawCase(to, 'oslo.version a number', () => JSON.stringify({ 'oslo.version': 2.0, 'oslo.message': JSON.parse(valid)['oslo.message'] }), REJECTED),
    rawCase(to, 'oslo.version an object', () => JSON.stringify({ 'oslo.version': { major: 2 }, 'oslo.message': JSON.parse(valid)['oslo.message'] }), REJECTED),
    rawCase(to, 'a JSON array', () => JSON.stringify([MARKER]), REJECTED),
    rawCase(to, 'a JSON string', () => JSON.stringify(MARKER), REJECTED),
  ];
}

/** Context values of any JSON type are legal; keys that reach a prototype are dropped and logged. */
function contextCases(to: AbuseCase['to']): AbuseCase[] {
  const body = to === 'rpc' ? rpcBody : notificationBody;
  const inner = to === 'rpc' ? rpcInner : notificationInner;
  return [
    rawCase(to, '_context_* values as object, array, number', () => body({ _context_user: { id: { nested: [1] } }, _context_roles: ['a', 'b'], _context_tenant: 5 }), HANDLED),
    ...['__proto__', 'constructor', 'prototype'].map((key) => rawCase(to, `_context_${key} with is_admin`, () => body({ [`_context_${key}`]: { is_admin: true } }), DROPPED_KEY)),
    rawCase(to, 'a JSON __proto__ member', () => envelope(inner({}).replace('"_unique_id"', '"__proto__":{"is_admin":true},"_unique_id"')), HANDLED),
  ];
}

/** Wrong types in every field of an RPC request. */
function rpcFieldCases(): AbuseCase[] {
  const wrong: Array<[string, unknown]> = [
    ['method', ['echo']],
    ['method', 5],
    ['method', ''],
    ['method', null],
    ['args', 'a string'],
    ['args', [1, 2]],
    ['args', 7],
    ['version', { major: 1 }],
    ['version', 1.0],
    ['namespace', 5],
    ['namespace', ['ns']],
    ['_msg_id', { id: 1 }],
    ['_msg_id', 12],
    ['_reply_q', 5],
    ['_reply_q', ['reply_x']],
    ['_unique_id', { id: 1 }],
    ['_timeout', 'soon'],
    ['_timeout', { s: 1 }],
  ];
  const cases = wrong.map(([field, value]) => rawCase('rpc', `${field} as ${JSON.stringify(value)}`, () => rpcBody({ [field]: value, ...(field === '_reply_q' ? { _msg_id: hex() } : {}) }), REJECTED));
  // Prototype names as methods: no such method, refused by the dispatcher (logged once), never run.
  for (const method of ['constructor', '__proto__', 'hasOwnProperty', 'toString']) cases.push(rawCase('rpc', `method ${method}`, () => rpcBody({ method }), REJECTED));
  return cases;
}

/** Wrong types in every field of a notification. */
function notificationFieldCases(): AbuseCase[] {
  const wrong: Array<[string, unknown]> = [
    ['event_type', 5],
    ['event_type', ['a']],
    ['priority', 1],
    ['priority', { p: 'INFO' }],
    ['priority', null],
    ['priority', 'BOGUS'],
    ['publisher_id', 5],
    ['publisher_id', { id: 'p' }],
    ['message_id', { id: 1 }],
    ['timestamp', 12],
    ['_unique_id', ['u']],
  ];
  const cases = wrong.map(([field, value]) => rawCase('notification', `${field} as ${JSON.stringify(value)}`, () => notificationBody({ [field]: value }), REJECTED));
  cases.push(rawCase('notification', 'payload missing', () => notificationBody({ payload: undefined }), REJECTED));
  // oslo puts no type on a payload: any JSON value is handed to the handler.
  for (const payload of ['a string', 42, [1, 2], null]) cases.push(rawCase('notification', `payload ${JSON.stringify(payload)}`, () => notificationBody({ payload }), HANDLED));
  return cases;
}

/** Every case of the shared table (the subject's forged-header cases come on top). */
export function abuseCases(): AbuseCase[] {
  return [...brokenBodies('rpc'), ...contextCases('rpc'), ...rpcFieldCases(), ...brokenBodies('notification'), ...contextCases('notification'), ...notificationFieldCases()];
}

/** A call in oslo's 2.0 envelope whose reply goes to `replyQueue`. */
const forgedReplyCall = (replyQueue: string) => rpcBody({ _msg_id: hex(), _reply_q: replyQueue, _timeout: null });

const problems = (logger: MemoryLogger) => logger.records.filter((r) => r.level === 'warn' || r.level === 'error');
const describeLog = (logger: MemoryLogger) => JSON.stringify(problems(logger).map((r) => r.msg));

/** Runs every case against one RPC server and one notification listener of `subject`. */
export function runAbuseSuite(subject: AbuseSubject): void {
  describe(`abuse: ${subject.name}`, () => {
    const transports: Transport[] = [];
    const stops: Array<() => Promise<void>> = [];
    beforeAll(async () => {
      await subject.before?.();
    }, 60_000);
    afterAll(async () => {
      for (const stop of stops.reverse()) await stop().catch(() => undefined);
      for (const t of transports) await t.cleanup();
      await subject.after?.();
    }, 60_000);

    it('every hostile message is refused or handled as it should; the server and the listener keep serving and nothing else is touched', { timeout: subject.timeoutMs ?? 60_000 }, async () => {
      const url = `${subject.url()}${subject.url().includes('?') ? '&' : '?'}max_message_bytes=${ABUSE_MAX_BYTES}`;
      const open = async (kind: 'rpc' | 'notification', logger?: MemoryLogger) => {
        const t = kind === 'rpc' ? await getRpcTransport(url, logger ? { logger } : {}) : await getNotificationTransport(url, logger ? { logger } : {});
        transports.push(t);
        return t;
      };
      const serverLog = createMemoryLogger();
      const listenerLog = createMemoryLogger();
      const victimLog = createMemoryLogger();
      const [serverT, listenerT, victimT, clientT] = await Promise.all([open('rpc', serverLog), open('notification', listenerLog), open('rpc', victimLog), open('rpc')]);
      const topic = uniqueName(`${ABUSE_RUN}-rpc`);
      const victim = uniqueName(`${ABUSE_RUN}-victim`);
      const ntopic = uniqueName(`${ABUSE_RUN}-n`);
      const calls: unknown[] = [];
      const victimCalls: unknown[] = [];
      const polluted: unknown[] = [];
      const handled: unknown[] = [];
      const clean = (ctx: object) => Object.getPrototypeOf(ctx) === Object.prototype && !('is_admin' in ctx) && !Object.hasOwn(ctx, 'constructor') && !Object.hasOwn(ctx, 'prototype');
      const echo = (log: unknown[]) => ({
        echo(ctx: object, args: unknown) {
          if (!clean(ctx)) polluted.push(ctx);
          log.push(args);
          return args;
        },
      });
      const server = getRpcServer(serverT, new Target({ topic, server: 's1' }), [echo(calls)], { logger: serverLog });
      const victimServer = getRpcServer(victimT, new Target({ topic: victim, server: 'v1' }), [echo(victimCalls)], { logger: victimLog });
      const listener = getNotificationListener(
        listenerT,
        [new Target({ topic: ntopic })],
        [
          {
            info(ctx: object, _publisherId: unknown, _eventType: string, payload: unknown) {
              if (!clean(ctx)) polluted.push(ctx);
              handled.push(payload);
              return NotificationResult.HANDLED;
            },
          },
        ],
        { logger: listenerLog },
      );
      for (const s of [server, victimServer, listener]) {
        stops.push(async () => {
          await s.stop();
          await s.wait();
        });
      }
      await Promise.all([server.start(), victimServer.start(), listener.start()]);
      const client = getRpcClient(clientT, { topic }, { timeout: 20_000 });
      const notifier = new Notifier(clientT, { publisherId: 'abuse', driver: 'messagingv2', topics: [ntopic] });

      const cases = [...abuseCases(), ...(subject.forged ?? [])];
      // Forged reply addresses: other services' queues, topics and keys, and shapes of reply addresses that are not.
      const foreign = [victim, `${victim}.v1`, `${victim}_fanout`, `${ntopic}.info`, `reply_${'A'.repeat(32)}`, `reply_${'0'.repeat(31)}`, 'x'.repeat(300)];
      for (const address of foreign) cases.push(rawCase('rpc', `_reply_q ${address.slice(0, 40)}`, () => forgedReplyCall(address), REJECTED));

      let good = 0;
      const expected = { rpc: { warns: 0, calls: 0 }, notification: { warns: 0, handled: 0 } };
      for (const c of cases) {
        const where = `${subject.name}, ${c.to}, case "${c.name}"`;
        if (c.to === 'rpc') {
          await c.send(subject, topic);
          expected.rpc.warns += c.warns;
          // Right after it, a normal call is answered.
          await expect(client.call({}, 'echo', { good: ++good }), where).resolves.toEqual({ good });
          expected.rpc.calls += 1 + (c.handled ? 1 : 0);
          await waitFor(() => problems(serverLog).length >= expected.rpc.warns && calls.length >= expected.rpc.calls, { timeoutMs: 15_000, message: `${where}: logged ${describeLog(serverLog)}` });
          expect(problems(serverLog).length, `${where}: logged ${describeLog(serverLog)}`).toBe(expected.rpc.warns);
          expect(calls.length, `${where}: calls run`).toBe(expected.rpc.calls);
        } else {
          await c.send(subject, `${ntopic}.info`);
          expected.notification.warns += c.warns;
          await notifier.info({}, 'good', { good: ++good });
          expected.notification.handled += 1 + (c.handled ? 1 : 0);
          await waitFor(() => problems(listenerLog).length >= expected.notification.warns && handled.length >= expected.notification.handled, { timeoutMs: 15_000, message: `${where}: logged ${describeLog(listenerLog)}` });
          expect(problems(listenerLog).length, `${where}: logged ${describeLog(listenerLog)}`).toBe(expected.notification.warns);
          expect(handled.length, `${where}: notifications handled`).toBe(expected.notification.handled);
        }
      }
      // A last round trip on each: nothing arrives late (a second log line, a requeued copy).
      await expect(client.call({}, 'echo', { last: 1 })).resolves.toEqual({ last: 1 });
      await notifier.info({}, 'good', { last: 1 });
      await waitFor(() => handled.length === expected.notification.handled + 1, { timeoutMs: 15_000, message: 'the last notification' });
      expect(problems(serverLog)).toHaveLength(expected.rpc.warns);
      expect(problems(listenerLog)).toHaveLength(expected.notification.warns);
      expect(polluted).toEqual([]);
      // Nothing reached the other service, nor the addresses the forged calls named.
      expect(victimCalls).toEqual([]);
      expect(problems(victimLog)).toEqual([]);
      for (const address of foreign) expect(await (subject.untouched?.(address) ?? true), `reply address ${address} untouched`).toBe(true);
      const logged = JSON.stringify([serverLog.records, listenerLog.records]);
      expect(logged).not.toContain(MARKER);
    });
  });
}
